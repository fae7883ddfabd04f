# Negative control: the fenced barrier (the two-stage kernel's middle one) stores and polls its
# counters volatile instead of with release/acquire, as before vllm#2760: its counter store
# may become visible before the reduce-scatter's stores, and a peer gathers a stale part. The
# barrier's closing __syncthreads stays. Expected to survive where the ranks share one GPU (one
# coherent L2); the sim's model of the barrier kills it.
set(FC_PATCH_MUTANT vllm-no-fence)
set(FC_PATCH_HEADER vllm_custom_all_reduce.cuh)
set(FC_PATCH_WHERE "multi_gpu_barrier (0.7.4: lines 203-204)")
set(FC_PATCH_OLD [==[      st_flag_release(peer_counter_ptr, val);
      while (ld_flag_acquire(self_counter_ptr) != val);]==])
set(FC_PATCH_NEW [==[      // fusioncheck patch vllm-no-fence: volatile, no release/acquire
      st_flag_volatile(peer_counter_ptr, val);
      while (ld_flag_volatile(self_counter_ptr) != val);]==])
