// Audit instance of flashinfer/comm/ulysses_lowp.cuh (low-precision Ulysses all-to-all
// helpers, launched with PDL by the wheel's csrc/ulysses_lowp.cu): two of its kernels, bf16.
#include "flashinfer/comm/ulysses_lowp.cuh"

namespace ful = flashinfer::ulysses_lowp;

extern "C" const void* const fc_audit_ulysses_lowp_kernels[] = {
    reinterpret_cast<const void*>(&ful::QuantVFP8WithScaleKernel<__nv_bfloat16>),
    reinterpret_cast<const void*>(&ful::KSumVAmaxCombineKernel<128>),
};
