# Upstream's fix reverted (FlashInfer 0.6.15, PR 3880): the block reduction of the RMSNorm's
# sum of squares shuffles with a full-warp mask in the last warp of a block whose size is not
# a multiple of 32 (hidden / 8 / cluster size threads, e.g. 45 at hidden 2880), reading lanes
# that do not exist.
set(FC_PATCH_MUTANT revert-0.6.15-partial-warp-reduce)
set(FC_PATCH_WHAT [==[RMSNorm block reduction shuffles with a full-warp mask in a partial last warp]==])
set(FC_PATCH_REAL_WORLD [==[FlashInfer PR 3880 (0.6.15), reverted]==])
set(FC_PATCH_WHERE "utils::blockReduceSumV2 (0.7.4: lines 431-459)")
set(FC_PATCH_OLD [==[  int warp_count = ceil_div(blockDim.x, kWarpSize);
  int tail_lanes = blockDim.x & (kWarpSize - 1);
  bool is_partial_warp = tail_lanes != 0 && wid == warp_count - 1;

  if (is_partial_warp) {
    warpReduceSumPartialV2<T, NUM>(val, tail_lanes);
  } else {
    warpReduceSumV2<T, NUM>(val);
  }

  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < NUM; i++) {
      shared[i][wid] = val[i];
    }
  }

  __syncthreads();

  bool is_mask = threadIdx.x < warp_count;
#pragma unroll
  for (int i = 0; i < NUM; i++) {
    val[i] = is_mask ? shared[i][lane] : (T)(0.0f);
  }
  if (is_partial_warp) {
    warpReduceSumPartialV2<T, NUM>(val, tail_lanes);
  } else {
    warpReduceSumV2<T, NUM>(val);
  }]==])
set(FC_PATCH_NEW [==[  // fusioncheck patch revert-0.6.15-partial-warp-reduce: full-warp shuffles only
  warpReduceSumV2<T, NUM>(val);

  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < NUM; i++) {
      shared[i][wid] = val[i];
    }
  }

  __syncthreads();

  bool is_mask = threadIdx.x < (blockDim.x / 32.f);
#pragma unroll
  for (int i = 0; i < NUM; i++) {
    val[i] = is_mask ? shared[i][lane] : (T)(0.0f);
  }
  warpReduceSumV2<T, NUM>(val);]==])
