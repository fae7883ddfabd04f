#pragma once
// The automatic one-/two-shot choice (launch_automatic in launch.hpp uses it): host-only, so
// that it is tested without a GPU.
#include <cstdint>
#include <functional>

#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::kernels {

// Whether two-shot is chosen for `input_bytes_per_rank` (tokens x hidden x element size) on
// `ranks` ranks, `ranks_on_device` of which share this rank's GPU (1: a GPU each): from a
// size on that depends on both. The sizes come from gpu bench's crossover.
bool twoshot_preferred(int ranks, std::uint64_t input_bytes_per_rank, int ranks_on_device);

// Which calls a kernel instance's epilogue serves. Every kernel is compiled twice:
//   full   every pattern, either accumulation mode;
//   plain  allreduce or residual + RMSNorm with fp32 accumulation (what a model runs),
//          without the code of the quantised outputs and of the per-add rounding. On one
//          H200 that made the one-shot kernel 1-11 % faster at every size, 0.06-0.55 us at
//          1-16 tokens (gpu bench): at small sizes a call is a chain of latencies, and the
//          unused branches are on it.
enum class EpilogueScope : std::uint8_t { full, plain };

// Whether an instance compiled for `scope` computes this call's outputs.
bool epilogue_serves(EpilogueScope scope, Pattern pattern, bool fp32_accumulation);
// The narrowest scope that serves the call: the launchers pick that instance.
EpilogueScope epilogue_scope_for(Pattern pattern, bool fp32_accumulation);

// The rule every dispatcher follows among the compiled instances for a call's (ranks, dtype,
// Lamport width, mutant): of those that serve its epilogue, the one of the narrowest scope.
// Returns the better of `best` (nullptr: none yet) and `candidate` (any type with `scope`).
template <typename Instance>
const Instance* narrower_instance(const Instance* best, const Instance& candidate, Pattern pattern,
                                  bool fp32_accumulation) {
  if (!epilogue_serves(candidate.scope, pattern, fp32_accumulation)) return best;
  if (best == nullptr || candidate.scope == epilogue_scope_for(pattern, fp32_accumulation))
    return &candidate;
  return best;
}

// The spinning kernels deadlock unless every rank's blocks are resident at once. Where ranks
// share a GPU, up to this many kernels of one rank may be resident together: the running
// fused kernel, the next one that PDL makes resident early, and a PDL consumer behind them.
// With 2, 8 ranks on one H200 under MPS hung in 7 of 7 runs (a peer's blocks found no room
// among spinning ones); with 3 and with 4 none did in 4.
inline constexpr int kResidentKernelsPerSharingRank = 3;

// The blocks (one per SM) one kernel of a rank may take so that `sharers` ranks with
// `resident_kernels` kernels each fit on `sm_count` SMs at once. At least 1: with fewer SMs
// than sharers x resident_kernels that over-commits them (no grid can be smaller). `sharers`
// is 1 where an MPS share reported as the rank's SM count is its own.
int co_resident_blocks(int sm_count, int sharers, int resident_kernels);

// What the one-shot launcher knows when it picks the cluster size of the RMSNorm path.
struct ClusterChoice {
  ClusterMode mode = ClusterMode::automatic;
  int row_vectors = 0;  // 16-byte vectors of one token row of the Lamport buffer
  int hidden = 0;
  bool nvfp4 = false;  // a block must then hold whole 16-element scale groups
  int tokens = 0;
  int max_blocks = 0;  // the grid bound (co-residency)
  int sm_share = 0;    // SMs of the rank's share, one block each
};

// The largest cluster the one-shot launcher makes (the device's exchange has a slot per
// block of a cluster up to this many: device/cluster_exchange.cuh).
inline constexpr int kMaxClusterSize = 8;

// No cluster mode makes blocks of fewer vectors than this (whole NVFP4 scale groups).
inline constexpr int kMinClusterBlockVectors = 32;

// Automatic mode splits a row into blocks of at least this many vectors. Since the blocks
// of a cluster exchange their partial sums without a cluster barrier (cluster_exchange.cuh),
// blocks of 128 vectors are the fastest at 1-4 tokens on one H200 (2 ranks under MPS):
// hidden 4096 split in 4 took 3.19-3.28 us against 3.42-3.57 without a cluster and 3.27
// split in 8 (early trigger); hidden 8192 split in 8 3.28-3.30 against 3.42-3.45 split in 4.
inline constexpr int kAutomaticClusterBlockVectors = 128;

// The cluster size C (1: none): the largest of 8, 4, 2 (kMaxClusterSize and its halves) that
// splits a row into blocks of at least kMinClusterBlockVectors, is at most max_blocks, and
// that the device allows (`device_allows(C)`: cluster launch and the occupancy query).
// Automatic mode makes blocks of at least kAutomaticClusterBlockVectors, splits in 8 or 4
// only, and only as many as fit the share: tokens x C <= sm_share (hidden 8192, bf16, 132 SMs: 8
// blocks a row up to 16 tokens, 4 up to 33; hidden 4096: 4 up to 33). On two H200s 2 blocks a row
// made 64 x 8192 4-5 % slower than none (gpu bench), so automatic mode never splits in 2.
// force_no_cluster: 1; force_cluster ignores the share and may split in 2.
int choose_cluster(const ClusterChoice& in, const std::function<bool(int)>& device_allows);

}  // namespace fusioncheck::kernels
