#pragma once
// CUDA runtime errors become CudaError (types.hpp) naming the call and where it was made.
#include <cuda_runtime.h>

#include <string>

#include "fusioncheck/kernels/types.hpp"

#define FC_CUDA_CHECK(call)                                                                  \
  do {                                                                                       \
    const cudaError_t fc_err_ = (call);                                                      \
    if (fc_err_ != cudaSuccess)                                                              \
      throw ::fusioncheck::kernels::CudaError(std::string(#call) + " failed: " +             \
                                              cudaGetErrorString(fc_err_) + " (" __FILE__ ":" + \
                                              std::to_string(__LINE__) + ")");               \
  } while (0)
