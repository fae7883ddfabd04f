#pragma once
// Element types of the reference and their bit-level conversions.
// Tensors cross the API as raw bits (what the GPU writes), so every conversion here goes
// bits <-> float with the semantics of Eigen::half / Eigen::bfloat16 (round-to-nearest-even,
// subnormals, inf and NaN per IEEE; a NaN result keeps its sign and becomes the quiet NaN
// 0x7e00 / 0x7fc0), by branch-free copies of Eigen's own routines (below).
#include <Eigen/Core>

#include <bit>
#include <cstdint>
#include <string_view>

#include "fusioncheck/protocol/sentinel.hpp"
#include "fusioncheck/protocol/vocabulary.hpp"
#include "fusioncheck/reference/generator_elements.hpp"

namespace fusioncheck::reference {

using protocol::DType;  // the shared element types (protocol/vocabulary.hpp)
using protocol::dtype_bytes;
using protocol::dtype_name;

// How the rank-order sum is rounded (docs/design.md, step 6).
//   fp32:     accumulate in float, round to T once at the end.
//   per_step: round to T after every addition (T(T(x0 + x1) + x2) ...).
enum class Accumulation : std::uint8_t { fp32, per_step };

std::string_view accumulation_name(Accumulation a);

// Eigen's software conversions (Eigen/src/Core/arch/Default/Half.h and BFloat16.h, the
// path of a build without F16C), rewritten without branches: every case is computed and the
// right one selected, so that the reference's loops over rows vectorise (the branchy
// originals made fp16 calls cost four times bf16 ones). The same bits as Eigen for every
// input: property_tests/reference/conversion_test.cpp compares all 65,536 halves and, for
// float -> T, every float's top 16 bits with many low-bit patterns and a large random sample.
// fp16 -> float is here; float -> fp16 / bf16 is in generator_elements.hpp, which the GPU's
// input generator compiles too.
namespace detail {

inline float half_bits_to_float(std::uint16_t h) {
  constexpr std::uint32_t shifted_exp = 0x7c00u << 13;  // the exponent field after the shift
  const std::uint32_t o = ((h & 0x7fffu) << 13) + ((127u - 15u) << 23);
  const std::uint32_t exp = (static_cast<std::uint32_t>(h) << 13) & shifted_exp;
  const std::uint32_t inf_nan = o + ((128u - 16u) << 23);  // exponent all ones: stays all ones
  // Zero or subnormal: exact float arithmetic renormalises (Eigen's "magic" subtraction).
  const std::uint32_t small = std::bit_cast<std::uint32_t>(std::bit_cast<float>(o + (1u << 23)) -
                                                           std::bit_cast<float>(113u << 23));
  const std::uint32_t mag = exp == shifted_exp ? inf_nan : exp == 0 ? small : o;
  return std::bit_cast<float>(mag | (static_cast<std::uint32_t>(h & 0x8000u) << 16));
}

}  // namespace detail

// Compile-time traits, one per element type: Bits is the storage word.
template <DType T> struct Element;

template <> struct Element<DType::f16> {
  using Bits = std::uint16_t;
  static float to_float(Bits b) { return detail::half_bits_to_float(b); }
  static Bits from_float(float f) { return elements::float_to_half_bits(f); }
  static constexpr int mantissa_bits = 10;  // explicit fraction bits
  static constexpr int min_normal_exp = -14;
};

template <> struct Element<DType::bf16> {
  using Bits = std::uint16_t;
  // Widening bf16 is exact by definition (the bits are the top half of the float's). Done
  // with a shift because Eigen's bfloat16 -> float goes through memory and does not
  // vectorise; property_tests check it equals Eigen's for all 65,536 patterns.
  static float to_float(Bits b) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
  }
  static Bits from_float(float f) { return elements::float_to_bf16_bits(f); }
  static constexpr int mantissa_bits = 7;
  static constexpr int min_normal_exp = -126;
};

template <> struct Element<DType::f32> {
  using Bits = std::uint32_t;
  static float to_float(Bits b) { return std::bit_cast<float>(b); }
  static Bits from_float(float f) { return std::bit_cast<Bits>(f); }
  static constexpr int mantissa_bits = 23;
  static constexpr int min_normal_exp = -126;
};

// Runtime-dispatched forms for code that is not on a hot path. Bits of 16-bit types live
// in the low half of the uint32_t.
float bits_to_float(DType t, std::uint32_t bits);
std::uint32_t float_to_bits(DType t, float value);  // round-to-nearest-even
// Rounds a float to T and back: the value T would hold.
inline float round_to(DType t, float value) { return bits_to_float(t, float_to_bits(t, value)); }
// Distance from |value| (finite, already a T value) to the next T value away from zero.
float ulp_of(DType t, float value);

// --- Typed sentinel helpers, built on protocol/sentinel.hpp (bitwise, never float ==).
template <DType T> constexpr bool is_neg_zero(typename Element<T>::Bits bits) {
  if constexpr (T == DType::f32) return protocol::is_neg_zero_bits32(bits);
  else return protocol::is_neg_zero_bits16(bits);
}
template <DType T>
constexpr typename Element<T>::Bits canonicalize(typename Element<T>::Bits bits) {
  if constexpr (T == DType::f32) return protocol::canonicalize_bits32(bits);
  else return protocol::canonicalize_bits16(bits);
}
bool is_neg_zero(DType t, std::uint32_t bits);
std::uint32_t canonicalize(DType t, std::uint32_t bits);
// The sentinel (negative zero) of T as bits.
std::uint32_t neg_zero_bits(DType t);

}  // namespace fusioncheck::reference
