// Compile probe (probes.cmake): the fusion has the block-scaled FP8 patterns (MXFP8, 13 and 14;
// per-token-group FP8 with packed UE8M0 scales, 8 and 9) and their parameters.
#include "fusion_header.cuh"

int fc_probe_block_scaled_fp8() {
  namespace fif = flashinfer::trtllm_allreduce_fusion;
  fif::AllReduceFusionParams<float> p{};
  p.block_quant_group_size = 128;
  p.tma_aligned_mn = 4;
  return static_cast<int>(fif::AllReduceFusionPattern::kARResidualRMSNormOutMXFP8Quant) +
         static_cast<int>(fif::AllReduceFusionPattern::kARResidualRMSNormMXFP8Quant) +
         static_cast<int>(
             fif::AllReduceFusionPattern::kARResidualRMSNormOutPerTokenGroupFP8PackedQuant) +
         static_cast<int>(
             fif::AllReduceFusionPattern::kARResidualRMSNormPerTokenGroupFP8PackedQuant) +
         p.block_quant_group_size + p.tma_aligned_mn;
}
