// Written by `fusioncheck gpu repro` from flashinfer-moe-partial-warp-rmsnorm.json: the case, as fusioncheck ran it.
#pragma once
#define FC_FAMILY_MOE 1
#define FC_BF16 0
#define FC_SYNC_DELAY 0
#define FC_FAMILY_FUSION 0
#define FC_FAMILY_LEGACY 0
namespace repro {
inline constexpr const char* kFinding = "fi-moe-partial-warp-rmsnorm";
inline constexpr const char* kFindingChecks[] = {"reference", "agreement", "invariant"};
inline constexpr const char* kFindingMessage = "";
inline constexpr const char* kFamily = "flashinfer-moe";
inline constexpr const char* kExportedHeaderSha256 = "518e42e290a7192c5a6338b5825c19f0e37687bac0dde3ec00ce2af4518a11da";
inline constexpr int kRanks = 2;
inline constexpr int kHidden = 16;
inline constexpr int kCalls = 1;
inline constexpr int kRuns = 20;
inline constexpr int kMaxTokens = 2;
inline constexpr int kMinComputeMajor = 9;
inline constexpr bool kBackToBack = true;
inline constexpr float kEps = 1e-6f;
inline constexpr float kWeightBias = 0.0f;
inline constexpr bool kFp32Acc = false;
inline constexpr unsigned long long kCommSize = 4194304;
inline constexpr unsigned long long kTwoshotBytes = 256;
inline constexpr CallCase kCallCases[kCalls] = {
    {/*tokens*/ 2, /*fi_pattern*/ 1, /*twoshot*/ false, /*pdl*/ false, /*trigger_at_end*/ true, /*norm_out*/ true, /*pattern_is_allreduce*/ false, /*check_allreduce_out*/ false, /*pdl_producer*/ false, /*producer_delay_ns*/ 0, /*pdl_consumer*/ false, /*quantises*/ false, /*sf_layout*/ 0, /*group_size*/ 0, /*tma_aligned_mn*/ 0, /*scale_bytes*/ 0, /*scale_factor*/ 42.0f, /*moe_finalize*/ true, /*moe_experts*/ 8, /*moe_routed_scaling*/ 1.0f, /*moe_allreduce_out*/ false, /*moe_part_bytes*/ {896, 0, 64, 64, 0}},
};
// [run][call][rank]
inline constexpr Delay kDelays[kRuns][kCalls][kRanks] = {
    {{{72794, true}, {43013, true}}}, {{{95815, true}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}},
    {{{16964, false}, {0, false}}}, {{{57798, true}, {0, false}}}, {{{4771, true}, {0, false}}}, {{{54109, false}, {0, false}}},
    {{{82446, false}, {15892, false}}}, {{{82271, true}, {129050, false}}}, {{{0, false}, {162217, true}}},
    {{{41391, false}, {0, false}}}, {{{157033, true}, {46164, false}}}, {{{0, false}, {9048, true}}},
    {{{22286, false}, {23971, false}}}, {{{30761, true}, {95178, true}}}, {{{92201, false}, {0, false}}},
    {{{91309, true}, {0, false}}}, {{{76638, false}, {179160, false}}}, {{{0, false}, {0, false}}}
};
}  // namespace repro
