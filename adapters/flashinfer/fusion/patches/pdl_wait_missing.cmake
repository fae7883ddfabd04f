# Negative control: the one-shot kernel's grid-dependency wait compiled out for sm_120 (an
# arch guard written as `< 1200`), while the host still launches it with PDL: on sm_120 it
# reads the workspace and the inputs while the previous kernel runs. Only sm_120 code
# differs, so a GPU below sm_120 cannot show it; the audit does. Bug class: FlashInfer
# PR 3903 (docs/design.md).
set(FC_PATCH_MUTANT pdl-wait-missing)
set(FC_PATCH_WHERE "allreduce_fusion_kernel_oneshot_lamport, the arch guard of the PDL wait (0.7.4: line 1654)")
set(FC_PATCH_OLD [==[  clear_vec.fill(neg_zero_v<T>);

#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaGridDependencySynchronize();]==])
set(FC_PATCH_NEW [==[  clear_vec.fill(neg_zero_v<T>);

#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))  // fusioncheck patch pdl-wait-missing
  cudaGridDependencySynchronize();]==])
