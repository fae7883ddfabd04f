# Negative control: the push publishes real zeros as they are instead of turning +0 into -0.
# A +0 in a rank's input is then the sentinel itself ("not yet written"): the poll of every
# rank that receives it never ends. Bug class: the sanitising step the header's comments
# require of every sentinel kernel (0.7.4: lines 113-128).
set(FC_PATCH_MUTANT pcie-no-sanitise)
set(FC_PATCH_HEADER pcie_ipc_all_reduce.cuh)
set(FC_PATCH_WHERE "clear_pos_zero_u16x2 (0.7.4: lines 439-448)")
set(FC_PATCH_OLD [==[  if (lo == 0u) {
    lo = 0x8000u;
  }
  if (hi == 0u) {
    hi = 0x80000000u;
  }
  return hi | lo;]==])
set(FC_PATCH_NEW [==[  (void)lo, (void)hi;
  return raw;  // fusioncheck patch pcie-no-sanitise]==])
