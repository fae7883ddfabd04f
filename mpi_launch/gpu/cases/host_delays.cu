// The seeded delays of the host-bounded wait (host_bounded_wait.hpp): pauses and SM hogs; and
// the device-side fill an adapter restores its sentinels with.
#include "fusioncheck/gpu/host_bounded_wait.hpp"

#include <algorithm>

#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::gpu {
namespace {

// Spins for `ns` nanoseconds of the global timer (whatever the clock rate), bounded in cycles.
__device__ void spin_for(std::uint64_t ns) {
  const long long start = clock64();
  std::uint64_t t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns && clock64() - start < (1ll << 34));
}

__global__ void pause_kernel(std::uint32_t ns) { spin_for(ns); }

// Fills every thread slot of the SMs it lands on (1024-thread blocks, two per SM) and lets
// them go one by one: block b spins for spread_ns * b / blocks. A kernel launched behind it
// on another stream then starts its blocks as SMs come free, spread over that time, as a
// busy GPU would start them.
__global__ void hog_kernel(std::uint32_t spread_ns) {
  spin_for(static_cast<std::uint64_t>(spread_ns) * blockIdx.x / gridDim.x);
}

__global__ void fill16_kernel(std::uint16_t* dst, std::uint64_t count, std::uint16_t value) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride)
    dst[i] = value;
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

std::uint32_t delay_for(std::uint32_t seed, int rank, std::uint32_t call_index,
                        std::uint32_t max_ns) {
  const std::uint32_t h =
      mix(seed ^ mix(static_cast<std::uint32_t>(rank) * 0x9e3779b9u ^ mix(call_index + 1)));
  if ((h & 1u) == 0 || max_ns == 0) return 0;
  return (h >> 1) % (max_ns + 1);
}

SyncDelay sync_delay_for(std::uint32_t seed, int rank, std::uint32_t max_ns, const int* sites,
                         int site_count) {
  const std::uint32_t h = mix(seed * 0xc2b2ae35u ^ mix(static_cast<std::uint32_t>(rank) + 13u));
  if (seed == 0 || max_ns == 0 || site_count <= 0 || sites == nullptr || (h & 1u) == 0) return {};
  const std::uint32_t g = mix(h);
  SyncDelay d;
  d.line = sites[(h >> 1) % static_cast<std::uint32_t>(site_count)];
  d.block = static_cast<int>(g % 1024u);
  d.ns = max_ns / 2 + (g >> 10) % (max_ns - max_ns / 2 + 1);
  return d;
}

bool staggered_start_for(std::uint32_t seed, int rank, std::uint32_t call_index) {
  return (mix(seed * 0x85ebca6bu ^ mix(static_cast<std::uint32_t>(rank) ^ mix(call_index + 7))) &
          1u) != 0;
}

void launch_sm_hog(std::uint32_t spread_ns, int sm_count, cudaStream_t stream) {
  hog_kernel<<<2 * sm_count, 1024, 0, stream>>>(spread_ns);
  kernels::cuda_check(cudaGetLastError(), "host-bounded wait: SM hog kernel");
}

void preload_device_kernels() {
  cudaFuncAttributes attributes{};
  kernels::cuda_check(cudaFuncGetAttributes(&attributes, hog_kernel),
                      "host-bounded wait: loading the SM hog kernel");
  kernels::cuda_check(cudaFuncGetAttributes(&attributes, pause_kernel),
                      "host-bounded wait: loading the pause kernel");
  kernels::cuda_check(cudaFuncGetAttributes(&attributes, fill16_kernel),
                      "host-bounded wait: loading the fill kernel");
}

void fill16_on_device(void* dst, std::uint64_t bytes, std::uint16_t value, cudaStream_t stream) {
  const std::uint64_t count = bytes / 2;
  if (count == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>((count + 255) / 256, 4096));
  fill16_kernel<<<blocks, 256, 0, stream>>>(static_cast<std::uint16_t*>(dst), count, value);
  kernels::cuda_check(cudaGetLastError(), "device fill kernel");
}

void launch_pause(std::uint32_t ns, cudaStream_t stream) {
  pause_kernel<<<1, 1, 0, stream>>>(ns);
  kernels::cuda_check(cudaGetLastError(), "host-bounded wait: pause kernel");
}

}  // namespace fusioncheck::gpu
