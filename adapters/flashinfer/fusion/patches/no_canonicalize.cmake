# Negative control: the one-shot push sends input -0 as it is. The receiver reads it as the
# sentinel, "not yet written", and polls for ever. Bug class: TensorRT-LLM PR 4226
# (docs/design.md).
set(FC_PATCH_MUTANT no-canonicalize)
set(FC_PATCH_WHERE "allreduce_fusion_kernel_oneshot_lamport, the push (0.7.4: line 1671)")
set(FC_PATCH_OLD [==[    val.load(reinterpret_cast<T*>(params.allreduce_in) + idx * VEC_SIZE);
    remove_neg_zero<T, VEC_SIZE>(val);]==])
set(FC_PATCH_NEW [==[    val.load(reinterpret_cast<T*>(params.allreduce_in) + idx * VEC_SIZE);
    // fusioncheck patch no-canonicalize: remove_neg_zero dropped]==])
