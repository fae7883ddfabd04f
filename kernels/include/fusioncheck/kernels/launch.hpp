#pragma once
// Launchers of the fused kernels. Each validates (validate.hpp), picks the compiled
// instance for (ranks, dtype, Lamport width, mutant) and enqueues one kernel on `stream`
// with cudaLaunchKernelEx (PDL attribute when params.use_pdl, cluster dimension when the
// cluster path is chosen). Errors throw InvalidLaunch / CudaError; a hang is reported by
// Workspace::throw_if_hung() after the stream is synchronised.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fusioncheck/kernels/choice.hpp"
#include "fusioncheck/kernels/types.hpp"
#include "fusioncheck/kernels/workspace.hpp"

namespace fusioncheck::kernels {

struct LaunchInfo {
  int grid = 0;
  int threads = 0;
  int cluster_size = 1;  // > 1: the RMSNorm reduction went through a thread-block cluster
  std::uint32_t call_index = 0;
  bool twoshot = false;                          // launch_automatic: which kernel it chose
  EpilogueScope epilogue = EpilogueScope::full;  // the instance's (choice.hpp)
  bool cluster_free = false;  // one-shot: the instance's twin built without the cluster path ran
};

// One-shot Lamport kernel. mutant != none selects a negative-control instance (only for
// bf16, 2 ranks: see oneshot_mutants_compiled(); those serve every call, EpilogueScope::full).
// Otherwise the instance of the narrowest epilogue scope that serves the call.
LaunchInfo launch_oneshot(const FusedParams& params, Workspace& workspace, cudaStream_t stream,
                          protocol::Mutant mutant = protocol::Mutant::none);

// Two-shot: reduce-scatter, release/acquire flag barrier, all-gather, same epilogue.
LaunchInfo launch_twoshot(const FusedParams& params, Workspace& workspace, cudaStream_t stream,
                          protocol::Mutant mutant = protocol::Mutant::none);

// The automatic choice: one-shot below a per-rank-count size, two-shot from it
// (twoshot_preferred, choice.hpp).
LaunchInfo launch_automatic(const FusedParams& params, Workspace& workspace, cudaStream_t stream);

// Keeps `stream` busy for `ns` nanoseconds (one thread watching the global timer): work queued
// behind it then starts without the host's launch latency on its path (gpu bench's graphs).
void launch_spin(std::uint64_t ns, cudaStream_t stream);

// The same call through the wait-profile instance (bf16, 2 or 4 ranks, plain epilogue:
// allreduce or residual + RMSNorm with fp32 accumulation): every block records its poll and
// work cycles and the peers it waited on; read with Workspace::wait_profile().
LaunchInfo launch_oneshot_wait_profile(const FusedParams& params, Workspace& workspace,
                                       cudaStream_t stream);

// BENCHMARK ONLY: the same call through an instance whose polls have no time bound (bf16,
// 16-bit Lamport, 2, 4 or 8 ranks, plain epilogue; anything else throws InvalidLaunch), for
// gpu bench to time what the bound costs beside launch_oneshot. A hang there spins for ever (no
// hang record, no end): no checking job may call it.
LaunchInfo launch_oneshot_unbounded_polls(const FusedParams& params, Workspace& workspace,
                                          cudaStream_t stream);
// Whether launch_oneshot_unbounded_polls has an instance for this rank count.
bool oneshot_unbounded_polls_compiled(int ranks);

// Mutants that have a compiled one-shot / two-shot instance.
std::vector<protocol::Mutant> oneshot_mutants_compiled();
std::vector<protocol::Mutant> twoshot_mutants_compiled();

// Baseline residual + RMSNorm (+ quantisation) over an already allreduced input, one
// block per token. Uses params' tokens, hidden, dtype, pattern (not allreduce), eps,
// weight_bias, scales, residual_in, gamma and outputs; `allreduced` replaces the input.
void launch_residual_rmsnorm_unfused(const FusedParams& params, const void* allreduced,
                                     cudaStream_t stream);

// Consumer for the early-trigger negative control: copies `bytes` (multiple of 16) from
// src to dst, launched with PDL. read_before_wait: it reads src before its grid-dependency
// wait, trusting that the producer triggered only after writing src (trigger at end).
void launch_pdl_consumer_copy(const void* src, void* dst, std::size_t bytes, bool read_before_wait,
                              cudaStream_t stream);

// The kernel before a call that writes the call's inputs (a GEMM writing allreduce_in, the
// previous layer writing the residual): it triggers its dependents at once, waits delay_ns,
// then copies each src over its dst (bytes: multiples of 16). The call launched right behind
// it with PDL must not read a dst before its grid-dependency wait; the caller fills the dsts
// with poison first.
struct PdlProducerCopies {
  static constexpr int kMax = 8;  // inputs, residual, gamma; a MoE call's expert parts
  struct Copy {
    const void* src = nullptr;
    void* dst = nullptr;
    std::size_t bytes = 0;
  } copy[kMax];
  int count = 0;
};
inline constexpr std::uint32_t kMaxPdlProducerDelayNs = 1'000'000;
void launch_pdl_producer(const PdlProducerCopies& copies, std::uint32_t delay_ns,
                         cudaStream_t stream);

// Loads every kernel of this library into the current device's context now. Needed because
// CUDA loads kernels lazily (default since CUDA 12.2) and loading one may synchronise the
// whole context: when one process drives several ranks (create_in_process), rank 0's fused
// kernel spins on rank 1, and a first-time launch issued after it (rank 1's kernel, the
// unfused norm kernel, the PDL consumer) would wait for rank 0's kernel to finish, which
// waits for rank 1: a deadlock that only the spin budget ends. Workspace::create_in_process
// and create_ipc call it; call it again after switching device or resetting the context.
// Throws CudaError (e.g. no kernel image for this device).
void preload_kernels();

// Cluster support of the current device as the launcher sees it (for tests and reports).
bool device_supports_clusters();

}  // namespace fusioncheck::kernels
