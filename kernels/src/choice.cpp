#include "fusioncheck/kernels/choice.hpp"

#include <algorithm>
#include <limits>

namespace fusioncheck::kernels {

// One-shot moves (N-1) x size per rank over the links and reduces the whole tensor on every
// rank; two-shot moves 2 (N-1)/N x size and reduces 1/N of it, but pays a second round of
// synchronisation. At 2 ranks both move the same bytes, so one-shot is never slower
// (measured with gpu bench up to 2048 x 8192 on two H200s). At 4 ranks, one per H200 over
// NVLink, two-shot is faster from 2 MiB per rank (256 x 4096, 128 x 8192; at 1 MiB the two
// are within 1 %). The 8- and 16-rank sizes are estimates from the ratio of bytes moved,
// not measurements. 2 ranks sharing one H200 under MPS run
// each kernel on a capped grid (22 blocks); there two-shot was the faster from 2 MiB per rank
// in three runs (128 x 8192, 512 x 4096, 512 and 2048 x 8192: 3-17 %; at 1 MiB the two tie,
// at 2048 x 4096 one run in three had one-shot ahead by 5 %). Other counts of ranks sharing
// a GPU were not measured and keep the sizes of a GPU each.
bool twoshot_preferred(int ranks, std::uint64_t input_bytes_per_rank, int ranks_on_device) {
  std::uint64_t from = std::numeric_limits<std::uint64_t>::max();
  if (ranks == 2 && ranks_on_device > 1) from = 2u << 20;
  if (ranks == 4) from = 2u << 20;
  if (ranks == 8) from = 256u << 10;
  if (ranks == 16) from = 128u << 10;
  return input_bytes_per_rank >= from;
}

bool epilogue_serves(EpilogueScope scope, Pattern pattern, bool fp32_accumulation) {
  if (scope == EpilogueScope::full) return true;
  return fp32_accumulation &&
         (pattern == Pattern::allreduce || pattern == Pattern::residual_rmsnorm);
}

EpilogueScope epilogue_scope_for(Pattern pattern, bool fp32_accumulation) {
  return epilogue_serves(EpilogueScope::plain, pattern, fp32_accumulation) ? EpilogueScope::plain
                                                                           : EpilogueScope::full;
}

int co_resident_blocks(int sm_count, int sharers, int resident_kernels) {
  return std::max(1, sm_count / (std::max(1, sharers) * std::max(1, resident_kernels)));
}

int choose_cluster(const ClusterChoice& in, const std::function<bool(int)>& device_allows) {
  if (in.mode == ClusterMode::force_no_cluster) return 1;
  const bool automatic = in.mode == ClusterMode::automatic;
  for (int c = kMaxClusterSize; c >= 2; c /= 2) {
    const bool divides = in.row_vectors % c == 0 && (!in.nvfp4 || (in.hidden / 16) % c == 0);
    const int min_block_vectors =
        automatic ? kAutomaticClusterBlockVectors : kMinClusterBlockVectors;
    if (!divides || in.row_vectors / c < min_block_vectors || c > in.max_blocks) continue;
    if (automatic && (c < 4 || static_cast<std::int64_t>(in.tokens) * c > in.sm_share)) continue;
    if (device_allows(c)) return c;
  }
  return 1;
}

}  // namespace fusioncheck::kernels
