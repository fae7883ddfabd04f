// Written by `fusioncheck gpu repro` from flashinfer-moe-finalize-remote-read-2ranks.json: the case, as fusioncheck ran it.
#pragma once
#define FC_FAMILY_MOE 1
#define FC_BF16 1
#define FC_FAMILY_FUSION 0
#define FC_FAMILY_LEGACY 0
namespace repro {
inline constexpr const char* kFinding = "fi-moe-finalize-remote-read";
inline constexpr const char* kFindingChecks[] = {"hang"};
inline constexpr const char* kFindingMessage = "";
inline constexpr const char* kFamily = "flashinfer-moe";
inline constexpr const char* kExportedHeaderSha256 = "518e42e290a7192c5a6338b5825c19f0e37687bac0dde3ec00ce2af4518a11da";
inline constexpr int kRanks = 2;
inline constexpr int kHidden = 2048;
inline constexpr int kCalls = 2;
inline constexpr int kRuns = 20;
inline constexpr int kMaxTokens = 25;
inline constexpr int kMinComputeMajor = 9;
inline constexpr bool kBackToBack = true;
inline constexpr float kEps = 1e-6f;
inline constexpr float kWeightBias = 1.0f;
inline constexpr bool kFp32Acc = false;
inline constexpr unsigned long long kCommSize = 4194304;
inline constexpr unsigned long long kTwoshotBytes = 256;
inline constexpr CallCase kCallCases[kCalls] = {
    {/*tokens*/ 25, /*fi_pattern*/ 1, /*twoshot*/ false, /*pdl*/ true, /*trigger_at_end*/ true, /*norm_out*/ true, /*pattern_is_allreduce*/ false, /*check_allreduce_out*/ false, /*pdl_producer*/ false, /*producer_delay_ns*/ 0, /*pdl_consumer*/ false, /*quantises*/ false, /*sf_layout*/ 0, /*group_size*/ 0, /*tma_aligned_mn*/ 0, /*scale_bytes*/ 0, /*scale_factor*/ 42.0f, /*moe_finalize*/ true, /*moe_experts*/ 8, /*moe_routed_scaling*/ 2.0f, /*moe_allreduce_out*/ false, /*moe_part_bytes*/ {868352, 0, 102400, 800, 400}},
    {/*tokens*/ 8, /*fi_pattern*/ 1, /*twoshot*/ false, /*pdl*/ false, /*trigger_at_end*/ true, /*norm_out*/ true, /*pattern_is_allreduce*/ false, /*check_allreduce_out*/ false, /*pdl_producer*/ false, /*producer_delay_ns*/ 0, /*pdl_consumer*/ false, /*quantises*/ false, /*sf_layout*/ 0, /*group_size*/ 0, /*tma_aligned_mn*/ 0, /*scale_bytes*/ 0, /*scale_factor*/ 42.0f, /*moe_finalize*/ true, /*moe_experts*/ 2, /*moe_routed_scaling*/ 1.0f, /*moe_allreduce_out*/ false, /*moe_part_bytes*/ {131072, 0, 32768, 64, 32}},
};
// [run][call][rank]
inline constexpr Delay kDelays[kRuns][kCalls][kRanks] = {
    {{{16007, true}, {15134, true}}, {{1573, true}, {0, false}}},
    {{{0, false}, {0, false}}, {{0, false}, {0, false}}},
    {{{15998, false}, {0, false}}, {{8742, true}, {0, false}}},
    {{{9583, true}, {0, false}}, {{4825, false}, {0, false}}},
    {{{7179, false}, {2725, false}}, {{9152, true}, {14495, false}}},
    {{{0, false}, {11998, true}}, {{7212, false}, {0, false}}},
    {{{1546, true}, {5337, false}}, {{0, false}, {14487, true}}},
    {{{4424, false}, {8008, false}}, {{6266, true}, {12792, true}}},
    {{{11510, false}, {0, false}}, {{12325, true}, {0, false}}},
    {{{834, false}, {3822, false}}, {{0, false}, {0, false}}},
    {{{11760, false}, {0, false}}, {{0, false}, {0, false}}},
    {{{3210, true}, {13748, false}}, {{0, false}, {0, false}}},
    {{{4463, true}, {0, false}}, {{203, false}, {0, false}}},
    {{{0, false}, {464, true}}, {{6017, true}, {8685, true}}},
    {{{15402, false}, {18985, true}}, {{890, false}, {13259, false}}},
    {{{0, false}, {0, false}}, {{6551, true}, {4180, true}}},
    {{{11185, true}, {9925, false}}, {{2817, false}, {9097, false}}},
    {{{0, false}, {16050, false}}, {{0, false}, {0, false}}},
    {{{16941, true}, {15089, true}}, {{15230, false}, {0, false}}},
    {{{2706, true}, {0, false}}, {{0, false}, {11595, true}}}
};
}  // namespace repro
