// The reference's fast-math mode (FusedConfig::fast_math; fused.hpp, tolerance.hpp) against a
// straightforward element-at-a-time implementation of its definition written here, on inputs
// of every float class, with controls that show the mode changes results where it should
// (bf16 subnormals) and nowhere else (fp16), and that its norm tolerance still rejects a
// wrong value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"
#include "fusioncheck/reference/tolerance.hpp"

namespace fusioncheck::reference {
namespace {

float ftz(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }
float add(float a, float b) { return ftz(ftz(a) + ftz(b)); }
float mul(float a, float b) { return ftz(ftz(a) * ftz(b)); }

template <DType T> float value(const Tensor& t, std::size_t i) {
  return Element<T>::to_float(static_cast<typename Element<T>::Bits>(t.bits_at(i)));
}
template <DType T> std::uint16_t round_t(float v) { return Element<T>::from_float(v); }

// allreduce and residual_out of element i, the definition in fused.hpp with every fp32 add
// flushed; inputs read as they are (no sentinel canonicalisation), fp32 accumulation.
template <DType T> std::uint16_t allreduce_at(const FusedInputs& in, std::size_t i) {
  float s = ftz(value<T>(in.rank_inputs[0], i));
  for (std::size_t r = 1; r < in.rank_inputs.size(); ++r)
    s = add(s, value<T>(in.rank_inputs[r], i));
  return round_t<T>(s);
}

template <DType T>
std::uint16_t residual_at(std::uint16_t allreduce, const FusedInputs& in, std::size_t i) {
  return round_t<T>(add(Element<T>::to_float(allreduce), value<T>(in.residual_in, i)));
}

FusedConfig config(DType t, int ranks, bool fast_math) {
  FusedConfig c;
  c.ranks = ranks;
  c.tokens = 24;
  c.hidden = 640;
  c.dtype = t;
  c.canonicalize_neg_zero = false;
  c.fast_math = fast_math;
  return c;
}

FusedInputs every_class(const FusedConfig& c, std::uint64_t seed) {
  SpecialsSpec s;
  s.seed = seed;
  s.specials_per_256 = 128;
  s.with_inf_nan = true;
  return make_random_inputs(c, s);
}

bool same_bits_or_nan(const Tensor& t, std::size_t i, std::uint16_t want) {
  if (t.bits_at(i) == want) return true;
  Tensor one(t.dtype(), 1);
  std::memcpy(one.data(), &want, 2);
  return std::isnan(t.value_at(i)) && std::isnan(one.value_at(0));
}

template <DType T> void expect_sums_match(int ranks) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const FusedConfig c = config(T, ranks, true);
    const FusedInputs in = every_class(c, seed);
    const FusedOutputs out = compute_fused(c, in);
    for (std::size_t i = 0; i < out.allreduce.size(); ++i) {
      const std::uint16_t a = allreduce_at<T>(in, i);
      ASSERT_TRUE(same_bits_or_nan(out.allreduce, i, a)) << "allreduce element " << i;
      const std::uint16_t ro =
          residual_at<T>(static_cast<std::uint16_t>(out.allreduce.bits_at(i)), in, i);
      ASSERT_TRUE(same_bits_or_nan(out.residual_out, i, ro)) << "residual_out element " << i;
    }
  }
}

TEST(FastMath, SumsMatchTheStraightforwardDefinition) {
  for (int ranks : {2, 3, 4, 8}) {
    expect_sums_match<DType::bf16>(ranks);
    expect_sums_match<DType::f16>(ranks);
  }
}

// y_j before rounding: x_j, squares, sums, quotient, products and gamma + weight_bias flushed.
template <DType T>
std::vector<float> norm_straightforward(const FusedConfig& c, const Tensor& residual_out,
                                        const Tensor& gamma) {
  const auto hidden = static_cast<std::size_t>(c.hidden);
  std::vector<float> y(residual_out.size());
  for (std::size_t base = 0; base < y.size(); base += hidden) {
    float lane[8] = {};
    for (std::size_t j = 0; j < hidden; ++j) {
      const float x = ftz(value<T>(residual_out, base + j));
      lane[j % 8] = add(lane[j % 8], mul(x, x));
    }
    const float ss = add(add(add(lane[0], lane[1]), add(lane[2], lane[3])),
                         add(add(lane[4], lane[5]), add(lane[6], lane[7])));
    const float r = 1.0f / std::sqrt(add(ftz(ss / static_cast<float>(hidden)), c.eps));
    for (std::size_t j = 0; j < hidden; ++j) {
      const float w = add(c.weight_bias, value<T>(gamma, j));
      y[base + j] = mul(mul(ftz(value<T>(residual_out, base + j)), r), w);
    }
  }
  return y;
}

TEST(FastMath, NormMatchesTheStraightforwardDefinition) {
  for (float weight_bias : {0.0f, 1.0f}) {
    FusedConfig c = config(DType::bf16, 2, true);
    c.weight_bias = weight_bias;
    SpecialsSpec s;
    s.seed = 5;
    s.specials_per_256 = 64;
    const FusedInputs in = make_random_inputs(c, s);
    const FusedOutputs out = compute_fused(c, in);
    const std::vector<float> want =
        norm_straightforward<DType::bf16>(c, out.residual_out, in.gamma);
    const std::vector<float> got = norm_before_rounding(c, out.residual_out, in.gamma);
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i]) && std::isnan(got[i])) continue;
      ASSERT_EQ(std::memcmp(&want[i], &got[i], 4), 0)
          << "element " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

// Controls: the mode changes bf16 results where subnormals meet, and no fp16 result.
TEST(FastMath, ChangesBf16SubnormalSumsAndNothingInFp16) {
  for (DType t : {DType::bf16, DType::f16}) {
    const FusedInputs in = every_class(config(t, 2, false), 11);
    const FusedOutputs ieee = compute_fused(config(t, 2, false), in);
    const FusedOutputs fast = compute_fused(config(t, 2, true), in);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < ieee.allreduce.size(); ++i)
      differ += !same_bits_or_nan(fast.allreduce, i,
                                  static_cast<std::uint16_t>(ieee.allreduce.bits_at(i)));
    if (t == DType::bf16) {
      EXPECT_GT(differ, 0u);
    } else {
      EXPECT_EQ(differ, 0u);
      for (std::size_t i = 0; i < ieee.norm_out.size(); ++i)
        ASSERT_TRUE(same_bits_or_nan(fast.norm_out, i,
                                     static_cast<std::uint16_t>(ieee.norm_out.bits_at(i))));
    }
  }
}

// Two subnormal bf16 inputs: IEEE sums them, the fast-math build flushes both to zero.
TEST(FastMath, TwoSubnormalsSumToZero) {
  FusedConfig c = config(DType::bf16, 2, true);
  c.tokens = 1;
  c.hidden = 16;
  FusedInputs in = make_exact_inputs(c, 1, 0);
  for (Tensor& t : in.rank_inputs)
    for (std::size_t i = 0; i < t.size(); ++i) t.set_bits(i, 0x0001);  // 2^-133
  const FusedOutputs fast = compute_fused(c, in);
  c.fast_math = false;
  const FusedOutputs ieee = compute_fused(c, in);
  EXPECT_EQ(fast.allreduce.bits_at(0), 0x0000u);
  EXPECT_EQ(ieee.allreduce.bits_at(0), 0x0002u);
}

// The tolerance: near the flush threshold both the flushed and the unflushed value are
// accepted; far from it, a flushed value or one moved by 2^-6 is still rejected.
TEST(FastMath, NormToleranceCoversFlushEitherWayOnlyNearTheThreshold) {
  FusedConfig c = config(DType::bf16, 2, true);
  c.tokens = 2;
  c.hidden = 16;
  c.eps = 1.0f;  // token 0: ss = 0 after flushing, v = 1, r = 1: x * r lands on 2^-126 itself
  FusedInputs in = make_exact_inputs(c, 3, 0);
  for (std::size_t j = 0; j < 16; ++j) {
    in.rank_inputs[0].set_value(j, j == 0 ? 0x1p-126f : 0.0f);  // token 0
    in.rank_inputs[0].set_value(16 + j, 1.0f);                  // token 1: y ~ 0.707
    in.rank_inputs[1].set_value(j, 0.0f);
    in.rank_inputs[1].set_value(16 + j, 0.0f);
    in.residual_in.set_value(j, 0.0f);
    in.residual_in.set_value(16 + j, 0.0f);
    in.gamma.set_value(j, 1.0f);
  }
  const FusedOutputs out = compute_fused(c, in);
  const std::vector<float> allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
  ASSERT_EQ(out.norm_out.value_at(0), 0x1p-126f);
  Tensor gpu = out.norm_out;
  gpu.set_value(0, 0.0f);  // an r a hair below 1 on the GPU flushes x * r
  EXPECT_FALSE(first_norm_mismatch(out.norm_out, gpu, allowed).has_value());
  gpu = out.norm_out;
  gpu.set_value(16, 0.0f);
  EXPECT_TRUE(first_norm_mismatch(out.norm_out, gpu, allowed).has_value());
  gpu = out.norm_out;
  gpu.set_value(16, out.norm_out.value_at(16) * (1.0f + 0x1p-6f));
  EXPECT_TRUE(first_norm_mismatch(out.norm_out, gpu, allowed).has_value());
  // Without fast math the same flushed value at element 0 is a mismatch (the widening is the
  // fast-math mode's alone).
  c.fast_math = false;
  const std::vector<float> ieee_allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
  gpu = out.norm_out;
  gpu.set_value(0, 0.0f);
  EXPECT_TRUE(first_norm_mismatch(out.norm_out, gpu, ieee_allowed).has_value());
}

}  // namespace
}  // namespace fusioncheck::reference
