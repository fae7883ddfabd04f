#pragma once
// Step 6 after the sum: residual add, RMSNorm and the quantised outputs of one token row,
// shared by the one-shot, two-shot and unfused kernels. The transport (Lamport poll,
// two-shot gather, or a plain load) is the `sum_vector` callback of pass 1.
//
// Order of operations (matches reference/include/fusioncheck/reference/fused.hpp):
//   allreduce = T(sum)                     (sum: fp32, or rounded to T after every add)
//   residual_out = T(float(allreduce) + float(residual_in))
//   ss = sum of float(residual_out)^2      (fp32; per thread, then block, then cluster)
//   r = rsqrtf(ss / hidden + eps)
//   norm_out = T((x * r) * (weight_bias + float(gamma)))
//   fp8 static:  e4m3(float(norm_out) * fp8_inv_scale)
//   fp8 dynamic: scale = max(amax / 448, 1/(448*512)); e4m3(float(norm_out) * (1 / scale))
//   nvfp4:       per 16 elements, sf = e4m3(g * (amax_block * (1/6))),
//                out_sc = sf == 0 ? 0 : 1 / (float(sf) * (1 / g)), e2m1(q * out_sc)
#include <cuda_fp8.h>

#include <type_traits>
#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 13 || \
    (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8)
#include <cuda_fp4.h>
#define FC_HAVE_FP4_HEADER 1
#endif

#include "device/cluster_exchange.cuh"
#include "device/common.cuh"
#include "fusioncheck/kernels/choice.hpp"

namespace fusioncheck::kernels::device {

inline constexpr float kFp8Max = 448.0f;
inline constexpr float kFp8MinScale = 1.0f / (448.0f * 512.0f);

struct EpilogueArgs {
  int tokens = 0;
  int hidden = 0;
  Pattern pattern = Pattern::allreduce;
  bool fp32_accumulation = true;
  float eps = 0.0f;
  float weight_bias = 0.0f;
  float fp8_inv_scale = 1.0f;
  float nvfp4_global_scale = 1.0f;
  Nvfp4Layout nvfp4_layout = Nvfp4Layout::swizzled128x4;
  const void* residual_in = nullptr;
  const void* gamma = nullptr;
  void* allreduce_out = nullptr;
  void* residual_out = nullptr;
  void* norm_out = nullptr;
  void* quant_out = nullptr;
  void* scale_out = nullptr;
};

// The epilogue's part of a launch request; every launcher builds it the same way.
inline EpilogueArgs epilogue_args(const FusedParams& p) {
  return EpilogueArgs{p.tokens,       p.hidden,      p.pattern,       p.fp32_accumulation,
                      p.eps,          p.weight_bias, p.fp8_inv_scale, p.nvfp4_global_scale,
                      p.nvfp4_layout, p.residual_in, p.gamma,         p.allreduce_out,
                      p.residual_out, p.norm_out,    p.quant_out,     p.scale_out};
}

// What an instance compiled for scope S computes (choice.hpp): a plain instance knows at
// compile time that the pattern is allreduce or residual + RMSNorm and the sum fp32, so the
// code of the other patterns and of the per-add rounding is not in it.
template <EpilogueScope S> __device__ __forceinline__ Pattern pattern_of(const EpilogueArgs& e) {
  if constexpr (S == EpilogueScope::plain)
    return e.pattern == Pattern::allreduce ? Pattern::allreduce : Pattern::residual_rmsnorm;
  return e.pattern;
}
template <EpilogueScope S>
__device__ __forceinline__ bool fp32_accumulation_of(const EpilogueArgs& e) {
  return S == EpilogueScope::plain || e.fp32_accumulation;
}

template <typename T> __device__ __forceinline__ float round_to(float x) {
  return to_float<T>(from_float<T>(x));
}

// round_to<T> of every element of x (T: __half or __nv_bfloat16), two at a time: one packed
// conversion (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32) per pair instead of one per element,
// the same round-to-nearest-even, so the same bits. `pairs` gets the packed words (element
// 2i in the low half of word i), ready to store without converting again.
template <typename T, int K>
__device__ __forceinline__ void round_all_to(float (&x)[K], std::uint32_t (&pairs)[K / 2]) {
  static_assert(sizeof(T) == 2 && K % 2 == 0);
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
#pragma unroll
  for (int k = 0; k < K; k += 2) {
    std::conditional_t<kBf16, __nv_bfloat162, __half2> p;
    if constexpr (kBf16) p = __floats2bfloat162_rn(x[k], x[k + 1]);
    else p = __floats2half2_rn(x[k], x[k + 1]);
    x[k] = __low2float(p);
    x[k + 1] = __high2float(p);
    pairs[k / 2] = bits_of<T>(p.x) | (bits_of<T>(p.y) << 16);
  }
}
template <typename T, int K> __device__ __forceinline__ void round_all_to(float (&x)[K]) {
  std::uint32_t pairs[K / 2];
  round_all_to<T>(x, pairs);
}

// How process_row rounds its vectors: `pairs` through round_all_to (the fused kernels: 0.6-3.6 %
// faster on one H200), `elements` one conversion per element,
// interleaved with the sums (the unfused baseline's norm kernel: 1 % slower with pairs, at 58
// registers instead of 52, and a baseline runs its fastest build).
enum class Rounding { pairs, elements };

// K consecutive elements of T (K * 2 bytes: 16 or 8) as floats, and back.
template <typename T, int K>
__device__ __forceinline__ void load_row_vector(const void* base, std::uint64_t idx,
                                                float (&out)[K]) {
  const T* p = static_cast<const T*>(base) + idx;
  if constexpr (K == 8) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int k = 0; k < 8; ++k)
      out[k] = to_float<T>(bits_as<T>((word(v, k / 2) >> (16 * (k % 2))) & 0xFFFFu));
  } else {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
#pragma unroll
    for (int k = 0; k < 4; ++k)
      out[k] = to_float<T>(bits_as<T>(((k < 2 ? v.x : v.y) >> (16 * (k % 2))) & 0xFFFFu));
  }
}
template <typename T, int K>
__device__ __forceinline__ void store_row_vector(void* base, std::uint64_t idx,
                                                 const float (&in)[K]) {
  T* p = static_cast<T*>(base) + idx;
  std::uint32_t w[K / 2];
#pragma unroll
  for (int k = 0; k < K / 2; ++k)
    w[k] = bits_of<T>(from_float<T>(in[2 * k])) | (bits_of<T>(from_float<T>(in[2 * k + 1])) << 16);
  if constexpr (K == 8) *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  else *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
}
// K elements of T already packed in pairs (round_all_to), stored as they are.
template <typename T, int K>
__device__ __forceinline__ void store_row_pairs(void* base, std::uint64_t idx,
                                                const std::uint32_t (&pairs)[K / 2]) {
  T* p = static_cast<T*>(base) + idx;
  if constexpr (K == 8)
    *reinterpret_cast<uint4*>(p) = make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
  else *reinterpret_cast<uint2*>(p) = make_uint2(pairs[0], pairs[1]);
}

__device__ __forceinline__ std::uint8_t to_e4m3(float x) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}
__device__ __forceinline__ float e4m3_to_float(std::uint8_t code) {
  const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), __NV_E4M3);
  return __half2float(__half(h));
}

// How a row's partial sums meet: the block's warps through `scratch` (32 floats of shared
// memory); where the row is split over the blocks of a cluster, those blocks through
// `exchange` (cluster_exchange.cuh), each exchange waiting `exchange_budget` cycles before
// it sets `exchange_expired` (for the kernel's hang record) and waits on.
struct RowReduction {
  float* scratch = nullptr;
  ClusterExchange* exchange = nullptr;
  int cluster_size = 1;
  unsigned long long exchange_budget = 0;
  std::uint32_t exchanges = 0;  // cluster exchanges made so far
  bool exchange_expired = false;
  ExchangeDelay delay{};         // the call's seeded delays inside its first reduction and exchange
  bool one_buffer = false;       // the cluster-one-buffer mutant
  std::uint32_t reductions = 0;  // block reductions made so far
  bool scratch_unguarded = false;  // the reduce-scratch-unguarded mutant
};

// Sum (or max) of `v` over the row's blocks: the block, then the cluster's blocks in
// cluster rank order. Every thread gets the result.
template <bool kMax> __device__ __forceinline__ float row_reduce(float v, RowReduction& red) {
  const std::uint32_t late_ns = red.reductions++ == 0
                                    ? warp_pause_ns(red.delay.spec, red.delay.rank,
                                                    DelayPoint::in_block_reduce, red.delay.call)
                                    : 0;
  const float b = block_reduce<kMax>(v, red.scratch, late_ns, !red.scratch_unguarded);
  if (red.cluster_size == 1) return b;
  return cluster_exchange<kMax>(*red.exchange, b, red.cluster_size, red.exchanges++,
                                red.exchange_budget, red.exchange_expired, red.delay,
                                red.one_buffer);
}

// NVFP4 of one 16-element block whose T-rounded norm values are at norm_out[idx..idx+16).
template <typename T>
__device__ __forceinline__ void nvfp4_block(const EpilogueArgs& e, int token, int block16) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 && defined(FC_HAVE_FP4_HEADER)
  const std::uint64_t idx = static_cast<std::uint64_t>(token) * e.hidden + block16 * 16;
  float q[16];
  load_row_vector<T, 8>(e.norm_out, idx, *reinterpret_cast<float(*)[8]>(&q[0]));
  load_row_vector<T, 8>(e.norm_out, idx + 8, *reinterpret_cast<float(*)[8]>(&q[8]));
  float amax = 0.0f;
#pragma unroll
  for (int k = 0; k < 16; ++k) amax = fmaxf(amax, fabsf(q[k]));
  const float g = e.nvfp4_global_scale;
  const std::uint8_t sf = to_e4m3(g * (amax * (1.0f / 6.0f)));
  const float out_sc = sf == 0 ? 0.0f : 1.0f / (e4m3_to_float(sf) * (1.0f / g));
  std::uint32_t packed[2] = {0u, 0u};
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const auto code = static_cast<std::uint32_t>(
        __nv_cvt_float_to_fp4(q[k] * out_sc, __NV_E2M1, cudaRoundNearest) & 0xF);
    packed[k / 8] |= code << (4 * (k % 8));
  }
  auto* out = static_cast<std::uint8_t*>(e.quant_out) + idx / 2;
  *reinterpret_cast<uint2*>(out) = make_uint2(packed[0], packed[1]);
  const std::uint64_t scale_cols = e.hidden / 16;
  static_cast<std::uint8_t*>(
      e.scale_out)[protocol::nvfp4_scale_index(e.nvfp4_layout, token, block16, scale_cols)] = sf;
#else
  (void)e;
  (void)token;
  (void)block16;  // refused by the host below sm_100
#endif
}

// One token row, vectors [v_begin, v_end) of K elements, by this block's threads.
// sum_vector(t, v, float(&)[K]) returns the T-rounded allreduce values.
// kEarlyInputs (the inputs-before-wait mutant only): `early`, when not null, holds the
// thread's first residual and gamma vectors of this row, loaded before the grid-dependency
// wait; they are used instead of loading them here.
template <typename T, int K, EpilogueScope S, Rounding R = Rounding::pairs,
          bool kEarlyInputs = false, typename SumVector>
__device__ __forceinline__ void process_row(const EpilogueArgs& e, int t, int v_begin, int v_end,
                                            RowReduction& red, SumVector&& sum_vector,
                                            const float (*early)[K] = nullptr) {
  const Pattern pattern = pattern_of<S>(e);
  const std::uint64_t row = static_cast<std::uint64_t>(t) * e.hidden;
  const int first_v = v_begin + threadIdx.x;
  // The thread's first vector stays in registers between the passes (at small sizes it is
  // its only one), and its residual and gamma loads are issued before the waits (the poll,
  // the row reduction) so that their latency hides behind them.
  float first_x[K], first_g[K];
  float ss = 0.0f;
  for (int v = first_v; v < v_end; v += blockDim.x) {
    const std::uint64_t idx = row + static_cast<std::uint64_t>(v) * K;
    float res[K];
    if constexpr (kEarlyInputs) {
      if (early != nullptr && v == first_v) {
#pragma unroll
        for (int k = 0; k < K; ++k) res[k] = early[0][k];
      } else if (pattern != Pattern::allreduce) {
        load_row_vector<T, K>(e.residual_in, idx, res);
      }
    } else if (pattern != Pattern::allreduce) {
      load_row_vector<T, K>(e.residual_in, idx, res);
    }
    float ar[K];
    sum_vector(t, v, ar);
    if (e.allreduce_out != nullptr) store_row_vector<T, K>(e.allreduce_out, idx, ar);
    if (pattern == Pattern::allreduce) continue;
    if constexpr (R == Rounding::pairs) {
#pragma unroll
      for (int k = 0; k < K; ++k) res[k] = ar[k] + res[k];
      std::uint32_t pairs[K / 2];
      round_all_to<T>(res, pairs);
#pragma unroll
      for (int k = 0; k < K; ++k) ss += res[k] * res[k];
      store_row_pairs<T, K>(e.residual_out, idx, pairs);
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        res[k] = round_to<T>(ar[k] + res[k]);
        ss += res[k] * res[k];
      }
      store_row_vector<T, K>(e.residual_out, idx, res);
    }
    if (v == first_v) {
#pragma unroll
      for (int k = 0; k < K; ++k) first_x[k] = res[k];
    }
  }
  if (pattern == Pattern::allreduce) return;

  if constexpr (kEarlyInputs) {
    if (early != nullptr) {
#pragma unroll
      for (int k = 0; k < K; ++k) first_g[k] = early[1][k];
    } else if (first_v < v_end) {
      load_row_vector<T, K>(e.gamma, static_cast<std::uint64_t>(first_v) * K, first_g);
    }
  } else if (first_v < v_end) {
    load_row_vector<T, K>(e.gamma, static_cast<std::uint64_t>(first_v) * K, first_g);
  }
  ss = row_reduce<false>(ss, red);
  const float r = rsqrtf(ss / static_cast<float>(e.hidden) + e.eps);
  float amax = 0.0f;
  for (int v = first_v; v < v_end; v += blockDim.x) {
    const std::uint64_t idx = row + static_cast<std::uint64_t>(v) * K;
    float x[K], g[K];
    if (v == first_v) {
#pragma unroll
      for (int k = 0; k < K; ++k) x[k] = first_x[k], g[k] = first_g[k];
    } else {
      load_row_vector<T, K>(e.residual_out, idx, x);  // written by this thread in pass 1
      load_row_vector<T, K>(e.gamma, static_cast<std::uint64_t>(v) * K, g);
    }
    if constexpr (R == Rounding::pairs) {
#pragma unroll
      for (int k = 0; k < K; ++k) x[k] = (x[k] * r) * (e.weight_bias + g[k]);
      std::uint32_t pairs[K / 2];
      round_all_to<T>(x, pairs);
#pragma unroll
      for (int k = 0; k < K; ++k) amax = fmaxf(amax, fabsf(x[k]));
      store_row_pairs<T, K>(e.norm_out, idx, pairs);
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        x[k] = round_to<T>((x[k] * r) * (e.weight_bias + g[k]));
        amax = fmaxf(amax, fabsf(x[k]));
      }
      store_row_vector<T, K>(e.norm_out, idx, x);
    }
    if (pattern == Pattern::fp8_static) {
      std::uint32_t w[K / 4];
#pragma unroll
      for (int k = 0; k < K / 4; ++k) {
        w[k] = 0;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          w[k] |= std::uint32_t{to_e4m3(x[4 * k + j] * e.fp8_inv_scale)} << (8 * j);
      }
      auto* q = static_cast<std::uint8_t*>(e.quant_out) + idx;
      if constexpr (K == 8) *reinterpret_cast<uint2*>(q) = make_uint2(w[0], w[1]);
      else *reinterpret_cast<std::uint32_t*>(q) = w[0];
    }
  }
  if (pattern == Pattern::fp8_dynamic) {
    amax = row_reduce<true>(amax, red);
    const float scale = fmaxf(amax / kFp8Max, kFp8MinScale);
    const float inv = 1.0f / scale;
    if (threadIdx.x == 0 && (blockIdx.x % red.cluster_size) == 0)
      static_cast<float*>(e.scale_out)[t] = scale;
    for (int v = v_begin + threadIdx.x; v < v_end; v += blockDim.x) {
      const std::uint64_t idx = row + static_cast<std::uint64_t>(v) * K;
      float x[K];
      load_row_vector<T, K>(e.norm_out, idx, x);  // this thread's own pass-2 values
      auto* q = static_cast<std::uint8_t*>(e.quant_out) + idx;
#pragma unroll
      for (int k = 0; k < K; ++k) q[k] = to_e4m3(x[k] * inv);
    }
  } else if (pattern == Pattern::nvfp4) {
    __syncthreads();  // a 16-element block spans vectors of different threads
    const int b_begin = v_begin * K / 16, b_end = v_end * K / 16;
    for (int b = b_begin + threadIdx.x; b < b_end; b += blockDim.x) nvfp4_block<T>(e, t, b);
  }
}

}  // namespace fusioncheck::kernels::device
