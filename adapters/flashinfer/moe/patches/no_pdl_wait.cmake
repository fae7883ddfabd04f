# Negative control: the grid-dependency waits of both MoE kernels compiled out (the reduction
# kernel's griddepcontrol.wait and both cudaGridDependencySynchronize calls), while the host
# still launches them with PDL: they read the expert outputs, the residual and the workspace
# while the kernel before them in the stream runs. Killed on any GPU by the PDL producer.
# Bug class: pdl-wait-missing (docs/design.md).
set(FC_PATCH_MUTANT no-pdl-wait)
set(FC_PATCH_HEADER trtllm_moe_allreduce_fusion.cuh)
set(FC_PATCH_WHERE "the reduction kernel's griddepcontrol.wait, both kernels' cudaGridDependencySynchronize (0.7.4: lines 947, 979, 1283)")
set(FC_PATCH_OLD [==[#include "../vec_dtypes.cuh"

namespace flashinfer {]==])
set(FC_PATCH_NEW [==[#include "../vec_dtypes.cuh"

// fusioncheck patch no-pdl-wait: no cudaGridDependencySynchronize
#define cudaGridDependencySynchronize() ((void)0)

namespace flashinfer {]==])
set(FC_PATCH_OLD_2 [==[  asm volatile("griddepcontrol.wait;");]==])
set(FC_PATCH_NEW_2 [==[  // fusioncheck patch no-pdl-wait: no griddepcontrol.wait]==])
