# Negative control: the last block of a call flips the region's epoch but never resets the
# arrival counter. From the second call of more than one block on, no block sees the count it
# waits for: the epoch stops flipping and every call stages in the same half, the single
# buffer the header's double buffer exists to avoid (0.7.4: lines 524-572).
set(FC_PATCH_MUTANT counter-not-reset)
set(FC_PATCH_HEADER pcie_ipc_all_reduce.cuh)
set(FC_PATCH_WHERE "advance_scratch_epoch (0.7.4: line 613)")
set(FC_PATCH_OLD [==[      store_volatile_i32(state + 1, 0);]==])
set(FC_PATCH_NEW [==[      // fusioncheck patch counter-not-reset: the arrival counter is left as it is]==])
