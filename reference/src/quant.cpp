#include "fusioncheck/reference/quant.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

namespace fusioncheck::reference {
namespace {

// floor(log2(a)) for finite a > 0.
int floor_log2(float a) {
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  return e - 1;
}

// Shared rounding of a minifloat with `mant_bits` explicit fraction bits whose smallest
// normal exponent is `min_exp`: returns (exponent field, fraction field) for |a| below the
// format's max. std::nearbyint rounds half to even in the default rounding mode, and
// a / quantum is exact because quantum is a power of two well inside float's range.
struct Fields {
  int exp_field;
  int fraction;
};
Fields round_minifloat(float a, int mant_bits, int min_exp, int bias) {
  int e = std::max(floor_log2(a), min_exp);
  const int one = 1 << mant_bits;  // the implicit leading one, in quanta
  auto m = static_cast<int>(std::nearbyint(std::ldexp(a, mant_bits - e)));
  if (m == 2 * one) {  // rounded up into the next binade
    ++e;
    m = one;
  }
  if (e == min_exp && m < one) return {0, m};  // subnormal (or zero)
  return {e + bias, m - one};
}

}  // namespace

namespace {
// Every e4m3 code's value, built once from the definition (exact: small integers times
// powers of two).
std::array<float, 256> e4m3_values_table() {
  std::array<float, 256> table{};
  for (int code = 0; code < 256; ++code) {
    const bool negative = (code & 0x80) != 0;
    const int exp_field = (code >> 3) & 0xf;
    const int fraction = code & 0x7;
    float mag = 0.0f;
    if (exp_field == 0xf && fraction == 0x7) mag = std::numeric_limits<float>::quiet_NaN();
    else if (exp_field == 0) mag = std::ldexp(static_cast<float>(fraction), -9);
    else mag = std::ldexp(static_cast<float>(8 + fraction), exp_field - 7 - 3);
    table[static_cast<std::size_t>(code)] = negative ? -mag : mag;
  }
  return table;
}
}  // namespace

float e4m3_to_float(std::uint8_t code) {
  static const std::array<float, 256> table = e4m3_values_table();
  return table[code];
}

std::uint8_t float_to_e2m1(float x) {
  if (std::isnan(x)) return 0x7;  // no NaN in e2m1: assumed +max (see quant.hpp)
  const std::uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const float a = std::fabs(x);
  if (a >= kE2m1Max) return sign | 0x7;
  if (a == 0.0f) return sign;
  const Fields f = round_minifloat(a, 1, 0, 1);
  return static_cast<std::uint8_t>(sign | (f.exp_field << 1) | f.fraction);
}

float e2m1_to_float(std::uint8_t code) {
  const bool negative = (code & 0x8) != 0;
  const int exp_field = (code >> 1) & 0x3;
  const int fraction = code & 0x1;
  const float mag = exp_field == 0 ? 0.5f * static_cast<float>(fraction)
                                   : std::ldexp(static_cast<float>(2 + fraction), exp_field - 2);
  return negative ? -mag : mag;
}

std::uint8_t float_to_ue8m0_ceil(float v) {
  if (v <= 0.0f) return 0;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
  const std::uint32_t exp_field = (bits >> 23) & 0xffu;
  const std::uint32_t fraction = bits & 0x7fffffu;
  // A subnormal at or below 2^-127 (fraction 0x400000) is covered by code 0's 2^-127.
  const std::uint32_t bump =
      fraction != 0u && !(exp_field == 0u && fraction <= 0x400000u) ? 1u : 0u;
  return static_cast<std::uint8_t>(std::min(exp_field + bump, 254u));
}

float ue8m0_inverse(std::uint8_t sf) {
  if (sf == 0) return 0.0f;
  return std::bit_cast<float>(static_cast<std::uint32_t>(std::max(254 - static_cast<int>(sf), 0))
                              << 23);
}

float group_fp8_scale(float group_absmax) {
  const float y = std::fmax(group_absmax / kE4m3Max, 1e-10f);
  std::uint32_t bits = std::bit_cast<std::uint32_t>(y);
  if ((bits & 0x7fffffu) != 0u) bits = (bits + 0x800000u) & 0x7f800000u;
  return std::bit_cast<float>(bits);
}

float e4m3_half_spacing(float v) {
  const float a = std::fabs(v);
  const int e = a == 0.0f ? -6 : std::max(floor_log2(a), -6);
  return std::ldexp(1.0f, e - 4);
}

float e2m1_half_spacing(float v) {
  const float a = std::fabs(v);
  const int e = a == 0.0f ? 0 : std::clamp(floor_log2(a), 0, 2);
  return std::ldexp(1.0f, e - 2);
}

}  // namespace fusioncheck::reference
