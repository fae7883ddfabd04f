# Negative control: the grid-dependency wait compiled out on every architecture in the
# one-shot and the two-shot kernel, which the host still launches with PDL: the kernel reads
# its inputs and the workspace while the kernel before it in the stream runs. Killed on any
# GPU by the PDL producer (a kernel that writes the call's inputs after triggering its
# dependents). Bug class: pdl-wait-missing, not only on sm_120 (docs/design.md).
set(FC_PATCH_MUTANT no-pdl-wait)
set(FC_PATCH_WHERE "allreduce_fusion_kernel_oneshot_lamport and _twoshot_sync, cudaGridDependencySynchronize (0.7.4: lines 1656, 1726)")
set(FC_PATCH_OLD [==[#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaGridDependencySynchronize();
  if constexpr (!TriggerCompletionAtEnd) {]==])
set(FC_PATCH_NEW [==[#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  // fusioncheck patch no-pdl-wait: no cudaGridDependencySynchronize
  if constexpr (!TriggerCompletionAtEnd) {]==])
set(FC_PATCH_OLD_2 [==[#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaGridDependencySynchronize();
#endif
  // Constructed after the grid dependency sync, for the same reason as the one-shot]==])
set(FC_PATCH_NEW_2 [==[  // fusioncheck patch no-pdl-wait: no cudaGridDependencySynchronize
  // Constructed after the grid dependency sync, for the same reason as the one-shot]==])
