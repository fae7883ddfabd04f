// DeviceByteScanner (byte_scan.hpp): a grid-stride scan of 16-byte words, the unaligned head
// and tail byte by byte; every non-zero byte found offers (index << 8) | value to one atomicMin.
#include <algorithm>

#include "fusioncheck/kernels/byte_scan.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::kernels {
namespace {

constexpr unsigned long long kNoneFound = ~0ull;

__device__ void offer(unsigned long long* found, std::uint64_t index, std::uint8_t value) {
  atomicMin(found, (static_cast<unsigned long long>(index) << 8) | value);
}

// [0, head) and [head + 16 * words, bytes) byte by byte; the words between as uint4.
__global__ void first_nonzero_kernel(const std::uint8_t* base, std::uint64_t head,
                                     std::uint64_t words, std::uint64_t bytes,
                                     unsigned long long* found) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  const std::uint64_t tid = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const auto* vec = reinterpret_cast<const uint4*>(base + head);
  for (std::uint64_t w = tid; w < words; w += stride) {
    const uint4 v = vec[w];
    if ((v.x | v.y | v.z | v.w) == 0) continue;
    const std::uint8_t* b = base + head + 16 * w;
    for (int i = 0; i < 16; ++i)
      if (b[i] != 0) {
        offer(found, head + 16 * w + i, b[i]);
        break;
      }
  }
  const std::uint64_t tail = head + 16 * words;
  for (std::uint64_t i = tid; i < head + (bytes - tail); i += stride) {
    const std::uint64_t at = i < head ? i : tail + (i - head);
    if (base[at] != 0) offer(found, at, base[at]);
  }
}

}  // namespace

DeviceByteScanner::DeviceByteScanner() {
  FC_CUDA_CHECK(cudaMalloc(&found_, sizeof(*found_)));
  FC_CUDA_CHECK(cudaMallocHost(&host_found_, sizeof(*host_found_)));
}

DeviceByteScanner::~DeviceByteScanner() {  // teardown must not throw
  if (device_stuck()) return;  // freeing would wait for the stuck kernel: left to the exit
  if (found_ != nullptr) (void)cudaFree(found_);
  if (host_found_ != nullptr) (void)cudaFreeHost(host_found_);
}

ByteScan DeviceByteScanner::first_nonzero(const void* device, std::uint64_t bytes,
                                          cudaStream_t stream) {
  ByteScan out;
  out.first_nonzero = bytes;
  if (bytes == 0) return out;
  const auto* base = static_cast<const std::uint8_t*>(device);
  const std::uint64_t misalign = reinterpret_cast<std::uintptr_t>(base) % 16;
  const std::uint64_t head = std::min<std::uint64_t>(bytes, misalign == 0 ? 0 : 16 - misalign);
  const std::uint64_t words = (bytes - head) / 16;
  FC_CUDA_CHECK(cudaMemsetAsync(found_, 0xff, sizeof(*found_), stream));
  const std::uint64_t wanted = std::max<std::uint64_t>(1, (words + 255) / 256);
  const unsigned blocks = static_cast<unsigned>(std::min<std::uint64_t>(wanted, 1024));
  first_nonzero_kernel<<<blocks, 256, 0, stream>>>(base, head, words, bytes, found_);
  FC_CUDA_CHECK(cudaGetLastError());
  FC_CUDA_CHECK(
      cudaMemcpyAsync(host_found_, found_, sizeof(*found_), cudaMemcpyDeviceToHost, stream));
  FC_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (*host_found_ != kNoneFound) {
    out.first_nonzero = *host_found_ >> 8;
    out.value = static_cast<std::uint8_t>(*host_found_ & 0xff);
  }
  return out;
}

}  // namespace fusioncheck::kernels
