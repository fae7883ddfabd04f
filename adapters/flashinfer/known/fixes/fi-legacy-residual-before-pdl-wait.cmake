# Fix of fi-legacy-residual-before-pdl-wait: lamport_style_one_shot_all_reduce_norm_kernel
# waits for the grid before it loads residual_in, bias and gamma (as the file's other norm
# kernels do), so that a kernel before it under PDL has written them. A copy of the pinned
# tree with this fix is what the ledger's absent state and the reproducer's "fixed" run use
# (ci/fixed_flashinfer_tree.sh).
set(FC_PATCH_MUTANT fi-legacy-residual-before-pdl-wait)
set(FC_PATCH_HEADER trtllm_allreduce.cuh)
set(FC_PATCH_WHERE "lamport_style_one_shot_all_reduce_norm_kernel, the loads and the wait (0.7.4: lines 743-752)")
set(FC_PATCH_OLD [==[  vec_t<T, VEC_SIZE> weight_vec, bias_vec, residual_vec;
  residual_vec.load(residual_buffer);]==])
set(FC_PATCH_NEW [==[  vec_t<T, VEC_SIZE> weight_vec, bias_vec, residual_vec;
  cudaGridDependencySynchronize();  // before any input is read
  residual_vec.load(residual_buffer);]==])
set(FC_PATCH_OLD_2 [==[    weight_vec.load(weight_buffer);
  }

  cudaGridDependencySynchronize();

  float acc = 0.f;]==])
set(FC_PATCH_NEW_2 [==[    weight_vec.load(weight_buffer);
  }

  float acc = 0.f;]==])
