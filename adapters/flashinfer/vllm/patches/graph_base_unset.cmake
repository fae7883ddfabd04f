# Negative control: get_graph_buffer_ipc_meta does not look up the base of a captured input's
# allocation (FlashInfer#1894 fixed its use unset): the input's own address is shared with
# offset 0, so a peer opens the allocation and reads from its start, not from the input.
set(FC_PATCH_MUTANT vllm-graph-base-unset)
set(FC_PATCH_WHAT [==[a captured input's peers are registered at the input's own address instead of the base of its allocation, with offset 0: a peer opens the allocation and reads from its start]==])
set(FC_PATCH_REAL_WORLD [==[FlashInfer vllm_custom_all_reduce.cuh get_graph_buffer_ipc_meta before FlashInfer#1894 (the base pointer of a graph buffer was not looked up)]==])
set(FC_PATCH_HEADER vllm_custom_all_reduce.cuh)
set(FC_PATCH_WHERE "CustomAllreduce::get_graph_buffer_ipc_meta (0.7.4: line 371)")
set(FC_PATCH_OLD [==[      if (cuPointerGetAttribute(&base_ptr, rangeStartAddrAttr, (CUdeviceptr)ptr) != CUDA_SUCCESS)
        throw std::runtime_error("failed to get pointer attr");]==])
set(FC_PATCH_NEW [==[      base_ptr = ptr;  // fusioncheck patch vllm-graph-base-unset: the base not looked up]==])
