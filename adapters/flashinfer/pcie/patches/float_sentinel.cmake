# Negative control: the PCIe kernels' +0 sentinel tested without the sign bit, as a float
# compare (x == 0.0f) would. The push turns every real zero into -0, which such a test also
# reads as "not yet written": any input element that is zero leaves its poll spinning. Bug
# class: FlashInfer issue 1136 (the Lamport kernels' float == -0.0f).
set(FC_PATCH_MUTANT float-sentinel)
set(FC_PATCH_HEADER pcie_ipc_all_reduce.cuh)
set(FC_PATCH_WHERE "has_pos_zero_u16x2 (0.7.4: line 452)")
set(FC_PATCH_OLD [==[  return (raw & 0xffffu) == 0u || (raw & 0xffff0000u) == 0u;]==])
set(FC_PATCH_NEW [==[  return (raw & 0x7fffu) == 0u || (raw & 0x7fff0000u) == 0u;  // fusioncheck patch float-sentinel]==])
