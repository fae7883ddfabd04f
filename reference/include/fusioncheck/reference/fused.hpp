#pragma once
// The CPU reference of one fused call: allreduce + residual add + RMSNorm (+ quantisation)
// over N ranks' inputs of shape [tokens x hidden]. Order of operations (docs/design.md step 6),
// for element j of token t, with T the element type and float(.) exact widening:
//
//   x_r      = canonicalize(input_r[j])          -0 -> +0, as the push does (step 3); only
//                      with canonicalize_neg_zero (the one-shot Lamport path). The two-shot
//                      and NCCL paths have no sentinel and sum the inputs as they are, so
//                      e.g. (-0) + (-0) = -0 there.
//   sum      fp32:     s = float(x_0); s += float(x_r) for r = 1..N-1 in rank order (float
//                      adds); allreduce = T(s)                       (one final rounding)
//            per_step: a = x_0; a = T(float(a) + float(x_r)) for r = 1..N-1
//                      allreduce = a                                 (rounded every step)
//                      (float has >= 2p+2 significand bits for fp16 and bf16, so this
//                      double rounding equals a correctly rounded T add, e.g. __hadd)
//            order:    r runs from sum_from: sum_from, sum_from + 1, ... (mod N); 0 by
//                      default (rank order). FlashInfer's older Lamport kernel
//                      (trtllm_allreduce.cuh) sums on rank k from k (its own input first),
//                      so its ranks' results may differ in the low bits for N >= 3.
//            islands:  per_step on 8 ranks (FlashInfer's 8-rank PCIe kernels), SumOrder:
//                      islands_of_4           I_k = ((x_4k + x_4k+1) + x_4k+2) + x_4k+3
//                      pairwise_islands_of_4  I_k = (x_4k + x_4k+1) + (x_4k+2 + x_4k+3)
//                      allreduce = I_0 + I_1, every add rounded to T
//            parts:    SumOrder::part_owner_rotated, fp32 (vLLM's two-stage kernel): the
//                      flat tensor of P = tokens * hidden / E packs (E = 16 bytes of T) is cut
//                      into N parts of floor(P / N) packs, the last rank's part taking the
//                      rest; an element of rank o's part sums from o: o, o + 1, ... (mod N)
//            shards:   SumOrder::ring_shards, every add rounded to T (FlashInfer's copy-engine
//                      ring): the flat tensor cut into N shards of tokens * hidden / N elements
//                      (a multiple of 16 bytes); shard c sums from rank c: c, c + 1, ... (mod N)
//            parts and shards are cut from the whole call: a config that computes rows
//            [first_row, first_row + tokens) of a call of call_tokens rows says so.
//   x_r with sanitise_pos_zero: +0 -> -0, as the push of FlashInfer's PCIe kernels does (their
//                      sentinel is +0); -0 is the additive identity, so only zero results
//                      can change (their sign).
//   residual_out = T(float(allreduce) + float(residual_in[j]))      (the kernel adds the
//                      T-rounded sum to the residual in fp32 and rounds once)
//   x_j      = float(residual_out[j])
//   ss       = sum_j x_j * x_j in fp32: 8 partial sums over j % 8, then combined pairwise
//              (the GPU's order differs: tolerance.hpp bounds any order)
//   r        = 1.0f / sqrtf(ss / hidden + eps)            (float ops, IEEE-rounded)
//   norm_out = T((x_j * r) * (weight_bias + float(gamma[j])))
//
// fast_math (a kernel compiled with -use_fast_math, as FlashInfer's JIT does): every fp32 add,
// multiply and quotient above flushes subnormal operands and results to a zero of the same
// sign (PTX .ftz): each widened input (float(x_r), float(allreduce), float(residual_in[j]),
// x_j, float(gamma[j]), weight_bias) and each result (every partial sum, square, product and
// quotient) is flushed. Conversions to T are not (they are cvt.rn without .ftz). Only bf16
// reaches fp32 subnormals (its exponent range is fp32's); fp16 values are normal in fp32. The
// approximate division and reciprocal square root of that build are covered by the norm
// tolerance (tolerance.hpp), not modelled here. Rank order only.
//
// Quantised outputs read q_j = float(norm_out[j]) (the T-rounded norm output):
//   fp8 static:  code = e4m3(q_j * fp8_inv_scale). The kernel must multiply by the same
//                float inverse scale (not divide by a scale); dequantised = e4m3 / inv_scale.
//   fp8 dynamic: per token, amax = max_j |q_j|; scale = max(amax / 448, kFp8MinScale)
//                (the floor makes an all-zero token give scale kFp8MinScale and all-zero
//                codes, never a division by zero); code = e4m3(q_j * (1.0f / scale)).
//   nvfp4:       per block of 16 elements of a token, with g = nvfp4_global_scale
//                (typically 448 * 6 / amax_global):
//                  sf      = e4m3(g * (amax_block * (1.0f / 6.0f)))    block scale code
//                  out_sc  = sf == 0 ? 0 : 1.0f / (e4m3_to_float(sf) * (1.0f / g))
//                  element = e2m1(q_j * out_sc)
//                dequantised = e2m1_to_float(element) * e4m3_to_float(sf) / g.
//                Two elements per byte, element 2k in the low nibble. The GPU recipe
//                (TensorRT-LLM / FlashInfer) uses approximate reciprocals here; the
//                checkers in tolerance.hpp allow for that.
//   mxfp8:       per block of 32 elements of a token (quant.hpp): sf = float_to_ue8m0_ceil(
//                amax * (1.0f / 448)); code = e4m3(fmax(fmin(q_j * ue8m0_inverse(sf), 448),
//                -448)) (C fmin/fmax: a NaN product clamps to +448). Scales in mxfp8_layout,
//                the 128x4 swizzle of NVFP4; its padding columns read 0, its padding rows are
//                not written by the kernel (mxfp8_scale_written says which bytes are).
//   group fp8:   per group of group_size elements of a token: y = group_fp8_scale(amax);
//                code = e4m3(fmin(fmax(q_j / y, -448), 448)); the exponent of y packed four
//                to a word (group_fp8_scale_index), every storage byte defined (zeros for
//                the padding). Finite inputs only (quant.hpp). Bit-exact in IEEE builds; the
//                fast-math build divides amax by 448 approximately, so a quotient at a power
//                of two may round to either of two scales there.
#include <cstdint>
#include <vector>

#include "fusioncheck/reference/quant.hpp"
#include "fusioncheck/reference/tensor.hpp"

namespace fusioncheck::reference {

inline constexpr float kFp8MinScale = 1.0f / (448.0f * 512.0f);
using protocol::kNvfp4BlockSize;

struct QuantConfig {
  bool fp8_static = false;
  float fp8_inv_scale = 1.0f;  // code = e4m3(q * fp8_inv_scale)
  bool fp8_dynamic = false;
  bool nvfp4 = false;
  float nvfp4_global_scale = 1.0f;
  Nvfp4Layout nvfp4_layout = Nvfp4Layout::swizzled128x4;
  bool mxfp8 = false;
  Nvfp4Layout mxfp8_layout = Nvfp4Layout::swizzled128x4;  // the same two layouts
  bool group_fp8 = false;
  int group_size = 128;    // block_quant_group_size
  int tma_aligned_mn = 0;  // tokens padded for the scale storage; 0: tokens rounded up to 4
};

// The padded token count of the packed group scales (QuantConfig::tma_aligned_mn, or
// DeepGEMM's TMA alignment: tokens rounded up to 4).
inline std::size_t group_fp8_aligned_mn(const QuantConfig& q, std::size_t tokens) {
  return q.tma_aligned_mn > 0 ? static_cast<std::size_t>(q.tma_aligned_mn) : (tokens + 3) / 4 * 4;
}

enum class SumOrder : std::uint8_t {
  rank_order,
  islands_of_4,
  pairwise_islands_of_4,
  part_owner_rotated,
  ring_shards
};

struct FusedConfig {
  int ranks = 2;
  int tokens = 1;
  int hidden = 16;
  DType dtype = DType::bf16;
  Accumulation accumulation = Accumulation::fp32;
  float eps = 1e-6f;
  float weight_bias = 0.0f;           // added to gamma: 0, or 1 for "(1 + gamma)" models
  bool canonicalize_neg_zero = true;  // one-shot Lamport semantics (see above)
  int sum_from = 0;                   // first rank of the summation order (see above)
  bool sanitise_pos_zero = false;     // +0 inputs summed as -0 (see above)
  SumOrder sum_order = SumOrder::rank_order;
  // These rows are rows [first_row, first_row + tokens) of a call of call_tokens rows (0: the
  // whole call): the parts and shards of the position-dependent orders are the call's.
  int first_row = 0;
  int call_tokens = 0;
  bool fast_math = false;  // flush to zero as the fast-math build does (see above)
  QuantConfig quant;
};

struct FusedInputs {
  std::vector<Tensor> rank_inputs;  // ranks x [tokens * hidden], rank r at index r
  Tensor residual_in;               // [tokens * hidden]
  Tensor gamma;                     // [hidden]
};

struct FusedOutputs {
  Tensor allreduce;                               // [tokens * hidden], identical on every rank
  Tensor residual_out;                            // [tokens * hidden]
  Tensor norm_out;                                // [tokens * hidden]
  std::vector<std::uint8_t> fp8_static;           // [tokens * hidden] e4m3 codes
  std::vector<std::uint8_t> fp8_dynamic;          // [tokens * hidden] e4m3 codes
  std::vector<float> fp8_dynamic_scale;           // [tokens]
  std::vector<std::uint8_t> nvfp4;                // [tokens * hidden / 2] packed e2m1
  std::vector<std::uint8_t> nvfp4_scale;          // e4m3 codes in quant.nvfp4_layout, padding 0
  std::vector<std::uint8_t> mxfp8;                // [tokens * hidden] e4m3 codes
  std::vector<std::uint8_t> mxfp8_scale;          // ue8m0 codes in quant.mxfp8_layout
  std::vector<std::uint8_t> mxfp8_scale_written;  // 1 where the kernel writes mxfp8_scale
  std::vector<std::uint8_t> group_fp8;            // [tokens * hidden] e4m3 codes
  std::vector<std::uint8_t> group_fp8_scale;      // packed ue8m0 exponents (quant.hpp)
};

// Throws std::invalid_argument (one line) on a bad shape, dtype mismatch or bad config:
// ranks in [1, 64], tokens >= 1, hidden >= 1 (a multiple of 16 when nvfp4 is on, of 32 with
// mxfp8, of group_size with group_fp8; tma_aligned_mn 0 or >= tokens),
// eps >= 0 and finite, scales finite and > 0; island orders on 8 ranks, per_step, from rank 0;
// at most one of canonicalize_neg_zero and sanitise_pos_zero; fast_math in rank order only.
void validate(const FusedConfig& config, const FusedInputs& inputs);

// All outputs of one call. Validates first.
FusedOutputs compute_fused(const FusedConfig& config, const FusedInputs& inputs);
// The same, reusing out's buffers (no allocation when the shapes repeat between calls).
void compute_fused_into(const FusedConfig& config, const FusedInputs& inputs, FusedOutputs& out);

// The float value of norm_out[t, j] before its final rounding to T, for every element
// (used by the tolerance and by tests). Needs the residual_out of compute_fused.
std::vector<float> norm_before_rounding(const FusedConfig& config, const Tensor& residual_out,
                                        const Tensor& gamma);

}  // namespace fusioncheck::reference
