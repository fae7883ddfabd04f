#include "fi_device.hpp"

#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::adapters::fi {
namespace {

__global__ void pause_kernel(std::uint32_t ns) {
  const long long start = clock64();
  // globaltimer counts nanoseconds; the loop ends after `ns` whatever the clock rate.
  std::uint64_t t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns && clock64() - start < (1ll << 34));
}

std::uint32_t mix(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

}  // namespace

std::uint32_t delay_for(std::uint32_t seed, int rank, std::uint32_t call_index, std::uint32_t max_ns) {
  const std::uint32_t h = mix(seed ^ mix(static_cast<std::uint32_t>(rank) * 0x9e3779b9u ^ mix(call_index + 1)));
  if ((h & 1u) == 0 || max_ns == 0) return 0;
  return (h >> 1) % (max_ns + 1);
}

void launch_pause(std::uint32_t ns, cudaStream_t stream) {
  pause_kernel<<<1, 1, 0, stream>>>(ns);
  kernels::cuda_check(cudaGetLastError(), "FlashInfer adapter: pause kernel");
}

}  // namespace fusioncheck::adapters::fi
