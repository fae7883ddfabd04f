#pragma once
// The automatic one-/two-shot choice (launch_automatic in launch.hpp uses it): host-only, so
// that it is tested without a GPU.
#include <cstdint>

namespace fusioncheck::kernels {

// Whether two-shot is chosen for `input_bytes_per_rank` (tokens x hidden x element size) on
// `ranks` ranks: from a per-rank-count size on. The sizes come from gpu bench's crossover
// (docs/bench.md).
bool twoshot_preferred(int ranks, std::uint64_t input_bytes_per_rank);

// The spinning kernels deadlock unless every rank's blocks are resident at once. Where ranks
// share a GPU, up to this many kernels of one rank may be resident together: the running
// fused kernel, the next one that PDL makes resident early, and a PDL consumer behind them.
// With 2, 8 ranks on one H200 under MPS hung in 7 of 7 runs (a peer's blocks found no room
// among spinning ones); with 3 and with 4 none did in 4 (docs/bench.md).
inline constexpr int kResidentKernelsPerSharingRank = 3;

// The blocks (one per SM) one kernel of a rank may take so that `sharers` ranks with
// `resident_kernels` kernels each fit on `sm_count` SMs at once; at least 1. `sharers` is 1
// where an MPS share reported as the rank's SM count is its own.
int co_resident_blocks(int sm_count, int sharers, int resident_kernels);

}  // namespace fusioncheck::kernels
