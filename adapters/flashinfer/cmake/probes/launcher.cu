// Compile probe (probes.cmake): the launcher the adapter calls, with its signature, and the
// parameter fields every release the adapter drives has. Unevaluated (decltype): no kernel is
// instantiated, so the probe compiles in seconds.
#include <type_traits>

#include "fusion_header.cuh"

namespace fif = flashinfer::trtllm_allreduce_fusion;

using FcProbeLauncher =
    decltype(&fif::allreduce_fusion_kernel_launcher<fif::AllReduceFusionPattern::kARResidualRMSNorm,
                                                    __nv_bfloat16, 2, true>);
static_assert(
    std::is_same_v<FcProbeLauncher,
                   cudaError_t (*)(fif::AllReduceFusionParams<__nv_bfloat16> const&, bool)>,
    "allreduce_fusion_kernel_launcher<Pattern, T, NRanks, Fp32Acc>(params, launch_with_pdl)");

void fc_probe_fields(fif::AllReduceFusionParams<__nv_bfloat16>& p) {
  p.trigger_completion_at_end = true;
  p.use_oneshot = true;
  p.layout = flashinfer::QuantizationSFLayout::SWIZZLED_128x4;
  p.pattern = fif::AllReduceFusionPattern::kARResidualRMSNormOutFP4Quant;
}
