#pragma once
// One element of a rank's MoE inputs and of its reduction of them (moe.hpp), written once for
// the host and the GPU (FC_HD): reference/src/moe.cpp loops over these, and the GPU suite
// generates a call's expert and token rows and reduces them on the device with the same
// functions (mpi_launch/gpu/cases/device_inputs.cu), so that the two agree bit for bit.
// Sums and products round once per operation: the device build turns off contraction into
// fused multiply-adds (--fmad=false), which a T rounding between them would not survive.
#include <cstddef>
#include <cstdint>

#include "fusioncheck/protocol/sentinel.hpp"
#include "fusioncheck/reference/generator_elements.hpp"

namespace fusioncheck::reference::moe_elements {

using protocol::DType;
namespace el = elements;

// The generators' streams of one rank's MoE parts, from kStreamBase.
inline constexpr int kStreamBase = 2000;
enum class Part : int { expert_rows = 0, token_rows = 1, scales = 2, routing = 3 };
FC_HD int part_stream(int rank, Part part) {
  return kStreamBase + rank * 8 + static_cast<int>(part);
}

// An exact term: m * 2^e with the value drawn at `value_index` of its stream and the exponent of
// the token's element `element` (shared with every rank's input of that element).
FC_HD float exact_term(std::uint64_t stream_pre, std::uint64_t common_pre,
                       std::uint64_t value_index, std::uint64_t element, std::int64_t max_m) {
  const std::uint64_t h = el::element_hash(stream_pre, value_index);
  if (el::purpose_draw(h, el::kNegZero) % 64 == 0) return -0.0f;
  const auto e =
      static_cast<int>(el::purpose_draw(el::element_hash(common_pre, element), el::kExponent) % 10);
  const auto modulus = static_cast<std::uint64_t>(2 * max_m + 1);
  return el::exact_value(
      static_cast<std::int64_t>(el::purpose_draw(h, el::kValue) % modulus) - max_m, e);
}

// A scale: 1 or 2 for exact inputs, else in (0, 1] with 24 random bits.
FC_HD float scale_value(std::uint64_t stream_pre, std::uint64_t index, bool exact) {
  const std::uint64_t d = el::purpose_draw(el::element_hash(stream_pre, index), el::kValue);
  if (exact) return static_cast<float>(1 + d % 2);
  return static_cast<float>(((d >> 8) & 0xffffffu) + 1) * 0x1p-24f;
}

// What one call's expert and token rows are drawn from (moe.hpp's moe_draws).
struct Draws {
  DType dtype = DType::bf16;
  bool exact = true;
  std::int64_t max_m = 1;
  SpecialsSpec specials;         // seed and call index of the call
  std::uint64_t common_pre = 0;  // stream_prefix of kCommonStream
  // Element `value_index` of a stream, for the token element `element`, as T bits.
  FC_HD std::uint16_t value(std::uint64_t stream_pre, std::uint64_t value_index,
                            std::uint64_t element) const {
    const float v = exact ? exact_term(stream_pre, common_pre, value_index, element, max_m)
                          : el::random_element(specials, dtype, stream_pre, value_index);
    return el::float_to_bits16(dtype, v);
  }
};

FC_HD std::uint16_t nan_bits(DType t) { return t == DType::f16 ? 0x7e00u : 0x7fc0u; }

// A 16-bit T as float: exact (every fp16 and bf16 value is a float).
FC_HD float bits16_to_float(DType t, std::uint16_t bits) {
  if (t != DType::f16) return el::bits_float(static_cast<std::uint32_t>(bits) << 16);
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  const std::uint32_t biased = exponent == 31 ? 255u : exponent + 112u;  // inf / NaN kept
  return el::bits_float(sign | (biased << 23) | (mantissa << 13));
}

// T(float(a) + float(b)) and T(float(x) * s) on bits.
FC_HD std::uint16_t add_t(DType t, std::uint16_t a, std::uint16_t b) {
  return el::float_to_bits16(t, bits16_to_float(t, a) + bits16_to_float(t, b));
}
FC_HD std::uint16_t scaled_t(DType t, std::uint16_t x, float scale) {
  return el::float_to_bits16(t, bits16_to_float(t, x) * scale);
}

// One rank's reduction kernel inputs: E expert outputs [E][tokens][hidden], fp32 scales
// [E][tokens], the token input fc2 [tokens][hidden].
struct ReductionView {
  DType dtype = DType::bf16;
  int experts = 1;
  std::size_t tokens = 0, hidden = 0;
  const std::uint16_t* rows = nullptr;
  const float* scales = nullptr;
  const std::uint16_t* token_rows = nullptr;
};
// Element i of the rank's allreduce input, in the kernel's expert order, canonicalised.
FC_HD std::uint16_t reduce_element(const ReductionView& v, std::size_t i) {
  const std::size_t elems = v.tokens * v.hidden;
  std::uint16_t acc = 0;  // +0
  for (int e = 0; e < v.experts; ++e) {
    const auto ue = static_cast<std::size_t>(e);
    acc = add_t(v.dtype, acc,
                scaled_t(v.dtype, v.rows[ue * elems + i], v.scales[ue * v.tokens + i / v.hidden]));
  }
  acc = add_t(v.dtype, acc, v.token_rows[i]);
  return protocol::canonicalize_bits16(acc);
}

// One rank's finalize kernel inputs: the permuted rows [rows][hidden], the row of each
// (token, k) pair [tokens][top_k] (-1: not routed here), its scales in T (or none), the routed
// scaling, the shared expert output [tokens][hidden] (or none).
struct FinalizeView {
  DType dtype = DType::bf16;
  int top_k = 1;
  std::size_t hidden = 0;
  const std::uint16_t* rows = nullptr;
  const std::int32_t* permuted_index = nullptr;
  const std::uint16_t* topk_scales = nullptr;  // null: no scales
  float routed_scaling = 1.0f;
  const std::uint16_t* shared = nullptr;  // null: no shared expert
};
FC_HD std::uint16_t finalize_element(const FinalizeView& v, std::size_t i) {
  const std::size_t t = i / v.hidden, j = i % v.hidden;
  const auto top_k = static_cast<std::size_t>(v.top_k);
  std::uint16_t acc = 0;  // +0
  for (std::size_t k = 0; k < top_k; ++k) {
    const std::int32_t p = v.permuted_index[t * top_k + k];
    if (p == -1) continue;
    const std::uint16_t x = v.rows[static_cast<std::size_t>(p) * v.hidden + j];
    acc = v.topk_scales != nullptr
              ? add_t(v.dtype, acc,
                      scaled_t(v.dtype, x, bits16_to_float(v.dtype, v.topk_scales[t * top_k + k])))
              : add_t(v.dtype, acc, x);
  }
  if (v.routed_scaling != 1.0f) acc = scaled_t(v.dtype, acc, v.routed_scaling);
  if (v.shared != nullptr) acc = add_t(v.dtype, acc, v.shared[i]);
  return protocol::canonicalize_bits16(acc);
}

// Element u of the finalize kernel's permuted rows: row u / hidden holds the expert output of
// the token `token_of[row]` (NaN for a row no pair references: a kernel reading it shows).
FC_HD std::uint16_t permuted_row_element(const Draws& d, std::uint64_t rows_pre,
                                         const int* token_of, std::size_t hidden, std::size_t u) {
  const std::size_t p = u / hidden, j = u % hidden;
  return token_of[p] < 0 ? nan_bits(d.dtype)
                         : d.value(rows_pre, u, static_cast<std::size_t>(token_of[p]) * hidden + j);
}

}  // namespace fusioncheck::reference::moe_elements
