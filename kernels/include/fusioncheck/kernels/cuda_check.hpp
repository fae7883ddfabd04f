#pragma once
// The one CUDA error check of the project: a failed CUDA runtime call becomes CudaError
// (types.hpp) naming the call; FC_CUDA_CHECK adds the source location.
#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::kernels {

inline void cuda_check(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) throw CudaError(what + " failed: " + cudaGetErrorString(status));
}

// A kernel that nothing can end is still running (another project's unbounded poll, still
// spinning after its buffers were released): any synchronising call would wait for it for
// ever. Once marked, destructors leave device memory to the process's exit instead of freeing
// it, so that the error reaches the top and the process ends with its diagnosis.
inline std::atomic<bool>& device_stuck_flag() {
  static std::atomic<bool> stuck{false};
  return stuck;
}
inline void mark_device_stuck() { device_stuck_flag().store(true); }
inline bool device_stuck() { return device_stuck_flag().load(); }

}  // namespace fusioncheck::kernels

#define FC_CUDA_CHECK(call)           \
  ::fusioncheck::kernels::cuda_check( \
      (call), std::string(#call) + " (" __FILE__ ":" + std::to_string(__LINE__) + ")")
