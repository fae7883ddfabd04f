// Written by `fusioncheck gpu repro` from flashinfer-block-scaled-launch-resources-back-to-back.json: the case, as fusioncheck ran it.
#pragma once
#define FC_FAMILY_FUSION 1
#define FC_BF16 1
#define FC_SYNC_DELAY 0
#define FC_FAMILY_MOE 0
#define FC_FAMILY_LEGACY 0
namespace repro {
inline constexpr const char* kFinding = "fi-fusion-block-scaled-launch-resources";
inline constexpr const char* kFindingChecks[] = {"launch"};
inline constexpr const char* kFindingMessage = "too many resources requested for launch";
inline constexpr const char* kFamily = "flashinfer";
inline constexpr const char* kExportedHeaderSha256 = "9f5529d444072b5a373d244001dcf2fb272362c2562471b5097287a4c7b8bb70";
inline constexpr int kRanks = 2;
inline constexpr int kHidden = 7392;
inline constexpr int kCalls = 1;
inline constexpr int kRuns = 20;
inline constexpr int kMaxTokens = 3;
inline constexpr int kMinComputeMajor = 9;
inline constexpr bool kBackToBack = true;
inline constexpr float kEps = 1e-6f;
inline constexpr float kWeightBias = 1.0f;
inline constexpr bool kFp32Acc = false;
inline constexpr unsigned long long kCommSize = 4194304;
inline constexpr unsigned long long kTwoshotBytes = 4194304;
inline constexpr CallCase kCallCases[kCalls] = {
    {/*tokens*/ 3, /*fi_pattern*/ 8, /*twoshot*/ true, /*pdl*/ true, /*trigger_at_end*/ true, /*norm_out*/ false, /*pattern_is_allreduce*/ false, /*check_allreduce_out*/ false, /*pdl_producer*/ true, /*producer_delay_ns*/ 20000, /*pdl_consumer*/ false, /*quantises*/ true, /*sf_layout*/ 0, /*group_size*/ 96, /*tma_aligned_mn*/ 4, /*scale_bytes*/ 316, /*scale_factor*/ 0.0f, /*moe_finalize*/ false, /*moe_experts*/ 0, /*moe_routed_scaling*/ 1.0f, /*moe_allreduce_out*/ false, /*moe_part_bytes*/ {0, 0, 0, 0, 0}},
};
// [run][call][rank]
inline constexpr Delay kDelays[kRuns][kCalls][kRanks] = {
    {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}},
    {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}},
    {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}},
    {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}},
    {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}, {{{0, false}, {0, false}}}
};
}  // namespace repro
