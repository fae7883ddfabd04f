# Negative control: the flat ring's flag kernel publishes a slot without waiting for the copy
# into it (copied[slot]): the next rank reads its landing slot before the copy engine filled it.
set(FC_PATCH_MUTANT ce-publish-before-copy)
set(FC_PATCH_HEADER pcie_ipc_ce_ring.cuh)
set(FC_PATCH_WHERE "ce_ring_all_reduce_flat (0.7.4: lines 250-252)")
set(FC_PATCH_OLD [==[        FI_CE_CHECK(cudaStreamWaitEvent(ce.flag_stream, ce.copied[slot]));
        ce_publish_flag_kernel<<<1, 1, 0, ce.flag_stream>>>(flag_at(next, slot),
                                                            views.ce_send_counters + slot);]==])
set(FC_PATCH_NEW [==[        // fusioncheck patch ce-publish-before-copy: no wait for the copy
        ce_publish_flag_kernel<<<1, 1, 0, ce.flag_stream>>>(flag_at(next, slot),
                                                            views.ce_send_counters + slot);]==])
