#pragma once
// Host-side checks of a launch request, without a device: what a launch would refuse.
// Throws InvalidLaunch (types.hpp) with one line naming the offending parameter.
#include <cstdint>

#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::kernels {

// What the workspace and the device allow.
struct LaunchLimits {
  int workspace_ranks = 0;
  std::uint64_t comm_size = 0;       // bytes per Lamport buffer
  bool fp32_lamport = false;         // element width the Lamport buffers were filled for
  std::uint64_t twoshot_bytes = 0;   // bytes of the two-shot data buffer
  int compute_capability = 0;        // major * 10 + minor; 0 = unknown (skips arch checks)
};

void validate_oneshot(const FusedParams& params, const LaunchLimits& limits);
void validate_twoshot(const FusedParams& params, const LaunchLimits& limits);

// Two-shot data buffer: a scatter region [ranks][chunk] and a gather region [tokens*hidden],
// chunk = ceil(vectors / ranks) vectors of 8 elements.
std::uint64_t twoshot_chunk_elems(int ranks, std::uint64_t elems);
std::uint64_t twoshot_required_bytes(int ranks, std::uint64_t elems, DType dtype);

}  // namespace fusioncheck::kernels
