// fp16 and bf16 conversions of the reference (Eigen::half, Eigen::bfloat16), exhaustively
// against the independent field-level oracle in oracle.hpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "oracle.hpp"

namespace fusioncheck::reference {
namespace {

class RefConversionTest : public ::testing::TestWithParam<DType> {};

bool is_nan_bits(oracle::Format f, std::uint16_t b) {
  return ((b >> f.mant_bits) & f.exp_max_field()) == f.exp_max_field() &&
         (b & ((1 << f.mant_bits) - 1));
}

TEST_P(RefConversionTest, BitsToFloatIsExactForAll65536Patterns) {
  const DType t = GetParam();
  const oracle::Format f = oracle::format_of(t);
  int nans = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float got = bits_to_float(t, b);
    const double want = oracle::decode(f, static_cast<std::uint16_t>(b));
    if (std::isnan(want)) {
      ++nans;
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got),
                std::bit_cast<std::uint32_t>(static_cast<float>(want)))
          << std::hex << b;  // bitwise: -0 stays -0
    }
  }
  EXPECT_EQ(nans, 2 * ((1 << f.mant_bits) - 1));  // the oracle saw every NaN pattern
}

// bf16 widening is a shift in the reference (for speed); it must be Eigen's conversion.
TEST(RefConversionEigen, Bf16WideningEqualsEigenForAll65536Patterns) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float eigen =
        static_cast<float>(std::bit_cast<Eigen::bfloat16>(static_cast<std::uint16_t>(b)));
    ASSERT_EQ(std::bit_cast<std::uint32_t>(bits_to_float(DType::bf16, b)),
              std::bit_cast<std::uint32_t>(eigen))
        << b;
  }
}

TEST_P(RefConversionTest, EveryValueRoundTripsAndNaNStaysNaN) {
  const DType t = GetParam();
  const oracle::Format f = oracle::format_of(t);
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float v = static_cast<float>(oracle::decode(f, bits));
    const std::uint32_t back = float_to_bits(t, v);
    if (is_nan_bits(f, bits)) {
      ASSERT_TRUE(is_nan_bits(f, static_cast<std::uint16_t>(back))) << std::hex << b;
      ASSERT_EQ(back & 0x8000u, b & 0x8000u) << "NaN sign " << std::hex << b;
    } else {
      ASSERT_EQ(back, b) << std::hex << b;
    }
  }
}

// Between every pair of adjacent finite values a < b (both signs, subnormals included):
// the midpoint rounds to the one with the even significand, anything just above it to b,
// just below it to a.
TEST_P(RefConversionTest, RoundsToNearestEvenAtEveryBoundary) {
  const DType t = GetParam();
  const oracle::Format f = oracle::format_of(t);
  const std::uint16_t max_finite =
      static_cast<std::uint16_t>((f.exp_max_field() << f.mant_bits) - 1);
  int ties = 0;
  for (std::uint16_t sign : {std::uint16_t{0}, std::uint16_t{0x8000}}) {
    for (std::uint16_t lo = 0; lo < max_finite; ++lo) {
      const std::uint16_t a = sign | lo, b = sign | static_cast<std::uint16_t>(lo + 1);
      const double va = oracle::decode(f, a), vb = oracle::decode(f, b);
      const double mid = 0.5 * (va + vb);
      const auto mid_f = static_cast<float>(mid);
      ASSERT_EQ(static_cast<double>(mid_f), mid) << "midpoint not a float";
      const std::uint16_t even = (lo & 1) ? b : a;
      ASSERT_EQ(float_to_bits(t, mid_f), even) << std::hex << a;
      ASSERT_EQ(oracle::encode(f, mid), even) << "oracle " << std::hex << a;
      const float toward_b = std::nextafter(mid_f, static_cast<float>(vb));
      const float toward_a = std::nextafter(mid_f, static_cast<float>(va));
      ASSERT_EQ(float_to_bits(t, toward_b), b) << std::hex << a;
      ASSERT_EQ(float_to_bits(t, toward_a), a) << std::hex << a;
      ++ties;
    }
  }
  EXPECT_EQ(ties, 2 * max_finite);
}

TEST_P(RefConversionTest, OverflowsToInfinityAtTheTopMidpoint) {
  const DType t = GetParam();
  const oracle::Format f = oracle::format_of(t);
  const std::uint16_t max_bits = static_cast<std::uint16_t>((f.exp_max_field() << f.mant_bits) - 1);
  const std::uint16_t inf_bits = static_cast<std::uint16_t>(f.exp_max_field() << f.mant_bits);
  const double max_value = oracle::decode(f, max_bits);
  const double top_mid = max_value + 0.5 * (max_value - oracle::decode(f, max_bits - 1));
  const auto mid_f = static_cast<float>(top_mid);
  ASSERT_EQ(static_cast<double>(mid_f), top_mid);
  EXPECT_EQ(float_to_bits(t, mid_f), inf_bits);  // tie: the even neighbour is "2^(emax+1)"
  EXPECT_EQ(float_to_bits(t, std::nextafter(mid_f, 0.0f)), max_bits);
  EXPECT_EQ(float_to_bits(t, -mid_f), inf_bits | 0x8000u);
  EXPECT_EQ(float_to_bits(t, std::numeric_limits<float>::max()), inf_bits);
  EXPECT_EQ(float_to_bits(t, std::numeric_limits<float>::infinity()), inf_bits);
  EXPECT_EQ(float_to_bits(t, -std::numeric_limits<float>::infinity()), inf_bits | 0x8000u);
  EXPECT_TRUE(
      std::isnan(bits_to_float(t, float_to_bits(t, std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(
      std::isnan(bits_to_float(t, float_to_bits(t, std::bit_cast<float>(0xff800001u)))));  // sNaN
}

TEST_P(RefConversionTest, RandomFloatsAgreeWithTheOracle) {
  const DType t = GetParam();
  const oracle::Format f = oracle::format_of(t);
  std::mt19937 rng(12345);
  for (int k = 0; k < 1'000'000; ++k) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    const std::uint32_t got = float_to_bits(t, x);
    const std::uint16_t want = oracle::encode(f, x);
    if (std::isnan(x)) ASSERT_TRUE(is_nan_bits(f, static_cast<std::uint16_t>(got)));
    else ASSERT_EQ(got, want) << std::hexfloat << x;
  }
}

// Negative control for the oracle itself: it must disagree with round-toward-zero.
TEST(RefConversionOracle, DistinguishesTruncationFromRoundToNearestEven) {
  const double one_plus_3_4_ulp = 1.0 + 0.75 * std::ldexp(1.0, -10);
  EXPECT_EQ(oracle::encode(oracle::kHalf, one_plus_3_4_ulp), 0x3c01);  // truncation gives 0x3c00
  EXPECT_EQ(oracle::encode(oracle::kHalf, 1.0 + 0.5 * std::ldexp(1.0, -10)), 0x3c00);  // tie, even
  EXPECT_EQ(oracle::encode(oracle::kHalf, 1.0 + 1.5 * std::ldexp(1.0, -10)), 0x3c02);  // tie, even
}

// The reference's branch-free conversions (element.hpp) must give Eigen's bits for every
// input. Eigen built with F16C (not this build) converts a NaN through the hardware, which
// keeps payload bits; the reference's documented rule (sign | 0x7e00) is then the expectation.
std::uint16_t eigen_half_bits(float x) {
#ifdef EIGEN_HAS_FP16_C
  if (std::isnan(x))
    return static_cast<std::uint16_t>(((std::bit_cast<std::uint32_t>(x) >> 16) & 0x8000u) |
                                      0x7e00u);
#endif
  return std::bit_cast<std::uint16_t>(Eigen::half(x));
}
std::uint16_t eigen_bf16_bits(float x) { return std::bit_cast<std::uint16_t>(Eigen::bfloat16(x)); }

TEST(RefConversionEigen, HalfWideningEqualsEigenForAll65536Patterns) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float eigen = static_cast<float>(std::bit_cast<Eigen::half>(h));
    ASSERT_EQ(std::bit_cast<std::uint32_t>(Element<DType::f16>::to_float(h)),
              std::bit_cast<std::uint32_t>(eigen))
        << std::hex << b;
  }
}

// Floats whose rounding is decided anywhere: every pattern of the top 16 bits (sign,
// exponent, 7 fraction bits: every binade, every rounding position of a subnormal result,
// inf and NaN) with low bits that put the value exactly on, just below and just above the
// round/sticky boundaries of a normal fp16 (bit 12) and of bf16 (bit 15), then random ones.
std::vector<std::uint32_t> conversion_samples() {
  std::vector<std::uint32_t> low = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001,
                                    0x3000, 0x3001, 0x7fff, 0x8000, 0x8001, 0x9000, 0xefff, 0xffff};
  std::mt19937 rng(2024);
  for (int k = 0; k < 16; ++k) low.push_back(rng() & 0xffffu);
  std::vector<std::uint32_t> out;
  for (std::uint32_t hi = 0; hi < 65536; ++hi)
    for (std::uint32_t l : low) out.push_back(hi << 16 | l);
  for (int k = 0; k < 4'000'000; ++k) out.push_back(static_cast<std::uint32_t>(rng()));
  return out;
}

TEST(RefConversionEigen, NarrowingEqualsEigenOverEveryBinadeAndBoundary) {
  const std::vector<std::uint32_t> samples = conversion_samples();
  for (std::uint32_t u : samples) {
    const float x = std::bit_cast<float>(u);
    ASSERT_EQ(Element<DType::f16>::from_float(x), eigen_half_bits(x)) << "f16 " << std::hex << u;
    ASSERT_EQ(Element<DType::bf16>::from_float(x), eigen_bf16_bits(x)) << "bf16 " << std::hex << u;
  }
  // The edges named: zeros, the smallest subnormals, the subnormal/normal boundary, the
  // largest finite values and the overflow midpoint, inf, quiet and signalling NaNs.
  for (std::uint32_t u :
       {0x00000000u, 0x00000001u, 0x33000000u, 0x33000001u, 0x337fffffu, 0x387fc000u, 0x387fe000u,
        0x387fefffu, 0x38800000u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x7f7fffffu, 0x7f800000u,
        0x7f800001u, 0x7fa00000u, 0x7fc00000u, 0x7fffffffu}) {
    for (std::uint32_t sign : {0u, 0x80000000u}) {
      const float x = std::bit_cast<float>(u | sign);
      EXPECT_EQ(Element<DType::f16>::from_float(x), eigen_half_bits(x)) << std::hex << (u | sign);
      EXPECT_EQ(Element<DType::bf16>::from_float(x), eigen_bf16_bits(x)) << std::hex << (u | sign);
    }
  }
  EXPECT_EQ(Element<DType::f16>::from_float(std::bit_cast<float>(0xffa00000u)),
            0xfe00);  // NaN: sign kept, quiet
  EXPECT_EQ(Element<DType::bf16>::from_float(std::bit_cast<float>(0x7f800001u)), 0x7fc0);
}

INSTANTIATE_TEST_SUITE_P(Types, RefConversionTest, ::testing::Values(DType::f16, DType::bf16),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

}  // namespace
}  // namespace fusioncheck::reference
