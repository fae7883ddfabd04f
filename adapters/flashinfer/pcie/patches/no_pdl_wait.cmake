# Negative control: launched with PDL, the grid-dependency wait is compiled out on every
# architecture. A kernel then reads its input while the producer before it may still be
# writing it. Bug class: FlashInfer PR 3903 (arch guards that dropped the wait).
set(FC_PATCH_MUTANT no-pdl-wait)
set(FC_PATCH_HEADER pcie_ipc_all_reduce.cuh)
set(FC_PATCH_WHERE "pdl_grid_sync_const (0.7.4: line 145)")
set(FC_PATCH_OLD [==[    cudaGridDependencySynchronize();]==])
set(FC_PATCH_NEW [==[    // fusioncheck patch no-pdl-wait: cudaGridDependencySynchronize() removed]==])
