# Negative control: the MoE reduction kernel polls each peer's slot in that peer's own Lamport
# buffer (as the shipped finalize kernel does) instead of in its own. The owner clears that
# buffer in its next call: a rank that finishes first clears what a slower rank has not read
# yet (a hang), and a buffer not cleared yet shows an older call's data as arrived. Bug class:
# moe-remote-read (docs/flashinfer.md, the finalize kernel's finding).
set(FC_PATCH_MUTANT moe-remote-read)
set(FC_PATCH_HEADER trtllm_moe_allreduce_fusion.cuh)
set(FC_PATCH_WHERE "moereduce_allreduce_fusion_kernel_oneshot_lamport, the AR load (0.7.4: line 1067)")
set(FC_PATCH_OLD [==[        vals[r].load_global_volatile(reinterpret_cast<T*>(comm.data_bufs[params.rank]) +]==])
set(FC_PATCH_NEW [==[        vals[r].load_global_volatile(reinterpret_cast<T*>(comm.data_bufs[r]) +  // fusioncheck patch moe-remote-read]==])
