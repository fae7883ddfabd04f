#pragma once
// Element types of the reference and their bit-level conversions.
// Tensors cross the API as raw bits (what the GPU writes), so every conversion here goes
// bits <-> float through Eigen::half / Eigen::bfloat16 (round-to-nearest-even, subnormals,
// inf and NaN per IEEE; a NaN result keeps its sign and becomes the quiet NaN 0x7e00 / 0x7fc0).
#include <Eigen/Core>

#include <bit>
#include <cstdint>
#include <string_view>

#include "fusioncheck/protocol/sentinel.hpp"
#include "fusioncheck/protocol/vocabulary.hpp"

namespace fusioncheck::reference {

using protocol::DType;  // the shared element types (protocol/vocabulary.hpp)
using protocol::dtype_bytes;
using protocol::dtype_name;

// How the rank-order sum is rounded (docs/design.md, step 6).
//   fp32:     accumulate in float, round to T once at the end.
//   per_step: round to T after every addition (T(T(x0 + x1) + x2) ...).
enum class Accumulation : std::uint8_t { fp32, per_step };

std::string_view accumulation_name(Accumulation a);

// Compile-time traits, one per element type: Bits is the storage word, Value the Eigen type.
template <DType T>
struct Element;

template <>
struct Element<DType::f16> {
  using Bits = std::uint16_t;
  static float to_float(Bits b) { return static_cast<float>(std::bit_cast<Eigen::half>(b)); }
  static Bits from_float(float f) { return std::bit_cast<Bits>(Eigen::half(f)); }
  static constexpr int mantissa_bits = 10;  // explicit fraction bits
  static constexpr int min_normal_exp = -14;
};

template <>
struct Element<DType::bf16> {
  using Bits = std::uint16_t;
  // Widening bf16 is exact by definition (the bits are the top half of the float's). Done
  // with a shift because Eigen's bfloat16 -> float goes through memory and does not
  // vectorise; property_tests check it equals Eigen's for all 65,536 patterns.
  static float to_float(Bits b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }
  static Bits from_float(float f) { return std::bit_cast<Bits>(Eigen::bfloat16(f)); }
  static constexpr int mantissa_bits = 7;
  static constexpr int min_normal_exp = -126;
};

template <>
struct Element<DType::f32> {
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
template <DType T>
constexpr bool is_neg_zero(typename Element<T>::Bits bits) {
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
