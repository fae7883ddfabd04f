// The reference's hot path: one template instance per element type, plain loops over a
// token row, no per-element dispatch. The order of operations is documented in fused.hpp.
#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/vector_clones.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

namespace fusioncheck::reference {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

// Row kernels with restrict-qualified pointers, so that each loop vectorises. Always inlined:
// an out-of-line copy would be built for the baseline ISA only, not for the caller's vector
// width (fused_row, vector_clones.hpp).
#define FUSIONCHECK_ROW_KERNEL [[gnu::always_inline]] inline

// How the inputs' zeros are read: as they are, -0 as +0 (the Lamport push), +0 as -0 (the
// PCIe kernels' push).
enum class ZeroRead : std::uint8_t { as_is, neg_to_pos, pos_to_neg };

ZeroRead zero_read(const FusedConfig& c) {
  if (c.canonicalize_neg_zero) return ZeroRead::neg_to_pos;
  return c.sanitise_pos_zero ? ZeroRead::pos_to_neg : ZeroRead::as_is;
}

template <DType T>
FUSIONCHECK_ROW_KERNEL void widen_row(const typename Element<T>::Bits* __restrict in,
                                      float* __restrict out, std::size_t n, ZeroRead zeros) {
  using E = Element<T>;
  if (zeros == ZeroRead::neg_to_pos) {
    for (std::size_t j = 0; j < n; ++j) out[j] = E::to_float(canonicalize<T>(in[j]));
  } else if (zeros == ZeroRead::pos_to_neg) {
    for (std::size_t j = 0; j < n; ++j) out[j] = in[j] == 0 ? -0.0f : E::to_float(in[j]);
  } else {
    for (std::size_t j = 0; j < n; ++j) out[j] = E::to_float(in[j]);
  }
}

template <DType T>
FUSIONCHECK_ROW_KERNEL void round_row(const float* __restrict in,
                                      typename Element<T>::Bits* __restrict out, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) out[j] = Element<T>::from_float(in[j]);
}

FUSIONCHECK_ROW_KERNEL void add_row(float* __restrict acc, const float* __restrict v,
                                    std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) acc[j] += v[j];
}

// The fast-math build's flush to zero (fused.hpp): subnormals become zeros of their sign.
FUSIONCHECK_ROW_KERNEL float flushed(float v) {
  return std::fabs(v) < 0x1p-126f ? std::copysign(0.0f, v) : v;
}
FUSIONCHECK_ROW_KERNEL void flush_row(float* __restrict v, std::size_t n, bool ftz) {
  if (!ftz) return;
  for (std::size_t j = 0; j < n; ++j) v[j] = flushed(v[j]);
}

// w_j = weight_bias + float(gamma_j), rounded once in float like the kernel (flushed in the
// fast-math mode).
template <DType T> float norm_weight(const FusedConfig& c, typename Element<T>::Bits g) {
  const float gamma = Element<T>::to_float(g);
  return c.fast_math ? flushed(flushed(c.weight_bias) + flushed(gamma)) : c.weight_bias + gamma;
}
template <DType T> std::vector<float> norm_weights(const FusedConfig& c, const Tensor& gamma) {
  const auto g = gamma.view<T>();
  std::vector<float> w(g.size());
  for (std::size_t j = 0; j < g.size(); ++j) w[j] = norm_weight<T>(c, g[j]);
  return w;
}

// Sum of squares in fp32 over 8 interleaved partial sums (lane j % 8, in index order), then
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). Any order is covered by the bound in
// tolerance.hpp; this one breaks the add latency chain (the GPU's order differs anyway).
// With ftz, every square and sum is flushed (the fast-math build; x is flushed already).
FUSIONCHECK_ROW_KERNEL float sum_of_squares(const float* x, std::size_t hidden, bool ftz) {
  float lane[8] = {};
  std::size_t j = 0;
  if (ftz) {
    for (; j + 8 <= hidden; j += 8)
      for (int k = 0; k < 8; ++k) lane[k] = flushed(lane[k] + flushed(x[j + k] * x[j + k]));
    for (int k = 0; j < hidden; ++j, ++k) lane[k] = flushed(lane[k] + flushed(x[j] * x[j]));
  } else {
    for (; j + 8 <= hidden; j += 8)
      for (int k = 0; k < 8; ++k) lane[k] += x[j + k] * x[j + k];
    for (int k = 0; j < hidden; ++j, ++k) lane[k] += x[j] * x[j];
  }
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// y_j = (x_j * r) * w_j with r = 1 / sqrt(sum(x^2) / hidden + eps), all in float; with ftz
// every product and quotient flushed (x and w are flushed already).
FUSIONCHECK_ROW_KERNEL void rmsnorm_row(const float* x, const float* w, std::size_t hidden,
                                        float eps, bool ftz, float* y) {
  const float ss = sum_of_squares(x, hidden, ftz);
  if (ftz) {
    const float r = 1.0f / std::sqrt(flushed(flushed(ss / static_cast<float>(hidden)) + eps));
    for (std::size_t j = 0; j < hidden; ++j) y[j] = flushed(flushed(x[j] * r) * w[j]);
    return;
  }
  const float r = 1.0f / std::sqrt(ss / static_cast<float>(hidden) + eps);
  for (std::size_t j = 0; j < hidden; ++j) y[j] = (x[j] * r) * w[j];
}

// MXFP8 of one token (fused.hpp): a UE8M0 scale per 32 elements, e4m3 codes of the clamped
// products. amax ignores NaN (fmaxf); the clamp's fmin/fmax turn a NaN product into +448.
FUSIONCHECK_ROW_KERNEL void mxfp8_row(const QuantConfig& q, const float* __restrict v,
                                      std::size_t hidden, std::size_t token, FusedOutputs& out) {
  const std::size_t cols = hidden / kMxfp8BlockSize;
  std::uint8_t* __restrict const codes = out.mxfp8.data() + token * hidden;
  for (std::size_t b = 0; b < cols; ++b) {
    const float* blk = v + b * kMxfp8BlockSize;
    float amax = 0.0f;
    for (int k = 0; k < kMxfp8BlockSize; ++k) amax = std::fmax(amax, std::fabs(blk[k]));
    const std::uint8_t sf = float_to_ue8m0_ceil(amax * (1.0f / kE4m3Max));
    const float inv = ue8m0_inverse(sf);
    for (int k = 0; k < kMxfp8BlockSize; ++k)
      codes[b * kMxfp8BlockSize + static_cast<std::size_t>(k)] =
          float_to_e4m3(std::fmax(std::fmin(blk[k] * inv, kE4m3Max), -kE4m3Max));
    const std::size_t at = nvfp4_scale_index(q.mxfp8_layout, token, b, cols);
    out.mxfp8_scale[at] = sf;
    out.mxfp8_scale_written[at] = 1;
  }
  if (q.mxfp8_layout != Nvfp4Layout::swizzled128x4) return;
  for (std::size_t c = cols; c < (cols + 3) / 4 * 4; ++c) {  // the row's padding columns
    const std::size_t at = nvfp4_scale_index(q.mxfp8_layout, token, c, cols);
    out.mxfp8_scale[at] = 0;
    out.mxfp8_scale_written[at] = 1;
  }
}

// Per-token-group FP8 of one token (fused.hpp): codes and the packed exponent of each group's
// power-of-two scale. The padding bytes and words stay as compute_fused_into zeroed them.
FUSIONCHECK_ROW_KERNEL void group_fp8_row(const QuantConfig& q, const float* __restrict v,
                                          std::size_t hidden, std::size_t token,
                                          FusedOutputs& out) {
  const std::size_t aligned_mn = group_fp8_aligned_mn(q, out.group_fp8.size() / hidden);
  const auto group = static_cast<std::size_t>(q.group_size);
  const std::size_t groups = hidden / group;
  std::uint8_t* __restrict const codes = out.group_fp8.data() + token * hidden;
  for (std::size_t g = 0; g < groups; ++g) {
    const float* grp = v + g * group;
    float amax = 0.0f;
    for (std::size_t k = 0; k < group; ++k) amax = std::fmax(amax, std::fabs(grp[k]));
    const float y = group_fp8_scale(amax);
    for (std::size_t k = 0; k < group; ++k)
      codes[g * group + k] = float_to_e4m3(std::fmin(std::fmax(grp[k] / y, -kE4m3Max), kE4m3Max));
    out.group_fp8_scale[group_fp8_scale_index(token, g, aligned_mn)] = ue8m0_exponent(y);
  }
}

// The codes go through local pointers: a byte store through out.fp8_static[...] may alias the
// vector's own pointer, which kept the loops from vectorising.
FUSIONCHECK_ROW_KERNEL void quantise_row(const QuantConfig& q, const float* __restrict v,
                                         std::size_t hidden, std::size_t token, FusedOutputs& out) {
  const std::size_t base = token * hidden;
  if (q.fp8_static) {
    std::uint8_t* __restrict const codes = out.fp8_static.data() + base;
    const float inv = q.fp8_inv_scale;
    for (std::size_t j = 0; j < hidden; ++j) codes[j] = float_to_e4m3(v[j] * inv);
  }
  if (q.fp8_dynamic) {
    // fmaxf(amax, |v|) ignores NaN, as the GPU's fmaxf does; with amax a number >= +0 and
    // |v| >= +0 or NaN, "|v| > amax ? |v| : amax" is the same value without the libm call.
    float amax = 0.0f;
    for (std::size_t j = 0; j < hidden; ++j) {
      const float a = std::fabs(v[j]);
      amax = a > amax ? a : amax;
    }
    const float scale = std::max(amax / kE4m3Max, kFp8MinScale);
    const float inv = 1.0f / scale;
    out.fp8_dynamic_scale[token] = scale;
    std::uint8_t* __restrict const codes = out.fp8_dynamic.data() + base;
    for (std::size_t j = 0; j < hidden; ++j) codes[j] = float_to_e4m3(v[j] * inv);
  }
  if (q.mxfp8) mxfp8_row(q, v, hidden, token, out);
  if (q.group_fp8) group_fp8_row(q, v, hidden, token, out);
  if (q.nvfp4) {
    const float g = q.nvfp4_global_scale;
    const std::size_t scale_cols = hidden / kNvfp4BlockSize;
    for (std::size_t b = 0; b < scale_cols; ++b) {
      const float* blk = v + b * kNvfp4BlockSize;
      float amax = 0.0f;
      for (int k = 0; k < kNvfp4BlockSize; ++k) amax = std::fmax(amax, std::fabs(blk[k]));
      const std::uint8_t sf = float_to_e4m3(g * (amax * (1.0f / 6.0f)));
      const float sf_value = e4m3_to_float(sf);
      const float out_scale = sf_value == 0.0f ? 0.0f : 1.0f / (sf_value * (1.0f / g));
      out.nvfp4_scale[nvfp4_scale_index(q.nvfp4_layout, token, b, scale_cols)] = sf;
      for (int k = 0; k < kNvfp4BlockSize; k += 2) {
        const std::uint8_t lo = float_to_e2m1(blk[k] * out_scale);
        const std::uint8_t hi = float_to_e2m1(blk[k + 1] * out_scale);
        out.nvfp4[(base + b * kNvfp4BlockSize + k) / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
      }
    }
  }
}

// Resizes a reused output to (dtype, count); every element is overwritten afterwards.
void shape_output(Tensor& t, DType dtype, std::size_t count) {
  if (t.dtype() != dtype || t.size() != count) t = Tensor(dtype, count);
}

// What every row of one call shares.
template <DType T> struct RowJob {
  using Bits = typename Element<T>::Bits;
  const FusedConfig& c;
  const std::vector<const Bits*>& rank_data;  // in summation order
  const Bits* residual;
  Bits* allreduce;
  Bits* residual_out;
  Bits* norm_out;
  bool any_quant;
  FusedOutputs& out;
};

// acc = T(acc + v), the add of the kernels that round after every step.
template <DType T>
FUSIONCHECK_ROW_KERNEL void add_rounded(float* acc, const float* v, std::size_t n,
                                        typename Element<T>::Bits* rounded) {
  add_row(acc, v, n);
  round_row<T>(acc, rounded, n);
  widen_row<T>(rounded, acc, n, ZeroRead::as_is);
}

// out = the island of ranks first..first+3 (SumOrder, fused.hpp); tmp and pair: scratch rows.
template <DType T>
FUSIONCHECK_ROW_KERNEL void island_sum(const RowJob<T>& job, std::size_t base, std::size_t first,
                                       float* out, float* tmp, float* pair,
                                       typename Element<T>::Bits* rounded) {
  const FusedConfig& c = job.c;
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const ZeroRead zeros = zero_read(c);
  auto rank_row = [&](std::size_t r, float* into) {
    widen_row<T>(job.rank_data[first + r] + base, into, hidden, zeros);
  };
  rank_row(0, out);
  rank_row(1, tmp);
  add_rounded<T>(out, tmp, hidden, rounded);
  if (c.sum_order == SumOrder::pairwise_islands_of_4) {
    rank_row(2, pair);
    rank_row(3, tmp);
    add_rounded<T>(pair, tmp, hidden, rounded);
    add_rounded<T>(out, pair, hidden, rounded);
  } else {
    rank_row(2, tmp);
    add_rounded<T>(out, tmp, hidden, rounded);
    rank_row(3, tmp);
    add_rounded<T>(out, tmp, hidden, rounded);
  }
}

// The call's elements (FusedConfig::call_tokens), and where this config's rows start in them.
inline std::size_t call_elements(const FusedConfig& c) {
  return static_cast<std::size_t>(c.call_tokens > 0 ? c.call_tokens : c.tokens) *
         static_cast<std::size_t>(c.hidden);
}
inline std::size_t slice_offset(const FusedConfig& c) {
  return static_cast<std::size_t>(c.first_row) * static_cast<std::size_t>(c.hidden);
}

// The owner of flat element `index` of the call in vLLM's two-stage partition (fused.hpp,
// "parts").
inline std::size_t part_owner(const FusedConfig& c, std::size_t index) {
  const std::size_t pack = 16 / static_cast<std::size_t>(dtype_bytes(c.dtype));
  const std::size_t ranks = static_cast<std::size_t>(c.ranks);
  const std::size_t part = call_elements(c) / pack / ranks;
  return part == 0 ? ranks - 1 : std::min(index / pack / part, ranks - 1);
}

// acc = the fp32 sum of the row, each run of elements of one part owner's in that owner's
// rotated order (rank_data is in rank order here).
template <DType T>
FUSIONCHECK_ROW_KERNEL void part_owner_sum(const RowJob<T>& job, std::size_t base, float* acc,
                                           float* tmp) {
  const FusedConfig& c = job.c;
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const auto ranks = job.rank_data.size();
  const ZeroRead zeros = zero_read(c);
  const std::size_t at = slice_offset(c) + base;  // the row's first element in the call
  for (std::size_t start = 0; start < hidden;) {
    const std::size_t owner = part_owner(c, at + start);
    std::size_t end = start + 1;
    while (end < hidden && part_owner(c, at + end) == owner) ++end;
    const std::size_t n = end - start;
    widen_row<T>(job.rank_data[owner] + base + start, acc + start, n, zeros);
    for (std::size_t k = 1; k < ranks; ++k) {
      widen_row<T>(job.rank_data[(owner + k) % ranks] + base + start, tmp + start, n, zeros);
      add_row(acc + start, tmp + start, n);
    }
    start = end;
  }
}

// acc = the sum of the row, each run of elements of one shard in the ring's order from the
// shard's index, every add rounded to T (fused.hpp, "shards").
template <DType T>
FUSIONCHECK_ROW_KERNEL void ring_shard_sum(const RowJob<T>& job, std::size_t base, float* acc,
                                           float* tmp, typename Element<T>::Bits* rounded) {
  const FusedConfig& c = job.c;
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const auto ranks = job.rank_data.size();
  const std::size_t shard = call_elements(c) / ranks;
  const std::size_t at = slice_offset(c) + base;  // the row's first element in the call
  const ZeroRead zeros = zero_read(c);
  for (std::size_t start = 0; start < hidden;) {
    const std::size_t first = (at + start) / shard;
    const std::size_t end = std::min(hidden, (first + 1) * shard - at);
    const std::size_t n = end - start;
    widen_row<T>(job.rank_data[first] + base + start, acc + start, n, zeros);
    for (std::size_t k = 1; k < ranks; ++k) {
      widen_row<T>(job.rank_data[(first + k) % ranks] + base + start, tmp + start, n, zeros);
      add_rounded<T>(acc + start, tmp + start, n, rounded + start);
    }
    start = end;
  }
}

// One token row. Each step is its own loop over the row so that the compiler vectorises it
// (the rows stay in cache), in the machine's vector width (vector_clones.hpp: every loop
// here is element-wise or keeps its own fixed lanes, so the width changes no value); the
// arithmetic per element is exactly the order in fused.hpp. scratch: 5 * hidden floats
// (the last hidden of them the norm weights), bits: hidden.
template <DType T>
FUSIONCHECK_VECTOR_CLONES void fused_row(const RowJob<T>& job, std::size_t t, float* scratch,
                                         typename Element<T>::Bits* rounded) {
  using E = Element<T>;
  const FusedConfig& c = job.c;
  const auto hidden = static_cast<std::size_t>(c.hidden);
  float* const acc = scratch;
  float* const tmp = acc + hidden;
  float* const y = tmp + hidden;
  float* const quant_in = y + hidden;
  const float* const w = quant_in + hidden;
  const std::size_t base = t * hidden;
  const ZeroRead zeros = zero_read(c);
  const bool ftz = c.fast_math;
  if (c.sum_order == SumOrder::part_owner_rotated) {
    part_owner_sum<T>(job, base, acc, tmp);
  } else if (c.sum_order == SumOrder::ring_shards) {
    ring_shard_sum<T>(job, base, acc, tmp, rounded);
  } else if (c.sum_order == SumOrder::rank_order) {
    widen_row<T>(job.rank_data[0] + base, acc, hidden, zeros);
    flush_row(acc, hidden, ftz);
    for (std::size_t r = 1; r < job.rank_data.size(); ++r) {
      widen_row<T>(job.rank_data[r] + base, tmp, hidden, zeros);
      flush_row(tmp, hidden, ftz);
      add_row(acc, tmp, hidden);
      flush_row(acc, hidden, ftz);
      if (c.accumulation == Accumulation::per_step) {
        round_row<T>(acc, rounded, hidden);
        widen_row<T>(rounded, acc, hidden, ZeroRead::as_is);
      }
    }
  } else {  // y and quant_in are free until the norm: the second island's buffers
    island_sum<T>(job, base, 0, acc, tmp, y, rounded);
    island_sum<T>(job, base, 4, quant_in, tmp, y, rounded);
    add_rounded<T>(acc, quant_in, hidden, rounded);
  }
  round_row<T>(acc, job.allreduce + base, hidden);
  widen_row<T>(job.allreduce + base, acc, hidden, ZeroRead::as_is);
  flush_row(acc, hidden, ftz);
  widen_row<T>(job.residual + base, tmp, hidden, ZeroRead::as_is);
  flush_row(tmp, hidden, ftz);
  add_row(acc, tmp, hidden);
  flush_row(acc, hidden, ftz);
  round_row<T>(acc, job.residual_out + base, hidden);
  widen_row<T>(job.residual_out + base, acc, hidden, ZeroRead::as_is);  // x
  flush_row(acc, hidden, ftz);
  rmsnorm_row(acc, w, hidden, c.eps, ftz, y);
  round_row<T>(y, job.norm_out + base, hidden);
  if (job.any_quant) {
    for (std::size_t j = 0; j < hidden; ++j) quant_in[j] = E::to_float(job.norm_out[base + j]);
    quantise_row(c.quant, quant_in, hidden, t, job.out);
  }
}

template <DType T>
void compute_typed(const FusedConfig& c, const FusedInputs& in, FusedOutputs& out) {
  using E = Element<T>;
  using Bits = typename E::Bits;
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const auto tokens = static_cast<std::size_t>(c.tokens);
  const std::size_t count = tokens * hidden;

  shape_output(out.allreduce, T, count);
  shape_output(out.residual_out, T, count);
  shape_output(out.norm_out, T, count);
  const QuantConfig& q = c.quant;
  out.fp8_static.resize(q.fp8_static ? count : 0);
  out.fp8_dynamic.resize(q.fp8_dynamic ? count : 0);
  out.fp8_dynamic_scale.resize(q.fp8_dynamic ? tokens : 0);
  out.nvfp4.resize(q.nvfp4 ? count / 2 : 0);
  out.nvfp4_scale.assign(  // padding must read 0
      q.nvfp4 ? nvfp4_scale_storage(q.nvfp4_layout, tokens, hidden / kNvfp4BlockSize) : 0, 0);
  const std::size_t mx_scale_bytes =
      q.mxfp8 ? nvfp4_scale_storage(q.mxfp8_layout, tokens, hidden / kMxfp8BlockSize) : 0;
  out.mxfp8.resize(q.mxfp8 ? count : 0);
  out.mxfp8_scale.assign(mx_scale_bytes, 0);
  out.mxfp8_scale_written.assign(mx_scale_bytes, 0);
  out.group_fp8.resize(q.group_fp8 ? count : 0);
  out.group_fp8_scale.assign(  // the padding words and bytes read 0
      q.group_fp8 ? group_fp8_scale_bytes(tokens, hidden / static_cast<std::size_t>(q.group_size),
                                          group_fp8_aligned_mn(q, tokens))
                  : 0,
      0);
  const bool any_quant = q.fp8_static || q.fp8_dynamic || q.nvfp4 || q.mxfp8 || q.group_fp8;

  // In summation order: rank sum_from, sum_from + 1, ... (mod N); rank order by default.
  std::vector<const Bits*> rank_data;
  const std::size_t n_ranks = in.rank_inputs.size();
  for (std::size_t k = 0; k < n_ranks; ++k)
    rank_data.push_back(
        in.rank_inputs[(static_cast<std::size_t>(c.sum_from) + k) % n_ranks].view<T>().data());
  const Bits* residual = in.residual_in.view<T>().data();
  Bits* allreduce = out.allreduce.view<T>().data();
  Bits* residual_out = out.residual_out.view<T>().data();
  Bits* norm_out = out.norm_out.view<T>().data();
  const Bits* gamma = in.gamma.view<T>().data();

  const RowJob<T> job{c, rank_data, residual, allreduce, residual_out, norm_out, any_quant, out};

  // Rows are independent: several threads for large calls (OpenMP), each with its own rows
  // of scratch, kept per thread between calls (allocating and first touching them on every
  // call dominated single-token calls).
#pragma omp parallel if (count >= (1u << 14))
  {
    thread_local std::vector<float> scratch;
    thread_local std::vector<Bits> scratch_bits;
    if (scratch.size() < 5 * hidden) scratch.resize(5 * hidden);
    if (scratch_bits.size() < hidden) scratch_bits.resize(hidden);
    float* const w = scratch.data() + 4 * hidden;  // weight_bias + gamma, as in norm_weights
    for (std::size_t j = 0; j < hidden; ++j) w[j] = norm_weight<T>(c, gamma[j]);
#pragma omp for schedule(static)
    for (std::ptrdiff_t row = 0; row < static_cast<std::ptrdiff_t>(tokens); ++row)
      fused_row<T>(job, static_cast<std::size_t>(row), scratch.data(), scratch_bits.data());
  }
}

template <DType T>
std::vector<float> norm_before_rounding_typed(const FusedConfig& c, const Tensor& residual_out,
                                              const Tensor& gamma) {
  using E = Element<T>;
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const auto ro = residual_out.view<T>();
  const std::vector<float> w = norm_weights<T>(c, gamma);
  std::vector<float> y(ro.size());
  const auto rows = static_cast<std::ptrdiff_t>(ro.size() / hidden);
  // Rows are independent: several threads for large tensors (OpenMP).
#pragma omp parallel if (ro.size() >= (1u << 14))
  {
    std::vector<float> x(hidden);
#pragma omp for schedule(static)
    for (std::ptrdiff_t row = 0; row < rows; ++row) {
      const std::size_t base = static_cast<std::size_t>(row) * hidden;
      for (std::size_t j = 0; j < hidden; ++j) x[j] = E::to_float(ro[base + j]);
      flush_row(x.data(), hidden, c.fast_math);
      rmsnorm_row(x.data(), w.data(), hidden, c.eps, c.fast_math, y.data() + base);
    }
  }
  return y;
}

}  // namespace

void validate(const FusedConfig& c, const FusedInputs& in) {
  require(c.ranks >= 1 && c.ranks <= 64,
          "ranks must be in [1, 64], got " + std::to_string(c.ranks));
  require(c.tokens >= 1 && c.tokens <= (1 << 24), "tokens must be in [1, 2^24]");
  require(c.hidden >= 1 && c.hidden <= (1 << 24), "hidden must be in [1, 2^24]");
  require(static_cast<long long>(c.tokens) * c.hidden <= (1LL << 31),
          "tokens * hidden must be <= 2^31");
  require(std::isfinite(c.eps) && c.eps >= 0.0f, "eps must be finite and >= 0");
  require(std::isfinite(c.weight_bias), "weight_bias must be finite");
  require(c.sum_from >= 0 && c.sum_from < c.ranks, "sum_from must be a rank in [0, ranks)");
  require(!(c.canonicalize_neg_zero && c.sanitise_pos_zero),
          "canonicalize_neg_zero and sanitise_pos_zero exclude each other");
  require(
      c.first_row >= 0 && c.call_tokens >= 0 &&
          (c.call_tokens == 0 ? c.first_row == 0
                              : static_cast<long long>(c.first_row) + c.tokens <= c.call_tokens),
      "first_row and call_tokens must place the rows inside the call");
  const std::size_t call_bytes = call_elements(c) * static_cast<std::size_t>(dtype_bytes(c.dtype));
  if (c.sum_order == SumOrder::part_owner_rotated)
    require(c.sum_from == 0 && c.accumulation == Accumulation::fp32 && call_bytes % 16 == 0,
            "the part-owner order needs sum_from 0, fp32 accumulation and whole 16-byte packs");
  else if (c.sum_order == SumOrder::ring_shards)
    require(c.sum_from == 0 && c.accumulation == Accumulation::per_step &&
                call_bytes % (16 * static_cast<std::size_t>(c.ranks)) == 0,
            "the ring's shard order needs sum_from 0, per_step accumulation and N shards of "
            "whole 16-byte packs");
  else if (c.sum_order != SumOrder::rank_order)
    require(c.ranks == 8 && c.sum_from == 0 && c.accumulation == Accumulation::per_step,
            "island sum orders need 8 ranks, sum_from 0 and per_step accumulation");
  if (c.fast_math)
    require(c.sum_order == SumOrder::rank_order, "fast_math is modelled in rank order only");
  if (c.quant.fp8_static)
    require(std::isfinite(c.quant.fp8_inv_scale) && c.quant.fp8_inv_scale > 0.0f,
            "fp8_inv_scale must be finite and > 0");
  if (c.quant.mxfp8)
    require(c.hidden % kMxfp8BlockSize == 0, "mxfp8 needs hidden to be a multiple of 32");
  if (c.quant.group_fp8) {
    require(c.quant.group_size > 0 && c.hidden % c.quant.group_size == 0,
            "group_fp8 needs a group_size > 0 that divides hidden");
    require(c.quant.tma_aligned_mn == 0 || c.quant.tma_aligned_mn >= c.tokens,
            "tma_aligned_mn must be 0 or at least the token count");
  }
  if (c.quant.nvfp4) {
    require(c.hidden % kNvfp4BlockSize == 0, "nvfp4 needs hidden to be a multiple of 16");
    require(std::isfinite(c.quant.nvfp4_global_scale) && c.quant.nvfp4_global_scale > 0.0f,
            "nvfp4_global_scale must be finite and > 0");
  }
  const auto count = static_cast<std::size_t>(c.tokens) * static_cast<std::size_t>(c.hidden);
  require(in.rank_inputs.size() == static_cast<std::size_t>(c.ranks),
          "expected " + std::to_string(c.ranks) + " rank inputs, got " +
              std::to_string(in.rank_inputs.size()));
  for (const Tensor& t : in.rank_inputs)
    require(t.dtype() == c.dtype && t.size() == count, "a rank input has the wrong dtype or size");
  require(in.residual_in.dtype() == c.dtype && in.residual_in.size() == count,
          "residual_in has the wrong dtype or size");
  require(in.gamma.dtype() == c.dtype && in.gamma.size() == static_cast<std::size_t>(c.hidden),
          "gamma has the wrong dtype or size");
}

void compute_fused_into(const FusedConfig& c, const FusedInputs& in, FusedOutputs& out) {
  validate(c, in);
  switch (c.dtype) {
    case DType::f16: return compute_typed<DType::f16>(c, in, out);
    case DType::bf16: return compute_typed<DType::bf16>(c, in, out);
    case DType::f32: return compute_typed<DType::f32>(c, in, out);
  }
  throw std::invalid_argument("unknown dtype");
}

FusedOutputs compute_fused(const FusedConfig& c, const FusedInputs& in) {
  FusedOutputs out;
  compute_fused_into(c, in, out);
  return out;
}

std::vector<float> norm_before_rounding(const FusedConfig& c, const Tensor& residual_out,
                                        const Tensor& gamma) {
  require(residual_out.dtype() == c.dtype && gamma.dtype() == c.dtype &&
              gamma.size() == static_cast<std::size_t>(c.hidden) &&
              residual_out.size() % static_cast<std::size_t>(c.hidden) == 0,
          "norm_before_rounding: shapes do not match the config");
  switch (c.dtype) {
    case DType::f16: return norm_before_rounding_typed<DType::f16>(c, residual_out, gamma);
    case DType::bf16: return norm_before_rounding_typed<DType::bf16>(c, residual_out, gamma);
    case DType::f32: return norm_before_rounding_typed<DType::f32>(c, residual_out, gamma);
  }
  throw std::invalid_argument("unknown dtype");
}

}  // namespace fusioncheck::reference
