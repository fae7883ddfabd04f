#pragma once
// Independent oracles for the reference's property tests. Nothing here calls Eigen or the
// reference's conversions: the 16-bit formats are decoded and rounded from their fields.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "fusioncheck/reference/reference.hpp"

namespace fusioncheck::reference::oracle {

// Field layout of a binary16-like format.
struct Format {
  int mant_bits;  // explicit fraction bits
  int exp_bits;
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  int exp_max_field() const { return (1 << exp_bits) - 1; }
};
inline constexpr Format kHalf{10, 5};
inline constexpr Format kBf16{7, 8};

inline Format format_of(DType t) { return t == DType::f16 ? kHalf : kBf16; }

// bits -> value, exactly (every 16-bit value is a double, and a float).
inline double decode(Format f, std::uint16_t bits) {
  const bool negative = (bits >> 15) & 1;
  const int exp_field = (bits >> f.mant_bits) & f.exp_max_field();
  const int fraction = bits & ((1 << f.mant_bits) - 1);
  double mag = 0;
  if (exp_field == f.exp_max_field())
    mag = fraction ? std::numeric_limits<double>::quiet_NaN()
                   : std::numeric_limits<double>::infinity();
  else if (exp_field == 0)
    mag = std::ldexp(static_cast<double>(fraction), 1 - f.bias() - f.mant_bits);
  else
    mag = std::ldexp(static_cast<double>((1 << f.mant_bits) + fraction),
                     exp_field - f.bias() - f.mant_bits);
  return negative ? -mag : mag;
}

// value -> bits, round to nearest, ties to even, overflow to inf, NaN to a quiet NaN.
inline std::uint16_t encode(Format f, double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const int m = f.mant_bits;
  if (std::isnan(x))
    return static_cast<std::uint16_t>(sign | (f.exp_max_field() << m) | (1 << (m - 1)));
  const double a = std::fabs(x);
  const int emax = f.bias(), emin = 1 - f.bias();
  // Halfway between the largest finite value and 2^(emax+1): from there on, inf.
  const double overflow_at = std::ldexp(2.0 - std::ldexp(1.0, -m - 1), emax);
  if (a >= overflow_at) return static_cast<std::uint16_t>(sign | (f.exp_max_field() << m));
  if (a == 0) return sign;
  int e = std::ilogb(a);
  if (e < emin) e = emin;
  const double q = std::ldexp(a, m - e);  // exact: a scaled by a power of two
  auto n = static_cast<std::int64_t>(std::floor(q));
  const double rest = q - static_cast<double>(n);
  if (rest > 0.5 || (rest == 0.5 && (n & 1))) ++n;
  if (n == (std::int64_t{2} << m)) {
    ++e;
    n >>= 1;
  }
  if (n < (std::int64_t{1} << m)) return static_cast<std::uint16_t>(sign | n);  // subnormal
  return static_cast<std::uint16_t>(sign | ((e + f.bias()) << m) | (n - (std::int64_t{1} << m)));
}

// The value a T holds after rounding x (double), by the oracle (f32: plain float rounding).
inline double round_value(DType t, double x) {
  if (t == DType::f32) return static_cast<float>(x);
  return decode(format_of(t), encode(format_of(t), x));
}
inline double value_of(DType t, std::uint32_t bits) {
  if (t == DType::f32) return std::bit_cast<float>(bits);
  return decode(format_of(t), static_cast<std::uint16_t>(bits));
}
inline std::uint32_t bits_of(DType t, double rounded_value) {
  if (t == DType::f32) return std::bit_cast<std::uint32_t>(static_cast<float>(rounded_value));
  return encode(format_of(t), rounded_value);
}

// allreduce and residual_out by the documented order, element by element, from the oracle
// conversions: fp32 accumulation in float then one rounding, or rounding after each add.
struct NaiveSum {
  std::vector<std::uint32_t> allreduce;
  std::vector<std::uint32_t> residual_out;
};
inline NaiveSum naive_allreduce_residual(const FusedConfig& c, const FusedInputs& in) {
  const std::size_t count = in.residual_in.size();
  NaiveSum out{std::vector<std::uint32_t>(count), std::vector<std::uint32_t>(count)};
  for (std::size_t i = 0; i < count; ++i) {
    float acc = 0.0f;
    for (int r = 0; r < c.ranks; ++r) {
      std::uint32_t b = in.rank_inputs[static_cast<std::size_t>(r)].bits_at(i);
      if (b == neg_zero_bits(c.dtype)) b = 0;  // the push sends -0 as +0
      const auto x = static_cast<float>(value_of(c.dtype, b));
      if (r == 0) acc = x;
      else if (c.accumulation == Accumulation::fp32) acc = acc + x;
      else acc = static_cast<float>(round_value(c.dtype, acc + x));
    }
    const double sum = round_value(c.dtype, acc);
    out.allreduce[i] = bits_of(c.dtype, sum);
    const auto res = static_cast<float>(value_of(c.dtype, in.residual_in.bits_at(i)));
    const float residual_sum = static_cast<float>(sum) + res;
    out.residual_out[i] = bits_of(c.dtype, round_value(c.dtype, residual_sum));
  }
  return out;
}

// RMSNorm in double (close to exact) from residual_out, rounded to T by the oracle.
inline std::vector<double> double_rmsnorm(const FusedConfig& c, const Tensor& residual_out,
                                          const Tensor& gamma) {
  std::vector<double> out(residual_out.size());
  const auto hidden = static_cast<std::size_t>(c.hidden);
  for (std::size_t base = 0; base < out.size(); base += hidden) {
    double ss = 0;
    for (std::size_t j = 0; j < hidden; ++j) {
      const double x = value_of(c.dtype, residual_out.bits_at(base + j));
      ss += x * x;
    }
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(hidden) + c.eps);
    for (std::size_t j = 0; j < hidden; ++j) {
      const double x = value_of(c.dtype, residual_out.bits_at(base + j));
      const double w = static_cast<double>(c.weight_bias) + value_of(c.dtype, gamma.bits_at(j));
      out[base + j] = round_value(c.dtype, x * r * w);
    }
  }
  return out;
}

// Bitwise equality where any NaN equals any NaN (NaN payloads are not specified).
inline bool same_value_bits(DType t, std::uint32_t a, std::uint32_t b) {
  if (a == b) return true;
  return std::isnan(value_of(t, a)) && std::isnan(value_of(t, b));
}

// Independent decoders straight from the format definitions.
inline double e4m3_by_definition(std::uint8_t c) {
  const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? (m / 8.0) * std::pow(2.0, -6) : (1 + m / 8.0) * std::pow(2.0, e - 7);
  return s ? -mag : mag;
}
inline double e2m1_by_definition(std::uint8_t c) {
  static constexpr double kMag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (c & 8) ? -kMag[c & 7] : kMag[c & 7];
}

// Nearest code by search over all positive finite codes; ties to the even code; beyond the
// largest value: saturate.
template <typename Decode>
inline std::uint8_t nearest_code(double x, int max_code, std::uint8_t sign_bit, Decode decode) {
  const double a = std::fabs(x);
  const auto sign = static_cast<std::uint8_t>(std::signbit(x) ? sign_bit : 0);
  if (a >= decode(static_cast<std::uint8_t>(max_code)))
    return static_cast<std::uint8_t>(sign | max_code);
  int best = 0;
  for (int c = 1; c <= max_code; ++c) {
    const double d = std::fabs(decode(static_cast<std::uint8_t>(c)) - a);
    const double best_d = std::fabs(decode(static_cast<std::uint8_t>(best)) - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c;
  }
  return static_cast<std::uint8_t>(sign | best);
}

}  // namespace fusioncheck::reference::oracle
