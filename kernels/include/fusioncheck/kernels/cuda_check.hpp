#pragma once
// The one CUDA error check of the project: a failed CUDA runtime call becomes CudaError
// (types.hpp) naming the call; FC_CUDA_CHECK adds the source location.
#include <cuda_runtime.h>

#include <string>

#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::kernels {

inline void cuda_check(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) throw CudaError(what + " failed: " + cudaGetErrorString(status));
}

}  // namespace fusioncheck::kernels

#define FC_CUDA_CHECK(call)           \
  ::fusioncheck::kernels::cuda_check( \
      (call), std::string(#call) + " (" __FILE__ ":" + std::to_string(__LINE__) + ")")
