# Fix of fi-moe-partial-warp-rmsnorm: with hidden / 8 not a multiple of 32 the last warp of a
# token's cluster holds threads past the token's end. They now run every token of their
# cluster (the RMSNorm's block and cluster reductions need every thread), poll the token's
# first element instead of the next token's, and take part in fused_op with zero: no loads,
# no stores, no scale-factor write (the NVFP4 conversion's shuffles still see them).
set(FC_PATCH_MUTANT fi-moe-partial-warp-rmsnorm)
set(FC_PATCH_HEADER trtllm_moe_allreduce_fusion.cuh)
set(FC_PATCH_WHERE "fused_op (0.7.4: lines 810-843) and the load-and-fuse loops of both kernels (lines 1055, 1371)")
set(FC_PATCH_OLD [==[  if constexpr (AllReduceOut) {
    val.store(reinterpret_cast<T*>(params.moe_allreduce_out) + access_id * VEC_SIZE);
  }
  vec_t<T, VEC_SIZE> residual_val;
  residual_val.load(reinterpret_cast<T*>(params.residual_in) + access_id * VEC_SIZE);

  vec_t<T, VEC_SIZE> gamma_val;
  gamma_val.load(reinterpret_cast<T*>(params.rms_gamma) + access_id_in_token * VEC_SIZE);
  residual_val = vec_add<T, VEC_SIZE>(val, residual_val);
  if constexpr (ResidualOut) {
    residual_val.store(reinterpret_cast<T*>(params.residual_out) + access_id * VEC_SIZE);
  }
  vec_t<T, VEC_SIZE> norm_val;
  norm_val = rms_norm<T, VEC_SIZE>(residual_val, gamma_val, params.rms_eps, params.hidden_dim,
                                   params.weight_bias);
  if constexpr (NormOut) {
    norm_val.store(reinterpret_cast<T*>(params.norm_out) + access_id * VEC_SIZE);
  }
#if CUDA_VERSION >= 12080
  if constexpr (QuantOut) {
    constexpr int SF_VEC_SIZE = 16;
    auto sf_out = utils::cvt_quant_to_fp4_get_sf_out_offset<uint32_t, 2>(
        cuda::std::nullopt /* batchIdx */, token_id, access_id_in_token,
        cuda::std::nullopt /* numRows */, params.hidden_dim,
        reinterpret_cast<uint32_t*>(params.scale_out), params.layout);
    reinterpret_cast<uint32_t*>(params.quant_out)[access_id] =
        utils::cvt_warp_fp16_to_fp4<T, VEC_SIZE>(norm_val, params.scale_factor, sf_out);
  }
#endif]==])
set(FC_PATCH_NEW [==[  const bool in_token = access_id_in_token < params.hidden_dim / static_cast<int>(VEC_SIZE);
  if constexpr (AllReduceOut) {
    if (in_token) val.store(reinterpret_cast<T*>(params.moe_allreduce_out) + access_id * VEC_SIZE);
  }
  vec_t<T, VEC_SIZE> residual_val;
  vec_t<T, VEC_SIZE> gamma_val;
  residual_val.fill(T(0.f));
  gamma_val.fill(T(0.f));
  if (in_token) {
    residual_val.load(reinterpret_cast<T*>(params.residual_in) + access_id * VEC_SIZE);
    gamma_val.load(reinterpret_cast<T*>(params.rms_gamma) + access_id_in_token * VEC_SIZE);
    residual_val = vec_add<T, VEC_SIZE>(val, residual_val);
  }
  if constexpr (ResidualOut) {
    if (in_token) residual_val.store(reinterpret_cast<T*>(params.residual_out) + access_id * VEC_SIZE);
  }
  vec_t<T, VEC_SIZE> norm_val;
  norm_val = rms_norm<T, VEC_SIZE>(residual_val, gamma_val, params.rms_eps, params.hidden_dim,
                                   params.weight_bias);
  if constexpr (NormOut) {
    if (in_token) norm_val.store(reinterpret_cast<T*>(params.norm_out) + access_id * VEC_SIZE);
  }
#if CUDA_VERSION >= 12080
  if constexpr (QuantOut) {
    constexpr int SF_VEC_SIZE = 16;
    auto sf_out = in_token ? utils::cvt_quant_to_fp4_get_sf_out_offset<uint32_t, 2>(
                                 cuda::std::nullopt /* batchIdx */, token_id, access_id_in_token,
                                 cuda::std::nullopt /* numRows */, params.hidden_dim,
                                 reinterpret_cast<uint32_t*>(params.scale_out), params.layout)
                           : nullptr;
    const uint32_t packed =
        utils::cvt_warp_fp16_to_fp4<T, VEC_SIZE>(norm_val, params.scale_factor, sf_out);
    if (in_token) reinterpret_cast<uint32_t*>(params.quant_out)[access_id] = packed;
  }
#endif]==])
set(FC_PATCH_OLD_2 [==[    int offset = idx * VEC_SIZE;
    clear_vec.store(reinterpret_cast<T*>(comm.clear_buf) + offset);
  }

  // * AR Load + Fusion
  for (int idx = access_id, tidx = token_id; idx < tot_access;
       idx += access_stride, tidx += token_stride) {]==])
set(FC_PATCH_NEW_2 [==[    int offset = idx * VEC_SIZE;
    clear_vec.store(reinterpret_cast<T*>(comm.clear_buf) + offset);
  }

  // * AR Load + Fusion: every thread of the cluster runs every token of it (the RMSNorm's
  // reductions need them all); one past the token's end polls the token's first element.
  for (int token_access = access_id, tidx = token_id; tidx < num_token;
       token_access += access_stride, tidx += token_stride) {
    const int idx = access_id_in_token < params.hidden_dim / static_cast<int>(VEC_SIZE)
                        ? token_access
                        : token_access - access_id_in_token;]==])
set(FC_PATCH_OLD_3 [==[    clear_vec.store(reinterpret_cast<T*>(comm.clear_buf) + idx * VEC_SIZE);
  }

  // * AR Load + Fusion
  for (int idx = access_id, tidx = token_id; idx < tot_access;
       idx += access_stride, tidx += token_stride) {]==])
set(FC_PATCH_NEW_3 [==[    clear_vec.store(reinterpret_cast<T*>(comm.clear_buf) + idx * VEC_SIZE);
  }

  // * AR Load + Fusion: every thread of the cluster runs every token of it (the RMSNorm's
  // reductions need them all); one past the token's end polls the token's first element.
  for (int token_access = access_id, tidx = token_id; tidx < num_token;
       token_access += access_stride, tidx += token_stride) {
    const int idx = access_id_in_token < params.hidden_dim / static_cast<int>(VEC_SIZE)
                        ? token_access
                        : token_access - access_id_in_token;]==])
