// The automatic one-/two-shot choice, and the spin kernel gpu bench queues its graphs behind.
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "device_workspace.hpp"
#include "instances.hpp"

namespace fusioncheck::kernels {

LaunchInfo launch_automatic(const FusedParams& p, Workspace& ws, cudaStream_t stream) {
  const std::uint64_t bytes =
      static_cast<std::uint64_t>(p.tokens) * p.hidden * dtype_bytes(p.dtype);
  const bool twoshot = twoshot_preferred(p.ranks, bytes, ws.ranks_on_device());
  LaunchInfo info = twoshot ? launch_twoshot(p, ws, stream) : launch_oneshot(p, ws, stream);
  info.twoshot = twoshot;
  return info;
}

int detail::ranks_sharing_reported_sms(int ranks_on_device) {
  const char* percent = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  const int p = percent != nullptr ? std::atoi(percent) : 0;
  // A percentage that gives every rank of the GPU its own share (p x ranks <= 100) is this
  // rank's share; a larger one (set by hand) may overlap the others' and is not trusted.
  return p > 0 && p * std::max(1, ranks_on_device) <= 100 ? 1 : std::max(1, ranks_on_device);
}

namespace {
__global__ void fc_spin_kernel(std::uint64_t ns) {
  std::uint64_t t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
}  // namespace

cudaError_t detail::preload_spin_kernel() {  // see preload_kernels (launch.hpp)
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, fc_spin_kernel);
}

void launch_spin(std::uint64_t ns, cudaStream_t stream) {
  fc_spin_kernel<<<1, 1, 0, stream>>>(ns);
  FC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fusioncheck::kernels
