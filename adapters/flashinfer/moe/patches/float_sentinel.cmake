# Negative control: the Lamport sentinel of the MoE kernels tested with a float compare.
# `x == -0.0f` is also true for +0, so a slot whose reduced value is zero (+0 after the push's
# canonicalisation) reads as "not yet written": the poll never ends. Bug class: FlashInfer
# issue 1136 (docs/design.md).
set(FC_PATCH_MUTANT float-sentinel)
set(FC_PATCH_HEADER trtllm_moe_allreduce_fusion.cuh)
set(FC_PATCH_WHERE "is_negative_zero<__nv_bfloat16> (0.7.4: lines 895-897)")
set(FC_PATCH_OLD [==[__device__ bool is_negative_zero<__nv_bfloat16>(__nv_bfloat16 x) {
  return (__bfloat16_as_ushort(x) == 0x8000);
}]==])
set(FC_PATCH_NEW [==[__device__ bool is_negative_zero<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x) == -0.0f;  // fusioncheck patch float-sentinel
}]==])
