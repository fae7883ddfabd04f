#pragma once
// One call of FlashInfer's allreduce fusion, in plain types: the adapter fills it, an
// instance library (fi_instance.cu.in, the only code that includes FlashInfer's header)
// turns it into AllReduceFusionParams and launches.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fusioncheck::adapters::fi {

struct FiCall {
  int nranks = 2;
  int rank = 0;
  int tokens = 1;
  int hidden = 8;
  bool bf16 = true;            // else fp16
  int pattern = 1;             // FlashInfer's AllReduceFusionPattern value
  int sf_layout = 0;           // FlashInfer's QuantizationSFLayout value (NVFP4, MXFP8 scales)
  int group_size = 0;          // block_quant_group_size (per-token-group FP8)
  int tma_aligned_mn = 0;      // padded token count of its packed scales (>= tokens)
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

// One call of FlashInfer's MoE allreduce fusion (trtllm_moe_allreduce_fusion.cuh): the
// reduction kernel (moereduction_allreduce_fusion_op) or the finalize kernel
// (moefinalize_allreduce_fusion_op), as its Python binding fills their parameters.
struct FiMoeCall {
  int nranks = 2;
  int rank = 0;
  int tokens = 1;
  int hidden = 8;
  bool bf16 = true;  // else fp16
  bool finalize = false;
  void** workspace = nullptr;               // device: the 3N+1 pointer table (the fusion kernel's)
  int experts = 1;                          // moe_reduction_device_num_experts, or top_k
  const void* expert_rows = nullptr;        // active_experts_token_input, or allreduce_in
  const float* reduction_scales = nullptr;  // moe_reduction_scale_input
  const void* token_rows = nullptr;         // moe_reduction_token_input, or shared_expert_output
  const std::int32_t* permuted_index = nullptr;  // expanded_idx_to_permuted_idx
  const void* topk_scales = nullptr;             // expert_scale_factor
  float routed_scaling = 1.0f;
  const void* residual_in = nullptr;
  const void* gamma = nullptr;
  void* allreduce_out = nullptr;  // moe_allreduce_out (reduction only)
  void* residual_out = nullptr;
  void* norm_out = nullptr;
  void* quant_out = nullptr;
  void* scale_out = nullptr;
  float scale_factor = 1.0f;  // NVFP4 global scale (a value here, not a pointer)
  int sf_layout = 0;
  float eps = 1e-6f;
  float weight_bias = 0.0f;
  bool pdl = true;
  cudaStream_t stream = nullptr;
};
using MoeLaunchFn = cudaError_t (*)(const FiMoeCall& call, char* message, std::size_t message_size);
// The plans of the in-kernel delay (fi_sync_delay.cuh's kFcSyncDelayPlans, checked there).
inline constexpr int kSyncDelayPlans = 8;
// Sets plan `slot` of the in-kernel delay (fi_sync_delay.cuh) of the calls enqueued behind it
// on `stream`.
using SyncDelayFn = cudaError_t (*)(int slot, int line, int block, std::uint32_t ns,
                                    cudaStream_t stream);

// Launches one call; cudaSuccess, or the error with FlashInfer's message (its checks throw)
// in `message` (at most `message_size` bytes, NUL-terminated).
using LaunchFn = cudaError_t (*)(const FiCall& call, char* message, std::size_t message_size);

// One call of the older Lamport kernel (flashinfer/comm/trtllm_allreduce.cuh,
// lamport_style_one_shot_all_reduce_norm_kernel): residual + RMSNorm with gamma, no bias.
struct LegacyCall {
  int nranks = 2;
  int rank = 0;
  int tokens = 1;
  int hidden = 256;
  bool bf16 = true;  // else fp16
  // lamport[b][r]: rank r's Lamport buffer b (b = 0, 1, 2) as mapped in this process.
  void* lamport[3][16] = {};
  std::uint32_t flag = 0;  // the host-held barrier_flag, the same on every rank for a call
  const void* input = nullptr;
  const void* residual_in = nullptr;
  const void* gamma = nullptr;
  void* residual_out = nullptr;  // FlashInfer's intermediate_buffer
  void* norm_out = nullptr;      // FlashInfer's local_output_buffer_ptr
  float eps = 1e-6f;
  bool pdl = true;
  cudaStream_t stream = nullptr;
};

}  // namespace fusioncheck::adapters::fi

// The legacy instance library's one export (fi_legacy_instance.cu): cudaErrorNotSupported
// for a rank count it is not built for, cudaErrorInvalidValue with FlashInfer's message for
// what its launcher refuses.
extern "C" cudaError_t fc_fi_legacy_launch(const fusioncheck::adapters::fi::LegacyCall& call,
                                           char* message, std::size_t message_size);
