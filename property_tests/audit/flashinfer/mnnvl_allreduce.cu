// Audit instance of flashinfer/comm/trtllm_mnnvl_allreduce.cuh. Its only launchers dispatch
// over 6 world sizes x 6 quantisations; the kernels are taken by address instead (that
// instantiates them): bf16, 2 ranks, one-shot with and without RMSNorm, two-shot, and the
// Lamport RMSNorm that follows the two-shot.
#include "flashinfer/comm/trtllm_mnnvl_allreduce.cuh"

namespace fmn = flashinfer::trtllm_mnnvl_allreduce;
using bf16 = __nv_bfloat16;

extern "C" const void* const fc_audit_mnnvl_kernels[] = {
    reinterpret_cast<const void*>(&fmn::oneshotAllreduceFusionKernel<2, bf16, false>),
    reinterpret_cast<const void*>(&fmn::oneshotAllreduceFusionKernel<2, bf16, true>),
    reinterpret_cast<const void*>(&fmn::twoshotAllreduceKernel<2, bf16, true>),
    reinterpret_cast<const void*>(&fmn::rmsNormLamport<bf16>),
};
