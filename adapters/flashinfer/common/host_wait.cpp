// FlashInfer's refusals and launch errors, and the notes of a sync-delay copy's holds
// (host_wait.hpp).
#include "host_wait.hpp"

#include <fmt/core.h>

#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::adapters::fi {

void throw_launch_error(cudaError_t e, const char* message, const char* what) {
  if (e == cudaSuccess) return;
  if (message[0] != '\0' && (e == cudaErrorInvalidValue || e == cudaErrorNotSupported))
    throw kernels::InvalidLaunch("FlashInfer: " + check_text(message));
  if (kernels::is_launch_configuration_error(e)) {
    (void)cudaGetLastError();  // not sticky: the context stays usable
    throw kernels::LaunchFailed(
        std::string("FlashInfer's launcher made a launch this GPU cannot run: ") +
        cudaGetErrorString(e));
  }
  kernels::cuda_check(e, what);
}

std::string check_text(const std::string& message) {
  const auto at = message.find("' at ");
  const auto line = message.find(": ", at == std::string::npos ? 0 : at);
  if (at == std::string::npos || line == std::string::npos) return message;
  return message.substr(0, at + 1) + ": " + message.substr(line + 2);
}

std::vector<std::string> sync_delay_notes(const gpu::GpuCase& c, const int* sites, int site_count,
                                          const char* header) {
  std::vector<std::string> out;
  for (int r = 0; r < c.ranks && site_count > 0; ++r) {
    const gpu::SyncDelay d =
        gpu::sync_delay_for(c.delay_seed, r, c.delay_max_ns, sites, site_count);
    if (d.line != 0)
      out.push_back(fmt::format(
          "in-kernel hold: rank {} holds block {} (modulo the grid) for {} ns at line {} of {}, "
          "every call",
          r, d.block, d.ns, d.line, header));
  }
  return out;
}

}  // namespace fusioncheck::adapters::fi
