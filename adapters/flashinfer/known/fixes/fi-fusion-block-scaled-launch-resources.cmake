# Fix of fi-fusion-block-scaled-launch-resources: the launcher's last check bounds the block by
# what the register file holds (max_threads_per_block, from the kernel's registers per thread)
# instead of 1024, so that a block widened for the MXFP8 or per-token-group FP8 scale groups
# beyond it is refused with FlashInfer's own message before the launch, not by the CUDA launch
# ("too many resources requested for launch"). No block of these kernels fits such a shape:
# a cluster must cover whole groups, and every narrower block splits one.
set(FC_PATCH_MUTANT fi-fusion-block-scaled-launch-resources)
set(FC_PATCH_HEADER trtllm_allreduce_fusion.cuh)
set(FC_PATCH_WHERE "allreduce_fusion_kernel_launcher, the final block check (0.7.4: line 1982)")
set(FC_PATCH_OLD [==[  FLASHINFER_CHECK(block_size <= 1024 && cluster_size > 0,
                   "block_size > 1024 or cluster_size <= 0");]==])
set(FC_PATCH_NEW [==[  FLASHINFER_CHECK(block_size <= max_threads_per_block && cluster_size > 0,
                   "no launch configuration fits: a block of ", block_size,
                   " threads needs more registers than an SM has (at most ", max_threads_per_block,
                   " threads at this kernel's register count), or cluster_size <= 0");]==])
