# Negative control: the two-stage kernel's middle barrier called without need_fence, so without
# its release/acquire and without its closing __syncthreads: only the block's barrier lanes wait
# for the peers, and its other threads gather peers' parts before those are written. A race
# inside the kernel that a block held at the barrier's exit shows.
set(FC_PATCH_MUTANT vllm-mid-barrier-unfenced)
set(FC_PATCH_WHAT [==[the two-stage kernel's middle barrier without need_fence: no release/acquire and no closing __syncthreads, so a block's threads gather peers' parts while only its barrier lanes wait for the peers (a race inside the kernel)]==])
set(FC_PATCH_REAL_WORLD [==[vLLM custom_all_reduce.cuh: multi_gpu_barrier<ngpus, false, true> in cross_device_reduce_2stage]==])
set(FC_PATCH_HEADER vllm_custom_all_reduce.cuh)
set(FC_PATCH_WHERE "cross_device_reduce_2stage (0.7.4: line 271)")
set(FC_PATCH_OLD [==[  multi_gpu_barrier<ngpus, false, true>(sg, self_sg, rank);]==])
set(FC_PATCH_NEW [==[  multi_gpu_barrier<ngpus, false, false>(sg, self_sg, rank);  // fusioncheck patch vllm-mid-barrier-unfenced]==])
