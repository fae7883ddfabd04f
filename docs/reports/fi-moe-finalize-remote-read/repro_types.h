// The vocabulary of a reproducer's case (repro_case.h, written by `fusioncheck gpu repro`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace repro {

// The MoE kernels' inputs beyond the rank input (data/c<call>_r<rank>_<name>.bin).
enum MoePart : int {
  kExpertRows = 0,       // the experts' output rows (reduction) or permuted rows (finalize)
  kReductionScales = 1,  // float per (expert, token): the reduction kernel's scales
  kTokenRows = 2,        // the token input (reduction) or the shared expert's output (finalize)
  kPermutedIndex = 3,    // int32 per (token, k): finalize's row of each (token, k)
  kTopkScales = 4,       // T per (token, k): finalize's scales
  kMoeParts = 5
};
inline constexpr const char* kMoePartNames[kMoeParts] = {
    "expert_rows", "reduction_scales", "token_rows", "permuted_index", "topk_scales"};

// The file under data/ of one input or expected output: c<call>[_r<rank>]_<what>.bin (rank -1:
// the same for every rank). The exporter writes by it and the program reads by it.
inline std::string data_name(int call, int rank, const char* what) {
  return "c" + std::to_string(call) + (rank >= 0 ? "_r" + std::to_string(rank) : "") + "_" + what +
         ".bin";
}

struct CallCase {
  int tokens = 1;
  int fi_pattern = 1;  // FlashInfer's AllReduceFusionPattern (fusion family)
  bool twoshot = false;
  bool pdl = true;
  bool trigger_at_end = true;
  bool norm_out = true;  // the call writes norm_out (else a quantising pattern without)
  bool pattern_is_allreduce = false;  // allreduce only: allreduce_out is the output
  bool check_allreduce_out = false;   // allreduce_out is an output to compare
  bool pdl_producer = false;          // a kernel that writes the inputs runs right before, with PDL
  std::uint32_t producer_delay_ns = 0;
  bool pdl_consumer = false;  // a kernel that reads the output before its wait runs behind
  bool quantises = false;     // the pattern writes quant_out
  int sf_layout = 0;          // FlashInfer's QuantizationSFLayout
  int group_size = 0;         // per-token-group FP8: the group (0: not that pattern)
  int tma_aligned_mn = 0;
  std::size_t scale_bytes = 0;  // what scale_out holds
  float scale_factor = 0.0f;    // FP8 static or NVFP4 global scale (0: none)
  bool moe_finalize = false;
  int moe_experts = 0;
  float moe_routed_scaling = 1.0f;
  bool moe_allreduce_out = false;
  std::size_t moe_part_bytes[kMoeParts] = {};  // the largest rank's (0: the call has none)
};

// What the suite did before a rank's call in one run of the case: nothing, a pause of ns, or
// a late start of its blocks spread over ns (an SM hog on a side stream); first, where the
// case holds this rank before this call, a pause of hold_ns.
struct Delay {
  std::uint32_t ns = 0;
  bool staggered = false;
  std::uint32_t hold_ns = 0;
};

// The block a rank holds at one synchronisation exit of the header (the line of the rewritten
// copy's hook, sync_delay.cmake) at every call; line 0: none. `site`: the line's place among
// the exported header's exits (from 0), for a tree whose lines moved.
struct SyncDelay {
  int line = 0;
  int block = 0;
  std::uint32_t ns = 0;
  int site = 0;
};

}  // namespace repro
