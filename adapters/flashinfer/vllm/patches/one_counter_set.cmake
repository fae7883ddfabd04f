# Negative control: the barrier's peer counters in one set instead of two chosen by the count's
# parity, as before vllm#8558 (the TP8 hangs of vllm#8404 and #8410). A peer that passed this
# barrier stores its next count into the slot a slower rank still polls for this one: the slow
# rank never sees its value and spins for ever.
set(FC_PATCH_MUTANT vllm-one-counter-set)
set(FC_PATCH_HEADER vllm_custom_all_reduce.cuh)
set(FC_PATCH_WHERE "multi_gpu_barrier (0.7.4: lines 200-201)")
set(FC_PATCH_OLD [==[    auto peer_counter_ptr = &sg.signals[threadIdx.x]->peer_counter[val % 2][blockIdx.x][rank];
    auto self_counter_ptr = &self_sg->peer_counter[val % 2][blockIdx.x][threadIdx.x];]==])
set(FC_PATCH_NEW [==[    // fusioncheck patch vllm-one-counter-set: one set of peer counters
    auto peer_counter_ptr = &sg.signals[threadIdx.x]->peer_counter[0][blockIdx.x][rank];
    auto self_counter_ptr = &self_sg->peer_counter[0][blockIdx.x][threadIdx.x];]==])
