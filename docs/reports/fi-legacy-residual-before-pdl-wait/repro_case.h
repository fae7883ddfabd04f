// Written by `fusioncheck gpu repro` from legacy_residual_before_wait.json: the case, as fusioncheck ran it.
#pragma once
#define FC_FAMILY_LEGACY 1
#define FC_BF16 1
#define FC_SYNC_DELAY 0
#define FC_FAMILY_FUSION 0
#define FC_FAMILY_MOE 0
namespace repro {
inline constexpr const char* kFinding = "fi-legacy-residual-before-pdl-wait";
inline constexpr const char* kFindingChecks[] = {"reference", "agreement"};
inline constexpr const char* kFindingMessage = "";
inline constexpr const char* kFamily = "flashinfer-legacy";
inline constexpr const char* kExportedHeaderSha256 = "1aba1b25a72c1f6073b3d08fb6e23b355bb4b42250e2b4c1c55a3c225896735d";
inline constexpr int kRanks = 2;
inline constexpr int kHidden = 768;
inline constexpr int kCalls = 2;
inline constexpr int kRuns = 20;
inline constexpr int kMaxTokens = 1;
inline constexpr int kMinComputeMajor = 9;
inline constexpr bool kBackToBack = true;
inline constexpr float kEps = 1e-6f;
inline constexpr float kWeightBias = 0.0f;
inline constexpr bool kFp32Acc = false;
inline constexpr unsigned long long kCommSize = 4194304;
inline constexpr unsigned long long kTwoshotBytes = 256;
inline constexpr CallCase kCallCases[kCalls] = {
    {/*tokens*/ 1, /*fi_pattern*/ 1, /*twoshot*/ false, /*pdl*/ false, /*trigger_at_end*/ true, /*norm_out*/ true, /*pattern_is_allreduce*/ false, /*check_allreduce_out*/ false, /*pdl_producer*/ false, /*producer_delay_ns*/ 0, /*pdl_consumer*/ false, /*quantises*/ false, /*sf_layout*/ 0, /*group_size*/ 0, /*tma_aligned_mn*/ 0, /*scale_bytes*/ 0, /*scale_factor*/ 0.0f, /*moe_finalize*/ false, /*moe_experts*/ 0, /*moe_routed_scaling*/ 1.0f, /*moe_allreduce_out*/ false, /*moe_part_bytes*/ {0, 0, 0, 0, 0}},
    {/*tokens*/ 1, /*fi_pattern*/ 1, /*twoshot*/ false, /*pdl*/ true, /*trigger_at_end*/ true, /*norm_out*/ true, /*pattern_is_allreduce*/ false, /*check_allreduce_out*/ false, /*pdl_producer*/ true, /*producer_delay_ns*/ 5000, /*pdl_consumer*/ false, /*quantises*/ false, /*sf_layout*/ 0, /*group_size*/ 0, /*tma_aligned_mn*/ 0, /*scale_bytes*/ 0, /*scale_factor*/ 0.0f, /*moe_finalize*/ false, /*moe_experts*/ 0, /*moe_routed_scaling*/ 1.0f, /*moe_allreduce_out*/ false, /*moe_part_bytes*/ {0, 0, 0, 0, 0}},
};
// [run][call][rank]
inline constexpr Delay kDelays[kRuns][kCalls][kRanks] = {
    {{{72794, true}, {43013, true}}, {{0, false}, {0, false}}}, {{{0, false}, {0, false}}, {{0, false}, {0, false}}},
    {{{16964, false}, {0, false}}, {{0, false}, {0, false}}}, {{{4771, true}, {0, false}}, {{0, false}, {0, false}}},
    {{{82446, false}, {15892, false}}, {{0, false}, {0, false}}}, {{{0, false}, {162217, true}}, {{0, false}, {0, false}}},
    {{{157033, true}, {46164, false}}, {{0, false}, {0, false}}}, {{{22286, false}, {23971, false}}, {{0, false}, {0, false}}},
    {{{92201, false}, {0, false}}, {{0, false}, {0, false}}}, {{{76638, false}, {179160, false}}, {{0, false}, {0, false}}},
    {{{54780, false}, {0, false}}, {{0, false}, {0, false}}}, {{{25155, true}, {105860, false}}, {{0, false}, {0, false}}},
    {{{173993, true}, {0, false}}, {{0, false}, {0, false}}}, {{{0, false}, {56684, true}}, {{0, false}, {0, false}}},
    {{{183054, false}, {125086, true}}, {{0, false}, {0, false}}}, {{{0, false}, {0, false}}, {{0, false}, {0, false}}},
    {{{1522, true}, {79288, false}}, {{0, false}, {0, false}}}, {{{0, false}, {163989, false}}, {{0, false}, {0, false}}},
    {{{52791, true}, {114578, true}}, {{0, false}, {0, false}}}, {{{41850, true}, {0, false}}, {{0, false}, {0, false}}}
};
}  // namespace repro
