# Upstream's fix reverted (FlashInfer 0.7.1; PR 5081 by its description): FusedOp, whose
# constructor loads rms_gamma and residual_in, constructed before the grid-dependency wait, in
# the one-shot and the two-shot kernel. Launched with PDL right behind the kernel that writes
# the residual, it reads the residual (and gamma) before they are written.
set(FC_PATCH_MUTANT revert-0.7.1-inputs-before-wait)
set(FC_PATCH_WHAT [==[FusedOp (loads residual_in and rms_gamma) constructed before the grid-dependency wait]==])
set(FC_PATCH_REAL_WORLD [==[FlashInfer 0.7.1 fix, reverted]==])
set(FC_PATCH_WHERE "allreduce_fusion_kernel_oneshot_lamport and _twoshot_sync, FusedOp (0.7.4: lines 1655-1664, 1725-1730)")
set(FC_PATCH_OLD [==[  clear_vec.fill(neg_zero_v<T>);

#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaGridDependencySynchronize();
  if constexpr (!TriggerCompletionAtEnd) {
    cudaTriggerProgrammaticLaunchCompletion();
  }
#endif
  // Constructed after the grid dependency sync: the constructor loads rms_gamma and
  // residual_in, and under PDL this kernel can start before the producer that writes
  // residual_in has completed.
  FusedOp<Pattern, T> fused_op(params, access_id, access_id_in_token);]==])
set(FC_PATCH_NEW [==[  clear_vec.fill(neg_zero_v<T>);
  FusedOp<Pattern, T> fused_op(params, access_id, access_id_in_token);  // fusioncheck patch revert-0.7.1-inputs-before-wait

#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaGridDependencySynchronize();
  if constexpr (!TriggerCompletionAtEnd) {
    cudaTriggerProgrammaticLaunchCompletion();
  }
#endif]==])
set(FC_PATCH_OLD_2 [==[#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaGridDependencySynchronize();
#endif
  // Constructed after the grid dependency sync, for the same reason as the one-shot
  // kernel above.
  FusedOp<Pattern, T> fused_op(params, access_id, access_id_in_token);]==])
set(FC_PATCH_NEW_2 [==[  FusedOp<Pattern, T> fused_op(params, access_id, access_id_in_token);  // fusioncheck patch revert-0.7.1-inputs-before-wait
#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaGridDependencySynchronize();
#endif]==])
