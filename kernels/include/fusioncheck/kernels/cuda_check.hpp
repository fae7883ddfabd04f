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

// The errors after which every CUDA call of the process fails: a kernel faulted (an illegal
// address, say), here or, under MPS, in a client sharing the GPU.
inline bool is_sticky_error(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorMpsClientTerminated: return true;
    default: return false;
  }
}

// A kernel that nothing can end is still running (another project's unbounded poll, still
// spinning after its buffers were released): any synchronising call would wait for it for
// ever. Or the context is lost to a sticky error, and another project's destructor that checks
// its CUDA calls would throw from a destructor. Either way, destructors leave device memory to
// the process's exit instead of freeing it, so that the error reaches the top and the process
// ends with its diagnosis.
inline std::atomic<bool>& device_stuck_flag() {
  static std::atomic<bool> stuck{false};
  return stuck;
}
inline void mark_device_stuck() { device_stuck_flag().store(true); }
inline bool device_stuck() {
  return device_stuck_flag().load() || is_sticky_error(cudaPeekAtLastError());
}

}  // namespace fusioncheck::kernels

#define FC_CUDA_CHECK(call)           \
  ::fusioncheck::kernels::cuda_check( \
      (call), std::string(#call) + " (" __FILE__ ":" + std::to_string(__LINE__) + ")")
