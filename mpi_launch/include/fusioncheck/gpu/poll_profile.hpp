#pragma once
// The poll profile of a kernel built to time its polls (KernelUnderTest::take_poll_profile):
// what `gpu bench --wait-profile --kernel K` reports per rank, summed over calls and grouped
// by poll site (a source line of the kernel's header).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "fusioncheck/gpu/device_buffer.hpp"
#include "fusioncheck/gpu/gpu_runs.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"

namespace fusioncheck::gpu {

struct PollSiteSummary {
  int line = 0;
  int blocks = 0;                   // the blocks whose thread 0 polled there
  double mean_us = 0;               // per call, mean over those blocks
  double max_us = 0;                // per call, the slowest of those blocks
  double polls_per_call = 0;        // per block, mean over those blocks
  std::vector<double> by_block_us;  // per call, indexed by block (0 for a block that did not)
};

// Entries of `calls` calls (any order, a block and line may repeat), grouped by line in
// ascending order. Throws std::invalid_argument for calls < 1, a negative block or line 0.
std::vector<PollSiteSummary> summarize_poll_sites(const std::vector<PollSiteTime>& entries,
                                                  int calls, double us_per_cycle);

// The profiled calls' buffers, bf16 tokens x hidden, inputs of small finite values.
struct ProfileBuffers {
  DeviceBuffer input, residual, gamma, allreduce_out, residual_out, norm_out;
  ProfileBuffers(std::size_t elems, std::size_t hidden, cudaStream_t stream);
};
// The call every rank profiles: bf16, o.tokens x o.hidden of `pattern`, launch variant o.variant.
kernels::FusedParams profiled_call(const WaitProfileOptions& o, kernels::Pattern pattern, int rank,
                                   int ranks, const ProfileBuffers& b);

// What both wait profiles (ours and another kernel's) report first: the injected delay in
// words, and the run's setup as the JSON's leading fields.
std::string describe_delay(const WaitProfileOptions& o);
nlohmann::json wait_profile_setup(const WaitProfileOptions& o, const GpuPlacement& placement,
                                  int ranks, int clock_khz);

}  // namespace fusioncheck::gpu
