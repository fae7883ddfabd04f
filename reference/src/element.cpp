#include "fusioncheck/reference/element.hpp"

#include <cmath>

namespace fusioncheck::reference {

std::string_view accumulation_name(Accumulation a) {
  return a == Accumulation::fp32 ? "fp32" : "per_step";
}

float bits_to_float(DType t, std::uint32_t bits) {
  switch (t) {
    case DType::f16: return Element<DType::f16>::to_float(static_cast<std::uint16_t>(bits));
    case DType::bf16: return Element<DType::bf16>::to_float(static_cast<std::uint16_t>(bits));
    case DType::f32: return Element<DType::f32>::to_float(bits);
  }
  return 0.0f;
}

std::uint32_t float_to_bits(DType t, float value) {
  switch (t) {
    case DType::f16: return Element<DType::f16>::from_float(value);
    case DType::bf16: return Element<DType::bf16>::from_float(value);
    case DType::f32: return Element<DType::f32>::from_float(value);
  }
  return 0;
}

float ulp_of(DType t, float value) {
  const float mag = std::fabs(value);
  const std::uint32_t b = float_to_bits(t, mag);
  const float next = bits_to_float(t, b + 1);
  if (std::isinf(next)) return mag - bits_to_float(t, b - 1);  // top binade: same spacing
  return next - mag;
}

bool is_neg_zero(DType t, std::uint32_t bits) {
  return t == DType::f32
             ? protocol::is_neg_zero_bits32(bits)
             : bits <= 0xffffu && protocol::is_neg_zero_bits16(static_cast<std::uint16_t>(bits));
}

std::uint32_t canonicalize(DType t, std::uint32_t bits) {
  if (t == DType::f32) return protocol::canonicalize_bits32(bits);
  return protocol::canonicalize_bits16(static_cast<std::uint16_t>(bits));
}

std::uint32_t neg_zero_bits(DType t) {
  return t == DType::f32 ? protocol::kNegZero32 : protocol::kNegZero16;
}

}  // namespace fusioncheck::reference
