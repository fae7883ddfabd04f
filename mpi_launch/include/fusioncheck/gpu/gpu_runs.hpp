#pragma once
// The GPU jobs of `fusioncheck gpu`, one MPI rank per process:
//   smoke: every kernel x pattern x dtype x option the device can run, exact inputs,
//          checked against the Eigen reference, the Lamport invariants after every call
//          (gathered to rank 0), cross-rank bitwise agreement, NaN canaries on outputs.
//   bench: latency of one-shot, one-shot without the time bound on its polls (benchmark-only
//          instances: what the bound costs), two-shot, the automatic choice, the unfused
//          baseline and optionally another kernel, side by side: per call from CUDA graphs of many
//          calls queued behind a spin kernel (median and p10/p90 over repeats, slowest rank), and
//          eagerly (an event pair per call, median; the slowest rank's median).
//   wait profile: for one configuration, per rank, block and peer, the time the one-shot
//          kernel spent polling versus working; for another kernel with a build that times its
//          polls (KernelChoice::make_poll_profiled), per rank, poll site and block.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusioncheck/mpi/mpi_comm.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/gpu/known_findings.hpp"
#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::gpu {

struct SmokeOptions {
  std::uint64_t seed = 1;
  std::vector<int> tokens{1, 7, 64, 257};
  std::vector<int> hidden{1024, 4096};
  int calls_per_case = 3;    // back-to-back calls with changing token counts
  bool pdl_producer = true;  // every other PDL call behind a PDL producer (CheckOptions)
  KernelChoice kernel;       // ours by default
  std::string json_out;      // rank 0 writes the results here when set
  // A ledger of known findings (CheckOptions::known): a failing case that matches an entry is
  // counted as known, not failed; strict: an entry whose trigger ran and never failed fails.
  std::shared_ptr<const KnownFindings> known;
  bool strict = false;
};

// The unfused baseline's allreduce: ncclAllReduce needs one rank per GPU.
enum class BaselineAllreduce { automatic, nccl, ours };

// automatic: NCCL where it can run (built with it, one rank per GPU), else ours. nccl where
// it cannot run throws BadInput naming why.
bool baseline_uses_nccl(BaselineAllreduce choice, bool ranks_share_gpu, bool nccl_built);

// gpu bench's graph timing: which of `columns` columns is timed `position`-th in round
// `round` (column order on even rounds, reverse on odd ones, so that a drift of the GPU's
// clocks during a row falls on every column alike).
inline std::size_t interleaved_column(int round, std::size_t position, std::size_t columns) {
  return round % 2 == 0 ? position : columns - 1 - position;
}

struct BenchOptions {
  std::vector<int> tokens{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  std::vector<int> hidden{4096, 8192};
  int warmup = 20;
  int iters = 100;        // eager: timed calls per point
  int graph_calls = 100;  // graph: calls captured in one CUDA graph
  int repeats = 20;       // graph: launches of it per point (median, p10, p90 over them)
  bool eager = true;      // also time eagerly
  BaselineAllreduce allreduce = BaselineAllreduce::automatic;
  kernels::ClusterMode cluster = kernels::ClusterMode::automatic;  // the one-shot RMSNorm path
  bool use_pdl = true;                                             // the fused kernels' launches
  // The fused kernels' PDL trigger; early suits a consumer that waits before it reads, as
  // every call of the benchmark does (the next call's step 1).
  kernels::Trigger trigger = kernels::Trigger::at_end;
  // residual_rmsnorm, or allreduce alone (no unfused column: nothing to fuse)
  kernels::Pattern pattern = kernels::Pattern::residual_rmsnorm;
  // Another kernel under test, timed beside ours (same calls), one column per launch variant.
  std::optional<KernelChoice> compare;
  std::string json_out;
};

// One configuration through the one-shot wait-profile instance (bf16, 2 or 4 ranks).
struct WaitProfileOptions {
  int tokens = 1;
  int hidden = 4096;
  int calls = 20;       // profiled calls, summed
  int delay_rank = -1;  // this rank starts each call delay_us late (-1: none)
  int delay_us = 0;
  std::string json_out;  // rank 0 writes the profile here when set
  // Another kernel than ours: its poll-profiled build, at this launch variant.
  std::optional<KernelChoice> kernel;
  int variant = 0;
};

struct SmokeResult {
  int passed = 0;
  int failed = 0;   // wrong results, failed invariants, or a launch refused unexpectedly
  int refused = 0;  // refused as expected (NVFP4 below sm_100)
  int calls = 0;    // kernel calls on this rank
  int known = 0;    // cases that failed with a known finding (not in failed)
  std::vector<KnownFindingTally> tallies;  // the ledger's entries for the kernel (rank 0)
  int absent = 0;                          // entries whose trigger ran and never failed
  // Exit 1: a failure, or an absent entry under strict.
  bool fails(bool strict) const { return failed > 0 || (strict && absent > 0); }
};

struct BenchResult {
  nlohmann::json rows;            // one per (tokens, hidden): latencies in microseconds
  std::string unfused_allreduce;  // which allreduce the unfused baseline used
};

// Collective. Bad input throws BadInput (errors.hpp).
SmokeResult run_smoke(mpi::MpiComm& comm, const SmokeOptions& options);
BenchResult run_bench(mpi::MpiComm& comm, const BenchOptions& options);
// Returns the profile as JSON (rank 0; other ranks get an empty object).
nlohmann::json run_wait_profile(mpi::MpiComm& comm, const WaitProfileOptions& options);
// The same for options.kernel (set): its poll sites' time per rank and block.
nlohmann::json run_poll_profile(mpi::MpiComm& comm, const WaitProfileOptions& options);

}  // namespace fusioncheck::gpu
