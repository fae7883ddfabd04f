// Audit instance of flashinfer/comm/moe_alltoall_lamport.cuh. Its launchers live in the
// wheel's csrc/, not in the header, so the kernels are taken by address: top-8 (fixed),
// bf16 payload, no rank mask.
#include "flashinfer/comm/moe_alltoall_lamport.cuh"

namespace fa2a = flashinfer::moe_alltoall_lamport;

extern "C" const void* const fc_audit_moe_a2a_kernels[] = {
    reinterpret_cast<const void*>(
        &fa2a::moeA2ALamportDispatchKernel<8, true, fa2a::kKindBf16, false>),
    reinterpret_cast<const void*>(&fa2a::moeA2ALamportCombineKernel<8, true, false>),
};
