// Typed sentinel helpers: the negative-zero test and the producer's canonicalisation,
// bitwise, for every element type.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "oracle.hpp"

namespace fusioncheck::reference {
namespace {

class RefSentinelTest : public ::testing::TestWithParam<DType> {};

// Exhaustive over all 16-bit patterns, with the oracle's decoding as the definition of -0.
TEST_P(RefSentinelTest, NegativeZeroPredicateAndCanonicalisationOverAll16BitPatterns) {
  const DType t = GetParam();
  const oracle::Format f = oracle::format_of(t);
  int neg_zeros = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const double v = oracle::decode(f, static_cast<std::uint16_t>(b));
    const bool want = v == 0.0 && std::signbit(v);
    ASSERT_EQ(is_neg_zero(t, b), want) << std::hex << b;
    if (t == DType::f16) ASSERT_EQ(is_neg_zero<DType::f16>(static_cast<std::uint16_t>(b)), want);
    else ASSERT_EQ(is_neg_zero<DType::bf16>(static_cast<std::uint16_t>(b)), want);
    const std::uint32_t c = canonicalize(t, b);
    ASSERT_FALSE(is_neg_zero(t, c));
    ASSERT_EQ(c, want ? 0u : b) << std::hex << b;  // only -0 changes, and it becomes +0
    neg_zeros += want;
  }
  EXPECT_EQ(neg_zeros, 1);
  EXPECT_EQ(neg_zero_bits(t), 0x8000u);
  EXPECT_EQ(std::bit_width(neg_zero_bits(t)),
            8 * dtype_bytes(t));  // invariant 6: the sentinel is one element wide
}

INSTANTIATE_TEST_SUITE_P(Types, RefSentinelTest, ::testing::Values(DType::f16, DType::bf16),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

TEST(RefSentinelF32, SpecialValues) {
  const std::uint32_t neg_zero = std::bit_cast<std::uint32_t>(-0.0f);
  EXPECT_TRUE(is_neg_zero(DType::f32, neg_zero));
  EXPECT_TRUE(is_neg_zero<DType::f32>(neg_zero));
  EXPECT_EQ(canonicalize(DType::f32, neg_zero), 0u);
  EXPECT_EQ(neg_zero_bits(DType::f32), neg_zero);
  EXPECT_EQ(std::bit_width(neg_zero_bits(DType::f32)), 32);
  // Everything else is left alone: +0, negative subnormals, NaNs with any payload, -inf.
  for (std::uint32_t b :
       {0x00000000u, 0x80000001u, 0x80400000u, 0x807fffffu, 0xffc00000u, 0x7fc00001u, 0xff800001u,
        0x7f800001u, 0xff800000u, 0x80800000u, 0x00000001u, 0x3f800000u}) {
    EXPECT_FALSE(is_neg_zero(DType::f32, b)) << std::hex << b;
    EXPECT_FALSE(is_neg_zero<DType::f32>(b)) << std::hex << b;
    EXPECT_EQ(canonicalize(DType::f32, b), b) << std::hex << b;
  }
  // Float equality cannot tell -0 from +0; the predicate must (the float-sentinel bug).
  EXPECT_TRUE(-0.0f == 0.0f);
  EXPECT_FALSE(is_neg_zero(DType::f32, 0u));
}

TEST(RefSentinelF32, RandomPatternsMatchTheDefinition) {
  std::uint32_t x = 0x12345678u;
  for (int k = 0; k < 1'000'000; ++k) {
    x = x * 1664525u + 1013904223u;
    const float v = std::bit_cast<float>(x);
    ASSERT_EQ(is_neg_zero(DType::f32, x), v == 0.0f && std::signbit(v));
  }
}

// A 16-bit sentinel must not be read through a 32-bit view (the sentinel-width mutant):
// two 16-bit -0 side by side are not an fp32 -0.
TEST(RefSentinelWidth, SixteenBitFillIsNotAnF32Sentinel) {
  EXPECT_FALSE(is_neg_zero(DType::f32, 0x80008000u));
  EXPECT_FALSE(is_neg_zero(DType::bf16, 0x80000000u));
}

}  // namespace
}  // namespace fusioncheck::reference
