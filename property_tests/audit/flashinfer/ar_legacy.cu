// Audit instance of flashinfer/comm/trtllm_allreduce.cuh (the older custom allreduce): bf16,
// 2 ranks, push mode. Not customAllReduce itself: it fans out to 5 rank counts x 8 flag
// combinations; these two launchers reach every kernel family of the header once.
#include "flashinfer/comm/trtllm_allreduce.cuh"

namespace far = flashinfer::trtllm_allreduce;
using bf16 = __nv_bfloat16;

// Plain allreduce: oneShotAllReduceKernel and twoShotAllReduceKernel.
template cudaError_t far::AllReduceDispatch<bf16, 2, true, false>(far::AllReduceStrategyType,
                                                                  far::AllReduceFusionOp,
                                                                  far::AllReduceParams<bf16>&, bool,
                                                                  cudaStream_t);
// + residual + RMSNorm (gamma, no bias): Lamport one-shot (cluster sizes 1..8), the barrier
// one-shot and pre-norm kernels, rms_norm(_pre_post)_kernel and the fused two-shot.
template cudaError_t far::AllReduceNormKernelLaunch<bf16, 2, true, false, false, true>(
    far::AllReduceStrategyType, far::AllReduceFusionOp, far::AllReduceParams<bf16>&, bool,
    cudaStream_t);
// The -0.0 fill of the Lamport buffers (not PDL-launched).
template cudaError_t far::lamportInitialize<bf16>(void*, size_t, cudaStream_t);
