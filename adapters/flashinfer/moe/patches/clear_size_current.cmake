# Negative control: both MoE kernels clear the previous call's Lamport buffer with the size of
# the current call instead of the size the previous call recorded. When the token count
# shrinks, stale data of the previous call is left behind and read as arrived two calls later.
# Bug class: TensorRT-LLM issue 6237 (docs/design.md).
set(FC_PATCH_MUTANT clear-size-current)
set(FC_PATCH_HEADER trtllm_moe_allreduce_fusion.cuh)
set(FC_PATCH_WHERE "the clear loops of moereduce_ and moefinalize_allreduce_fusion_kernel_oneshot_lamport (0.7.4: lines 1049, 1367)")
set(FC_PATCH_OLD [==[  for (int idx = access_id; idx < clear_access; idx += access_stride) {
    int offset = idx * VEC_SIZE;]==])
set(FC_PATCH_NEW [==[  for (int idx = access_id; idx < params.size * NRanks / VEC_SIZE; idx += access_stride) {  // fusioncheck patch clear-size-current
    int offset = idx * VEC_SIZE;]==])
set(FC_PATCH_OLD_2 [==[  for (int idx = access_id; idx < clear_access; idx += access_stride) {
    clear_vec.store(reinterpret_cast<T*>(comm.clear_buf) + idx * VEC_SIZE);]==])
set(FC_PATCH_NEW_2 [==[  for (int idx = access_id; idx < params.size * NRanks / VEC_SIZE; idx += access_stride) {  // fusioncheck patch clear-size-current
    clear_vec.store(reinterpret_cast<T*>(comm.clear_buf) + idx * VEC_SIZE);]==])
