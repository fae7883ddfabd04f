# Negative control: the producers push their inputs as they are, +0 words included (no
# clear_pos_zero). A +0 word is the consumer's "not yet pushed": it polls it for ever.
set(FC_PATCH_MUTANT sglang-no-remap)
set(FC_PATCH_HEADER custom_all_reduce.cuh)
set(FC_PATCH_WHERE "all_reduce_1shot_push_kernel and all_reduce_2shot_push_kernel (0.5.23: lines 171, 254, 293)")
set(FC_PATCH_OLD [==[    vec.load(params.input, vid);
    Lamport::clear_pos_zero(vec.data());]==])
set(FC_PATCH_NEW [==[    vec.load(params.input, vid);
    // fusioncheck patch sglang-no-remap: +0 pushed as is]==])
set(FC_PATCH_OLD_2 [==[      vec.load(params.input, peer * chunk_vecs + j);
      Lamport::clear_pos_zero(vec.data());]==])
set(FC_PATCH_NEW_2 [==[      vec.load(params.input, peer * chunk_vecs + j);
      // fusioncheck patch sglang-no-remap: +0 pushed as is]==])
set(FC_PATCH_OLD_3 [==[    Lamport::clear_pos_zero(out_vec.data());]==])
set(FC_PATCH_NEW_3 [==[    // fusioncheck patch sglang-no-remap: the sum pushed as is]==])
