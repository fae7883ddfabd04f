# Negative control: the one-shot kernel clears the previous call's Lamport buffer with the
# size of the current call instead of the size recorded by the previous call. When the
# token count shrinks, stale data of the previous call is left behind and read as
# arrived two calls later. Bug class: TensorRT-LLM issue 6237 (docs/design.md).
set(FC_PATCH_MUTANT clear-size-current)
set(FC_PATCH_WHERE "allreduce_fusion_kernel_oneshot_lamport, clear_access (0.7.4: line 1666)")
set(FC_PATCH_OLD [==[  int clear_access = comm.clear_size / VEC_SIZE;]==])
set(FC_PATCH_NEW [==[  int clear_access = params.size * NRanks / VEC_SIZE;  // fusioncheck patch clear-size-current]==])
