#pragma once
// What the FlashInfer adapters add to the host-bounded wait (fusioncheck/gpu/host_bounded_wait.hpp,
// which they use for their kernels' unbounded polls): FlashInfer's refusals and launch errors.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/host_bounded_wait.hpp"

namespace fusioncheck::adapters::fi {

using gpu::first_sentinel;
using gpu::hang_base;
using gpu::HostBoundedWait;
using gpu::pause_before;
using gpu::PendingCall;
using gpu::reset_on_every_rank;

// FLASHINFER_CHECK's text without the path of the header (it differs between machines), so
// that refusals group by their reason.
std::string check_text(const std::string& message);
// After an instance's launch returned `e` (with FlashInfer's check text in `message` for a
// refusal): throws InvalidLaunch for a refusal, LaunchFailed for a launch its launcher chose
// that this GPU cannot run (clearing that error: the context stays usable), CudaError naming
// `what` for any other error; returns on cudaSuccess.
void throw_launch_error(cudaError_t e, const char* message, const char* what);
// The blocks a sync-delay copy (sites: its hooks' lines in `header`) holds inside the kernel for
// a case, a line per rank that holds one: what a failing case's report adds.
std::vector<std::string> sync_delay_notes(const gpu::GpuCase& c, const int* sites, int site_count,
                                          const char* header);
}  // namespace fusioncheck::adapters::fi
