// Audit instance of flashinfer/comm/trtllm_moe_allreduce_fusion.cuh: bf16, 2 ranks, both
// one-shot Lamport launchers (MoE reduction, MoE finalize) with residual + RMSNorm outputs.
#include "flashinfer/comm/trtllm_moe_allreduce_fusion.cuh"

namespace fmoe = flashinfer::trtllm_moe_allreduce_fusion;
using bf16 = __nv_bfloat16;

// <T, NRanks, AllReduceOut, ResidualOut, NormOut, QuantOut>
template cudaError_t fmoe::moereduction_allreduce_fusion_kernel_launcher<
    bf16, 2, false, true, true, false>(fmoe::MoeReductionAllReduceFusionParams<bf16> const&, bool);
// <T, NRanks, ResidualOut, NormOut, QuantOut>
template cudaError_t fmoe::moefinalize_allreduce_fusion_kernel_launcher<bf16, 2, true, true, false>(
    fmoe::MoeFinalizeAllReduceFusionParams<bf16> const&, bool);
