# Negative control of the MXFP8 checks: the block's UE8M0 scale rounded to the nearest power
# of two instead of up. Where amax / 448 lies above the rounded scale, the block's largest
# elements exceed 448 after scaling and saturate; the scale lies outside the interval of
# ue8m0_ceil(amax / 448). Bug class: a scale rule that drops the round-up (OCP MX leaves the
# rounding to the implementation; FlashInfer and its CuTe-DSL quantiser round up).
set(FC_PATCH_MUTANT mxfp8-scale-nearest)
set(FC_PATCH_WHAT [==[MXFP8 block scale rounded to the nearest power of two, not up: the largest elements saturate]==])
set(FC_PATCH_REAL_WORLD [==[scale rules without the round-up (FlashInfer's quantisers round up)]==])
set(FC_PATCH_WHERE "float_to_ue8m0_ceil (0.7.4: line 822)")
set(FC_PATCH_OLD [==[  uint32_t bump = mantissa != 0u ? 1u : 0u;]==])
set(FC_PATCH_NEW [==[  uint32_t bump = mantissa >= 0x400000u ? 1u : 0u;  // fusioncheck patch mxfp8-scale-nearest]==])
