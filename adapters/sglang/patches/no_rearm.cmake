# Negative control: the one-shot consumer does not store +0 back into the slots it read, so the
# next call of that phase finds last call's data there and sums it without waiting.
set(FC_PATCH_MUTANT sglang-no-rearm)
set(FC_PATCH_HEADER custom_all_reduce.cuh)
set(FC_PATCH_WHERE "all_reduce_1shot_push_kernel (0.5.23: line 205)")
set(FC_PATCH_OLD [==[    for (uint32_t i = 0; i < kWorldSize; ++i) {
      ptx::st_global_16B(pos_zero_vec, poll_ptrs[i], vid);
    }]==])
set(FC_PATCH_NEW [==[    // fusioncheck patch sglang-no-rearm: the slots read are not re-armed]==])
