// Audit instance of flashinfer/comm/trtllm_allreduce_fusion.cuh: bf16, 2 ranks. Each launcher
// holds both paths (one-shot Lamport, two-shot), so it instantiates both kernels. The FP4
// pattern is the one whose body differs between architectures (NVFP4 only on 100a/120a).
#include "flashinfer/comm/trtllm_allreduce_fusion.cuh"

namespace fif = flashinfer::trtllm_allreduce_fusion;
using P = fif::AllReduceFusionPattern;

template cudaError_t fif::allreduce_fusion_kernel_launcher<P::kAllReduce, __nv_bfloat16, 2, false>(
    fif::AllReduceFusionParams<__nv_bfloat16> const&, bool);
template cudaError_t
fif::allreduce_fusion_kernel_launcher<P::kARResidualRMSNorm, __nv_bfloat16, 2, false>(
    fif::AllReduceFusionParams<__nv_bfloat16> const&, bool);
template cudaError_t
fif::allreduce_fusion_kernel_launcher<P::kARResidualRMSNormOutFP4Quant, __nv_bfloat16, 2, false>(
    fif::AllReduceFusionParams<__nv_bfloat16> const&, bool);
