# Negative control: the one-stage kernel returns without its end barrier. A rank that finished
# reading copies its next input into its registered buffer while a slower peer still reads
# the current one from there: that peer sums a mix of two calls.
set(FC_PATCH_MUTANT vllm-no-end-barrier)
set(FC_PATCH_HEADER vllm_custom_all_reduce.cuh)
set(FC_PATCH_WHERE "cross_device_reduce_1stage (0.7.4: line 237)")
set(FC_PATCH_OLD [==[    ((P*)result)[idx] = packed_reduce<P, ngpus, A>((const P**)&dp.ptrs[0], idx);
  }
  multi_gpu_barrier<ngpus, false>(sg, self_sg, rank);]==])
set(FC_PATCH_NEW [==[    ((P*)result)[idx] = packed_reduce<P, ngpus, A>((const P**)&dp.ptrs[0], idx);
  }
  // fusioncheck patch vllm-no-end-barrier: no end barrier]==])
