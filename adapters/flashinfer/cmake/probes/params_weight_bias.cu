// Compile probe (probes.cmake): AllReduceFusionParams has weight_bias (Gemma-style RMSNorm,
// (weight_bias + gamma)).
#include "fusion_header.cuh"

float fc_probe_weight_bias(
    flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>& p) {
  p.weight_bias = 1.0f;
  return p.weight_bias;
}
