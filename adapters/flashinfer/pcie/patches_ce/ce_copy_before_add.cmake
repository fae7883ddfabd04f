# Negative control: the flat ring's copy of step k no longer waits for step k-1's add
# (add_done[p]): the copy engine forwards a chunk of the output before this rank added its own
# input into it, and the next rank sums a partial without it.
set(FC_PATCH_MUTANT ce-copy-before-add)
set(FC_PATCH_HEADER pcie_ipc_ce_ring.cuh)
set(FC_PATCH_WHERE "ce_ring_all_reduce_flat (0.7.4: lines 239-241)")
set(FC_PATCH_OLD [==[      if (k > 0) {
        FI_CE_CHECK(cudaStreamWaitEvent(ce.copy_stream, ce.add_done[p]));
      }]==])
set(FC_PATCH_NEW [==[      // fusioncheck patch ce-copy-before-add: the copy does not wait for the add]==])
