// RapidCheck properties of the fused reference: exactness, order of operations, RMSNorm
// bound, scale invariance, and the input generators' coverage.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "properties.hpp"

namespace fusioncheck::reference {
namespace {

using testing::Perturbation;

FusedConfig gen_config(int max_hidden_blocks = 8) {
  FusedConfig c;
  c.dtype = *rc::gen::element(DType::f16, DType::bf16, DType::f32);
  c.accumulation = *rc::gen::element(Accumulation::fp32, Accumulation::per_step);
  c.ranks = *rc::gen::inRange(1, 17);
  c.tokens = *rc::gen::inRange(1, 4);
  c.hidden = *rc::gen::element(1, 3, 16, 8 * *rc::gen::inRange(1, 8 * max_hidden_blocks));
  c.eps = *rc::gen::element(1e-6f, 1e-2f, 1.0f);
  c.weight_bias = *rc::gen::element(0.0f, 1.0f);
  return c;
}

RC_GTEST_PROP(RefFusedProperties, ExactInputsAreBitIdenticalUnderPermutationAndVsNaive, ()) {
  const FusedConfig c = gen_config();
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  const testing::Failure f = testing::exact_inputs_bitwise(c, seed, Perturbation::none);
  RC_ASSERT(!f.has_value());
}

RC_GTEST_PROP(RefFusedProperties, OrderOfOperationsMatchesNaiveOnInputsWithSpecials, ()) {
  const FusedConfig c = gen_config();
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  const testing::Failure f = testing::ordered_matches_naive(c, seed, Perturbation::none);
  RC_ASSERT(!f.has_value());
}

RC_GTEST_PROP(RefFusedProperties, NormWithinDerivedBoundOfDoublePrecisionNorm, ()) {
  const FusedConfig c = gen_config(64);
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  const testing::Failure f = testing::norm_within_bound(c, seed, Perturbation::none);
  RC_ASSERT(!f.has_value());
}

RC_GTEST_PROP(RefFusedProperties, NormIsScaleInvariantWithinTheBound, ()) {
  const FusedConfig c = gen_config();
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  const int k = *rc::gen::inRange(-3, 2);
  const testing::Failure f = testing::norm_scale_invariant(c, seed, k, Perturbation::none);
  RC_ASSERT(!f.has_value());
}

// The specials generator covers what it promises, for every dtype.
TEST(RefGenerators, SpecialsIncludeZerosSubnormalsMaxFiniteAndOutliers) {
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    const Tensor x = random_with_specials(SpecialsSpec{42, 0, 64, false}, 0, 4, 1024, t);
    bool pos_zero = false, neg_zero = false, pos_sub = false, neg_sub = false;
    bool pos_max = false, neg_max = false, outlier = false, moderate = false;
    float largest = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float v = x.value_at(i);
      ASSERT_TRUE(std::isfinite(v));
      if (v == 0) (std::signbit(v) ? neg_zero : pos_zero) = true;
      if (v != 0 && std::fpclassify(v) != FP_ZERO &&
          std::fabs(v) < (t == DType::f16 ? 0x1p-14f : 0x1p-126f))
        (v < 0 ? neg_sub : pos_sub) = true;
      largest = std::max(largest, std::fabs(v));
      if (std::fabs(v) >= 2048.0f && std::fabs(v) < 2e6f) outlier = true;
      if (std::fabs(v) > 0.1f && std::fabs(v) < 4.0f) moderate = true;
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x.value_at(i) == largest) pos_max = true;
      if (x.value_at(i) == -largest) neg_max = true;
    }
    EXPECT_TRUE(pos_zero && neg_zero) << dtype_name(t);
    EXPECT_TRUE(pos_sub && neg_sub) << dtype_name(t);
    EXPECT_TRUE(pos_max && neg_max) << dtype_name(t);
    EXPECT_TRUE(std::isinf(round_to(t, largest * 1.01f)))
        << "not the largest finite " << dtype_name(t);
    EXPECT_TRUE(outlier && moderate) << dtype_name(t);
  }
}

// Exact inputs: distinguishable per (call, rank) so stale data shows, and sums exact.
TEST(RefGenerators, ExactInputsDifferPerCallAndRankAndSumExactly) {
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    const ExactSpec a{7, 0, 16, true}, b{7, 1, 16, true};
    const Tensor r0 = exact_input(a, 0, 2, 512, t), r1 = exact_input(a, 1, 2, 512, t);
    const Tensor r0_next_call = exact_input(b, 0, 2, 512, t);
    EXPECT_NE(r0, r1);
    EXPECT_NE(r0, r0_next_call);
    EXPECT_EQ(r0, exact_input(a, 0, 2, 512, t));  // deterministic
    FusedConfig c;
    c.dtype = t;
    c.ranks = 16;
    c.tokens = 2;
    c.hidden = 512;
    const FusedInputs in = make_exact_inputs(c, 7, 0);
    std::size_t neg_zeros = 0;
    for (const Tensor& r : in.rank_inputs)
      for (std::size_t i = 0; i < r.size(); ++i) neg_zeros += is_neg_zero(t, r.bits_at(i));
    EXPECT_GT(neg_zeros, 0u) << "exercises canonicalisation";
    for (std::size_t i = 0; i < in.residual_in.size(); ++i) {
      double sum = in.residual_in.value_at(i);
      for (const Tensor& r : in.rank_inputs) sum += r.value_at(i);
      ASSERT_EQ(oracle::round_value(t, sum), sum) << "sum not exact in T";
    }
  }
}

TEST(RefValidation, RejectsBadShapesWithOneLine) {
  FusedConfig c;
  c.ranks = 2;
  c.tokens = 2;
  c.hidden = 16;
  FusedInputs in = make_exact_inputs(c, 1, 0);
  EXPECT_NO_THROW(compute_fused(c, in));
  FusedInputs missing = in;
  missing.rank_inputs.pop_back();
  EXPECT_THROW(compute_fused(c, missing), std::invalid_argument);
  FusedInputs wrong_type = in;
  wrong_type.gamma = Tensor(DType::f32, 16);
  EXPECT_THROW(compute_fused(c, wrong_type), std::invalid_argument);
  FusedConfig bad = c;
  bad.hidden = 15;
  bad.quant.nvfp4 = true;
  EXPECT_THROW(validate(bad, in), std::invalid_argument);
  bad = c;
  bad.ranks = 0;
  EXPECT_THROW(validate(bad, in), std::invalid_argument);
  bad = c;
  bad.eps = -1.0f;
  EXPECT_THROW(validate(bad, in), std::invalid_argument);
}

}  // namespace
}  // namespace fusioncheck::reference

// The one-shot path maps an input -0 to +0 (the sentinel); the two-shot and NCCL paths sum
// the inputs as they are. (-0) + (-0) tells the two apart.
TEST(RefFusedSemantics, NegativeZeroInputsSumToPlusZeroOnlyWhenCanonicalised) {
  namespace ref = fusioncheck::reference;
  for (ref::DType dtype : {ref::DType::f16, ref::DType::bf16, ref::DType::f32}) {
    ref::FusedConfig c;
    c.ranks = 2;
    c.tokens = 1;
    c.hidden = 16;
    c.dtype = dtype;
    ref::FusedInputs in;
    const std::uint32_t neg_zero = dtype == ref::DType::f32 ? 0x80000000u : 0x8000u;
    for (int r = 0; r < 2; ++r) {
      in.rank_inputs.emplace_back(dtype, 16);
      for (std::size_t i = 0; i < 16; ++i) in.rank_inputs.back().set_bits(i, neg_zero);
    }
    in.residual_in = ref::Tensor(dtype, 16);
    in.gamma = ref::Tensor(dtype, 16);
    for (std::size_t i = 0; i < 16; ++i) in.gamma.set_value(i, 1.0f);
    c.canonicalize_neg_zero = true;
    EXPECT_EQ(ref::compute_fused(c, in).allreduce.bits_at(0), 0u);
    c.canonicalize_neg_zero = false;
    EXPECT_EQ(ref::compute_fused(c, in).allreduce.bits_at(0), neg_zero);
  }
}
