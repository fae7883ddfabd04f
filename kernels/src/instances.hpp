#pragma once
// The table of compiled kernel instances: each oneshot_*.cu / twoshot.cu file exports its
// entries, and the dispatchers pick one by (ranks, dtype, Lamport width, mutant) and, of
// those that serve the call's epilogue, the narrowest (EpilogueScope, choice.hpp).
#include <cuda_runtime.h>

#include <span>
#include <string>

#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::kernels {
namespace device {
struct OneShotArgs;
struct TwoShotArgs;
}  // namespace device

namespace detail {

struct LaunchShape {
  int grid = 1;
  int threads = 32;
  int cluster_size = 1;
  bool use_pdl = false;
};

// The same one-shot instance built without the cluster path (ClusterCode::left_out in
// oneshot_kernel.cuh); launch_oneshot_entry runs it for the calls that take no cluster.
struct ClusterFreeTwin {
  cudaError_t (*launch)(const device::OneShotArgs&, const LaunchShape&, cudaStream_t) = nullptr;
  cudaError_t (*preload)() = nullptr;
  int (*blocks_per_sm)(int threads) = nullptr;
};

struct OneShotEntry {
  int ranks;
  DType dtype;
  bool fp32_lamport;
  protocol::Mutant mutant;
  EpilogueScope scope;  // the calls its epilogue serves (choice.hpp)
  cudaError_t (*launch)(const device::OneShotArgs&, const LaunchShape&, cudaStream_t);
  int (*max_cluster_size)(int threads);
  cudaError_t (*preload)();  // loads the kernel into the current context (see preload_kernels)
  int (*blocks_per_sm)(int threads);  // resident blocks of this size per SM (occupancy)
  ClusterFreeTwin cluster_free{};     // launch null: no twin built
};

struct TwoShotEntry {
  int ranks;
  DType dtype;
  protocol::Mutant mutant;
  EpilogueScope scope;
  cudaError_t (*launch)(const device::TwoShotArgs&, const LaunchShape&, cudaStream_t);
  cudaError_t (*preload)();
};

std::span<const OneShotEntry> oneshot_entries_f16();
std::span<const OneShotEntry> oneshot_entries_bf16();
std::span<const OneShotEntry> oneshot_entries_plain_f16();   // EpilogueScope::plain
std::span<const OneShotEntry> oneshot_entries_plain_bf16();  // EpilogueScope::plain
std::span<const OneShotEntry> oneshot_entries_mutants();
std::span<const TwoShotEntry> twoshot_entries();
std::span<const OneShotEntry>
oneshot_entries_wait_profile();  // Instrument::wait_profile (wait_profile.cu)
// BENCHMARK ONLY (oneshot_unbounded_polls.cu): polls without a time bound; never for checking.
std::span<const OneShotEntry> oneshot_entries_unbounded_polls();

// Loads the unfused residual + RMSNorm kernels (unfused.cu) into the current context.
cudaError_t preload_unfused_kernels();
cudaError_t preload_spin_kernel();  // automatic.cu

// Plans (grid, cluster) and enqueues one one-shot call of a given instance (oneshot.cu).
LaunchInfo launch_oneshot_entry(const OneShotEntry& entry, const FusedParams& params,
                                Workspace& workspace, cudaStream_t stream);
// Validates the call and launches the entry of `entries` for its (ranks, dtype, Lamport
// width); throws InvalidLaunch "<which_exist>; asked ..." when there is none.
LaunchInfo launch_matching_oneshot(std::span<const OneShotEntry> entries,
                                   const std::string& which_exist, const FusedParams& params,
                                   Workspace& workspace, cudaStream_t stream);

}  // namespace detail
}  // namespace fusioncheck::kernels
