#pragma once
// Host-side checks of a launch request, without a device: what a launch would refuse.
// Throws InvalidLaunch (types.hpp) with one line naming the offending parameter.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::kernels {

// What the workspace and the device allow.
struct LaunchLimits {
  int workspace_ranks = 0;
  std::uint64_t comm_size = 0;      // bytes per Lamport buffer
  bool fp32_lamport = false;        // element width the Lamport buffers were filled for
  std::uint64_t twoshot_bytes = 0;  // bytes of the two-shot data buffer
  int compute_capability = 0;       // major * 10 + minor; 0 = unknown (skips arch checks)
};

void validate_oneshot(const FusedParams& params, const LaunchLimits& limits);
void validate_twoshot(const FusedParams& params, const LaunchLimits& limits);

// Two-shot data buffer: a scatter region [ranks][chunk] and a gather region [tokens*hidden],
// chunk = ceil(vectors / ranks) vectors of 8 elements.
std::uint64_t twoshot_chunk_elems(int ranks, std::uint64_t elems);
std::uint64_t twoshot_required_bytes(int ranks, std::uint64_t elems, DType dtype);

// Peer access between the ranks' GPUs, as a workspace needs it: every other rank's GPU must
// be visible to this process (CUDA IPC) and reachable by P2P (NVLink or PCIe) from this
// rank's GPU. gpu_of_rank: each rank's GPU UUID; local_ordinal: the ordinal of a UUID among
// this process's visible devices; can_access: P2P from my_device to an ordinal. Returns ""
// or one line naming the first rank that cannot be reached and why.
using GpuUuid = std::array<unsigned char, 16>;
std::string peer_access_problem(
    int my_rank, int my_device, const std::vector<GpuUuid>& gpu_of_rank,
    const std::function<std::optional<int>(const GpuUuid&)>& local_ordinal,
    const std::function<bool(int)>& can_access);

}  // namespace fusioncheck::kernels
