#pragma once
// The first non-zero byte of a device range, found where the range lies: a kernel scans it and
// eight bytes come back, instead of the range crossing PCIe to be scanned on the host (a
// protocol's scratch regions are megabytes, checked after every group of calls).
#include <cuda_runtime.h>

#include <cstdint>

namespace fusioncheck::kernels {

struct ByteScan {
  std::uint64_t first_nonzero = 0;  // the range's size when every byte is zero
  std::uint8_t value = 0;           // the byte there
};

class DeviceByteScanner {
 public:
  DeviceByteScanner();
  ~DeviceByteScanner();
  DeviceByteScanner(const DeviceByteScanner&) = delete;
  DeviceByteScanner& operator=(const DeviceByteScanner&) = delete;

  // Enqueued on `stream` behind what it holds, then waited for. `device` needs no alignment.
  ByteScan first_nonzero(const void* device, std::uint64_t bytes, cudaStream_t stream);

 private:
  unsigned long long* found_ = nullptr;       // device: (index << 8) | byte, the lowest wins
  unsigned long long* host_found_ = nullptr;  // pinned
};

}  // namespace fusioncheck::kernels
