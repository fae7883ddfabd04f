#pragma once
// One call of FlashInfer's allreduce fusion, in plain types: the adapter fills it, an
// instance library (fi_instance.cu.in, the only code that includes FlashInfer's header)
// turns it into AllReduceFusionParams and launches.
#include <cuda_runtime.h>

#include <cstddef>

namespace fusioncheck::adapters::fi {

struct FiCall {
  int nranks = 2;
  int rank = 0;
  int tokens = 1;
  int hidden = 8;
  bool bf16 = true;    // else fp16
  int pattern = 1;     // FlashInfer's AllReduceFusionPattern value
  int sf_layout = 0;   // FlashInfer's QuantizationSFLayout value (NVFP4 scales)
  void** workspace = nullptr;  // device: the 3N+1 pointer table
  const void* input = nullptr;
  const void* residual_in = nullptr;
  const void* gamma = nullptr;
  void* allreduce_out = nullptr;
  void* residual_out = nullptr;
  void* norm_out = nullptr;
  void* quant_out = nullptr;
  void* scale_out = nullptr;
  float* scale_factor = nullptr;  // device: FP8 static scale or NVFP4 global scale
  float eps = 1e-6f;
  float weight_bias = 0.0f;
  bool oneshot = true;
  bool trigger_at_end = true;
  bool pdl = true;
  bool fp32_acc = false;
  cudaStream_t stream = nullptr;
};

// Launches one call; cudaSuccess, or the error with FlashInfer's message (its checks throw)
// in `message` (at most `message_size` bytes, NUL-terminated).
using LaunchFn = cudaError_t (*)(const FiCall& call, char* message, std::size_t message_size);

}  // namespace fusioncheck::adapters::fi
