// FlashInfer's refusals and launch errors (host_wait.hpp).
#include "host_wait.hpp"

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

}  // namespace fusioncheck::adapters::fi
