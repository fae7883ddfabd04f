#pragma once
// Owning device allocation for the launcher's inputs and outputs; throws on failure.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::gpu {

using kernels::cuda_check;

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : DeviceBuffer(bytes, 0) {}
  // The buffer `offset` bytes into its allocation, as a caching allocator places a tensor: a
  // kernel that shares the buffer's address as if it began an allocation is caught.
  DeviceBuffer(std::size_t bytes, std::size_t offset) : bytes_(bytes) {
    if (bytes_ == 0) return;
    cuda_check(cudaMalloc(&base_, bytes_ + offset), "cudaMalloc");
    ptr_ = static_cast<char*>(base_) + offset;
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), ptr_(std::exchange(other.ptr_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(base_, other.base_);
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (base_ && !kernels::device_stuck()) cudaFree(base_);  // else left to the process's exit
  }

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  // Ordered on `stream`, before the kernel that reads it. (A plain cudaMemcpy from pageable
  // memory returns once the bytes are staged, and its DMA runs on the legacy stream, which a
  // non-blocking stream does not wait for: under MPS the DMA was seen to land after the
  // kernel had read the buffer, docs/flashinfer.md.) The host buffer may be reused on return.
  void upload(const void* host, std::size_t bytes, cudaStream_t stream) {
    cuda_check(cudaMemcpyAsync(ptr_, host, bytes, cudaMemcpyHostToDevice, stream), "upload");
  }
  void download(void* host, std::size_t bytes) const {
    cuda_check(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost), "download");
  }
  // Fills the first `bytes` with a byte pattern (0xFF makes every 16-bit element a NaN: the
  // output canary), ordered on `stream` before the kernel that must overwrite it. (A plain
  // cudaMemset runs on the legacy stream, which does not order against a non-blocking one.)
  void fill(int byte, cudaStream_t stream, std::size_t bytes) {
    cuda_check(cudaMemsetAsync(ptr_, byte, std::min(bytes, bytes_), stream), "cudaMemsetAsync");
  }

 private:
  void* base_ = nullptr;  // the allocation
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace fusioncheck::gpu
