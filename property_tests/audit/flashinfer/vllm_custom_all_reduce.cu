// Audit instance of flashinfer/comm/vllm_custom_all_reduce.cuh (vLLM's custom allreduce; not
// launched with PDL): its bf16 launcher, which holds the 1-stage and 2-stage kernels for
// 2, 4, 6 and 8 GPUs.
#include "flashinfer/comm/vllm_custom_all_reduce.cuh"

template void vllm::CustomAllreduce::allreduce<nv_bfloat16>(cudaStream_t, nv_bfloat16*,
                                                            nv_bfloat16*, int, int, int);
