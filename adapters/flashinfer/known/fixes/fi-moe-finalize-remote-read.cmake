# Fix of fi-moe-finalize-remote-read: moefinalize_allreduce_fusion_kernel_oneshot_lamport polls
# every peer's slot in its own Lamport buffer, which only it clears (as the reduction kernel
# and the fusion kernel do), not in the peer's buffer, which the peer clears in its next call.
set(FC_PATCH_MUTANT fi-moe-finalize-remote-read)
set(FC_PATCH_HEADER trtllm_moe_allreduce_fusion.cuh)
set(FC_PATCH_WHERE "moefinalize_allreduce_fusion_kernel_oneshot_lamport, the poll (0.7.4: line 1382)")
set(FC_PATCH_OLD [==[        vals[r].load_global_volatile(reinterpret_cast<T*>(comm.data_bufs[r]) +
                                     (r * tot_access + idx) * VEC_SIZE);]==])
set(FC_PATCH_NEW [==[        vals[r].load_global_volatile(reinterpret_cast<T*>(comm.data_bufs[params.rank]) +
                                     (r * tot_access + idx) * VEC_SIZE);]==])
