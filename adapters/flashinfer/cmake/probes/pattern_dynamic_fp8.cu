// Compile probe (probes.cmake): the fusion has the per-token dynamic FP8 pattern that also
// writes norm_out (kARResidualRMSNormOutDynamicFP8Quant).
#include "fusion_header.cuh"

int fc_probe_dynamic_fp8() {
  return static_cast<int>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern::
                              kARResidualRMSNormOutDynamicFP8Quant);
}
