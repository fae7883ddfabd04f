// The derived RMSNorm bound is not vacuous, and the GPU-side checkers accept the
// reference's own outputs and reject perturbed ones.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>

#include "oracle.hpp"

namespace fusioncheck::reference {
namespace {

FusedConfig big_config(DType t) {
  FusedConfig c;
  c.dtype = t;
  c.ranks = 4;
  c.tokens = 8;
  c.hidden = 4096;
  c.eps = 1e-6f;
  return c;
}

// For bf16 and hidden 4096, rho ~ 4.9e-4 is well below half a bf16 ulp (>= 2^-9 relative),
// so no element may be allowed more than one ulp, and most must be allowed none.
TEST(RefNormTolerance, IsAtMostOneUlpForBf16AndTwoForFp16AtHidden4096) {
  for (DType t : {DType::bf16, DType::f16}) {
    const FusedConfig c = big_config(t);
    const FusedInputs in = make_random_inputs(c, SpecialsSpec{11, 0, 0, false});
    const FusedOutputs out = compute_fused(c, in);
    const std::vector<float> allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
    std::size_t zero = 0;
    for (std::size_t i = 0; i < allowed.size(); ++i) {
      const float ulp = ulp_of(t, out.norm_out.value_at(i));
      ASSERT_LE(allowed[i], (t == DType::bf16 ? 1.0f : 2.0f) * ulp) << i;
      zero += allowed[i] == 0.0f;
    }
    if (t == DType::bf16) {
      EXPECT_GT(zero, allowed.size() / 2);
    }
  }
  EXPECT_LT(norm_relative_bound(4096), 5e-4);
  EXPECT_GT(norm_relative_bound(4096), 4.8e-4);
}

TEST(RefNormTolerance, Fp32BoundIsTheDerivedRelativeBound) {
  const FusedConfig c = big_config(DType::f32);
  const FusedInputs in = make_random_inputs(c, SpecialsSpec{12, 0, 0, false});
  const FusedOutputs out = compute_fused(c, in);
  const std::vector<float> allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
  const double rho = norm_relative_bound(c.hidden);
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    const double y = std::fabs(out.norm_out.value_at(i));
    // rho |y| plus one float step at the upper endpoint (the outward widening).
    ASSERT_LE(allowed[i],
              rho * y + 2 * ulp_of(DType::f32, static_cast<float>(y * (1 + 2 * rho))) + 0x1p-140)
        << i;
  }
}

TEST(RefNormTolerance, TinyTokensWithoutEpsAreNoClaimNotPass) {
  FusedConfig c;
  c.dtype = DType::f32;
  c.ranks = 1;
  c.hidden = 16;
  c.eps = 0.0f;
  FusedInputs in = make_exact_inputs(c, 1, 0, false);
  for (std::size_t i = 0; i < 16; ++i) {
    in.rank_inputs[0].set_value(i, 1e-30f);
    in.residual_in.set_value(i, 0.0f);
  }
  const FusedOutputs out = compute_fused(c, in);
  const std::vector<float> allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
  for (float a : allowed) EXPECT_TRUE(std::isinf(a));
}

QuantOutputs quant_of(const FusedOutputs& o) {
  return QuantOutputs{o.fp8_static, o.fp8_dynamic, o.fp8_dynamic_scale, o.nvfp4, o.nvfp4_scale};
}

FusedConfig quant_config(DType t, std::uint64_t seed) {
  FusedConfig c;
  c.dtype = t;
  c.ranks = 2;
  c.tokens = 3;
  c.hidden = 64;
  c.quant = QuantConfig{true,
                        2.0f,
                        true,
                        true,
                        448.0f * 6.0f / 8.0f,
                        seed % 2 ? Nvfp4Layout::linear : Nvfp4Layout::swizzled128x4};
  return c;
}

RC_GTEST_PROP(RefQuantChecker, AcceptsTheReferencesOwnOutputs, ()) {
  const DType t = *rc::gen::element(DType::f16, DType::bf16, DType::f32);
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  const FusedConfig c = quant_config(t, seed);
  const FusedInputs in = make_random_inputs(c, SpecialsSpec{seed, 0, 0, false});
  const FusedOutputs out = compute_fused(c, in);
  const std::vector<float> allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
  RC_ASSERT(!first_norm_mismatch(out.norm_out, out.norm_out, allowed).has_value());
  const auto m = first_quant_mismatch(c, out.norm_out, allowed, quant_of(out));
  RC_ASSERT(!m.has_value());
}

// Negative controls for the quantised-output checker: codes two steps off, a dynamic scale
// off by 2x, and a block scale one code off are all caught.
TEST(RefQuantChecker, RejectsPerturbedCodesAndScales) {
  int caught_static = 0, caught_dynamic = 0, caught_scale = 0, caught_block = 0, caught_fp4 = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const FusedConfig c = quant_config(DType::bf16, seed);
    const FusedInputs in = make_random_inputs(c, SpecialsSpec{seed, 0, 0, false});
    const FusedOutputs out = compute_fused(c, in);
    const std::vector<float> allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
    const std::size_t i = seed * 7 % out.fp8_static.size();
    auto try_one = [&](auto mutate) {
      QuantOutputs q = quant_of(out);
      mutate(q);
      return first_quant_mismatch(c, out.norm_out, allowed, q).has_value();
    };
    auto two_codes_up = [](std::uint8_t code) {  // two steps away from zero, below NaN
      return static_cast<std::uint8_t>((code & 0x7f) >= 0x7c ? code - 2 : code + 2);
    };
    caught_static +=
        try_one([&](QuantOutputs& q) { q.fp8_static[i] = two_codes_up(q.fp8_static[i]); });
    caught_dynamic +=
        try_one([&](QuantOutputs& q) { q.fp8_dynamic[i] = two_codes_up(q.fp8_dynamic[i]); });
    caught_scale += try_one([&](QuantOutputs& q) { q.fp8_dynamic_scale[1] *= 2.0f; });
    caught_block += try_one([&](QuantOutputs& q) {
      const std::size_t s = nvfp4_scale_index(c.quant.nvfp4_layout, 1, 2, 4);
      q.nvfp4_scale[s] = static_cast<std::uint8_t>(q.nvfp4_scale[s] + 1);
    });
    caught_fp4 +=
        try_one([&](QuantOutputs& q) { q.nvfp4[i / 2] ^= 0x02; });  // flip a magnitude bit
  }
  EXPECT_EQ(caught_static, 20);
  EXPECT_EQ(caught_dynamic, 20);
  EXPECT_EQ(caught_scale, 20);
  EXPECT_GE(caught_block,
            17);  // the allowed scale interval straddles a code boundary ~3% of the time
  EXPECT_GE(caught_fp4, 15);  // a flipped bit in a zero code can still be within range
}

}  // namespace
}  // namespace fusioncheck::reference

namespace fusioncheck::reference {
namespace {

TEST(RefCompare, BitMismatchFindsTheFirstDifferingElement) {
  Tensor a(DType::bf16, 8), b(DType::bf16, 8);
  for (std::size_t i = 0; i < 8; ++i) {
    a.set_value(i, static_cast<float>(i));
    b.set_value(i, static_cast<float>(i));
  }
  EXPECT_FALSE(first_bit_mismatch(a, b, "x").has_value());
  b.set_bits(0, 0x8000);  // -0 vs +0: equal as floats, different bits
  b.set_bits(5, b.bits_at(5) + 1);
  const auto m = first_bit_mismatch(a, b, "x");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->index, 0u);
  EXPECT_THROW(first_bit_mismatch(a, Tensor(DType::f16, 8), "x"), std::invalid_argument);
}

TEST(RefCompare, NormMismatchUsesThePerElementBound) {
  Tensor ref(DType::f32, 4), gpu(DType::f32, 4);
  for (std::size_t i = 0; i < 4; ++i) ref.set_value(i, 1.0f);
  gpu = ref;
  std::vector<float> allowed{0.0f, 0.5f, 0.0f, std::numeric_limits<float>::infinity()};
  EXPECT_FALSE(first_norm_mismatch(ref, gpu, allowed).has_value());
  gpu.set_value(1, 1.5f);   // exactly at the bound: accepted
  gpu.set_value(3, 99.0f);  // no claim
  EXPECT_FALSE(first_norm_mismatch(ref, gpu, allowed).has_value());
  gpu.set_value(1, 1.5000001f);
  ASSERT_TRUE(first_norm_mismatch(ref, gpu, allowed).has_value());
  EXPECT_EQ(first_norm_mismatch(ref, gpu, allowed)->index, 1u);
  gpu = ref;
  gpu.set_value(2, std::numeric_limits<float>::quiet_NaN());  // NaN against a number
  EXPECT_EQ(first_norm_mismatch(ref, gpu, allowed)->index, 2u);
  ref.set_value(2, std::numeric_limits<float>::quiet_NaN());  // NaN against NaN
  EXPECT_FALSE(first_norm_mismatch(ref, gpu, allowed).has_value());
}

}  // namespace
}  // namespace fusioncheck::reference
