// FP8 e4m3 and FP4 e2m1 conversions against brute-force nearest-value oracles, the NVFP4
// scale layouts, and the quantisation error of the reference's quantised outputs.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <set>

#include "oracle.hpp"

namespace fusioncheck::reference {
namespace {

using oracle::e2m1_by_definition;
using oracle::e4m3_by_definition;
using oracle::nearest_code;

TEST(RefE4m3, DecodesAll256Codes) {
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    const double want = e4m3_by_definition(static_cast<std::uint8_t>(c));
    const float got = e4m3_to_float(static_cast<std::uint8_t>(c));
    if (std::isnan(want)) {
      ++nans;
      EXPECT_TRUE(std::isnan(got));
    } else {
      EXPECT_EQ(got, want) << c;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << c;
    }
  }
  EXPECT_EQ(nans, 2);
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
}

TEST(RefE4m3, EncodesEveryBoundaryAndTieAsTheOracle) {
  std::vector<float> probes;
  for (int c = 0; c < 0x7e; ++c) {
    const double lo = e4m3_by_definition(static_cast<std::uint8_t>(c));
    const double hi = e4m3_by_definition(static_cast<std::uint8_t>(c + 1));
    const auto mid = static_cast<float>(0.5 * (lo + hi));
    for (float p :
         {static_cast<float>(lo), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)})
      probes.insert(probes.end(), {p, -p});
  }
  for (float p : {448.0f, 464.0f, 465.0f, 480.0f, 1e6f, 3e38f})
    probes.insert(probes.end(), {p, -p});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-600.0f, 600.0f);
  for (int k = 0; k < 50000; ++k)
    probes.push_back(dist(rng) * std::ldexp(1.0f, -static_cast<int>(rng() % 14)));
  for (float x : probes)
    ASSERT_EQ(float_to_e4m3(x), nearest_code(x, 0x7e, 0x80, e4m3_by_definition))
        << std::hexfloat << x;
}

TEST(RefE4m3, SatfiniteAndSpecialInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_e4m3(inf), 0x7e);  // no inf in e4m3: clamps to 448
  EXPECT_EQ(float_to_e4m3(-inf), 0xfe);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7f, 0x7f);  // NaN stays NaN
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(float_to_e4m3(0.0f), 0x00);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);  // tie between 0 and 2^-9: even
  EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);  // tie between 1 and 2: even
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -11)), 0x00);
}

// The reference's branch-free float_to_e4m3 against its former branchy definition (kept
// here as the oracle): every top-16-bit pattern (every binade, both signs, inf, NaN) with
// low bits around the round/sticky boundary (bit 19) and a random sample.
std::uint8_t former_float_to_e4m3(float x) {
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return sign | kE4m3NaN;
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return sign | 0x7e;
  if (a == 0.0f) return sign;
  if (a < 0x1p-6f)
    return static_cast<std::uint8_t>(sign | static_cast<int>(std::nearbyint(a * 0x1p9f)));
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(a);
  const std::uint32_t rounded = (bits + 0x7ffffu + ((bits >> 20) & 1u)) >> 20;
  return static_cast<std::uint8_t>(sign | (rounded - (120u << 3)));
}

TEST(RefE4m3, BranchFreeEncodingEqualsTheFormerDefinition) {
  std::vector<std::uint32_t> low = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
  std::mt19937 rng(11);
  for (int k = 0; k < 10; ++k) low.push_back(rng() & 0xffffu);
  for (std::uint32_t hi = 0; hi < 65536; ++hi)
    for (std::uint32_t l : low) {
      const float x = std::bit_cast<float>(hi << 16 | l);
      ASSERT_EQ(float_to_e4m3(x), former_float_to_e4m3(x)) << std::hex << (hi << 16 | l);
    }
  for (int k = 0; k < 2'000'000; ++k) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    ASSERT_EQ(float_to_e4m3(x), former_float_to_e4m3(x)) << std::hexfloat << x;
  }
  for (std::uint32_t u :
       {0x3c800000u, 0x3c7fffffu, 0x3a800000u, 0x3a7fffffu, 0x3b400000u, 0x43e00000u, 0x43dfffffu,
        0x43e80000u, 0x00000001u, 0x7f800000u, 0x7f800001u, 0x7fc00000u})
    for (std::uint32_t sign : {0u, 0x80000000u})
      EXPECT_EQ(float_to_e4m3(std::bit_cast<float>(u | sign)),
                former_float_to_e4m3(std::bit_cast<float>(u | sign)))
          << std::hex << (u | sign);
}

TEST(RefE2m1, DecodesAndEncodesAsTheOracle) {
  for (int c = 0; c < 16; ++c)
    EXPECT_EQ(e2m1_to_float(static_cast<std::uint8_t>(c)),
              e2m1_by_definition(static_cast<std::uint8_t>(c)));
  std::vector<float> probes{0.25f,
                            0.75f,
                            1.25f,
                            1.75f,
                            2.5f,
                            3.5f,
                            5.0f,
                            6.0f,
                            7.0f,
                            1e30f,
                            std::numeric_limits<float>::infinity(),
                            0.0f,
                            1e-30f};
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  for (int k = 0; k < 100000; ++k) probes.push_back(dist(rng));
  for (float base : std::vector<float>(probes)) {
    for (float x : {base, -base, std::nextafter(base, 0.0f), std::nextafter(base, 100.0f)})
      ASSERT_EQ(float_to_e2m1(x), nearest_code(x, 7, 0x8, e2m1_by_definition)) << x;
  }
}

TEST(RefHalfSpacing, BoundsTheRoundingErrorAndIsReached) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(0.0f, 448.0f);
  float worst_e4m3 = 0, worst_e2m1 = 0;
  for (int k = 0; k < 200000; ++k) {
    const float x = dist(rng) * std::ldexp(1.0f, -static_cast<int>(rng() % 12));
    const float err = std::fabs(e4m3_to_float(float_to_e4m3(x)) - x);
    ASSERT_LE(err, e4m3_half_spacing(x)) << x;
    worst_e4m3 = std::max(worst_e4m3, err / e4m3_half_spacing(x));
    const float y = std::fmod(x, 6.0f);
    const float err2 = std::fabs(e2m1_to_float(float_to_e2m1(y)) - y);
    ASSERT_LE(err2, e2m1_half_spacing(y)) << y;
    worst_e2m1 = std::max(worst_e2m1, err2 / e2m1_half_spacing(y));
  }
  EXPECT_GT(worst_e4m3, 0.99f);  // the bound is tight, not vacuous
  EXPECT_GT(worst_e2m1, 0.99f);
}

TEST(RefNvfp4Layout, SwizzledIndexIsABijectionOntoTheUnpaddedPositions) {
  for (std::size_t rows : {1u, 5u, 127u, 128u, 130u, 300u}) {
    for (std::size_t cols : {1u, 3u, 4u, 5u, 8u, 64u}) {
      const std::size_t storage = nvfp4_scale_storage(Nvfp4Layout::swizzled128x4, rows, cols);
      EXPECT_EQ(storage, (rows + 127) / 128 * 128 * ((cols + 3) / 4 * 4));
      std::set<std::size_t> seen;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) {
          const std::size_t i = nvfp4_scale_index(Nvfp4Layout::swizzled128x4, r, c, cols);
          ASSERT_LT(i, storage);
          ASSERT_TRUE(seen.insert(i).second) << r << "," << c;
        }
      EXPECT_EQ(seen.size(), rows * cols);
      EXPECT_EQ(nvfp4_scale_storage(Nvfp4Layout::linear, rows, cols), rows * cols);
    }
  }
  // The [32][4][4] tile order of the cuBLAS layout description.
  EXPECT_EQ(nvfp4_scale_index(Nvfp4Layout::swizzled128x4, 0, 1, 8), 1u);
  EXPECT_EQ(nvfp4_scale_index(Nvfp4Layout::swizzled128x4, 32, 0, 8), 4u);
  EXPECT_EQ(nvfp4_scale_index(Nvfp4Layout::swizzled128x4, 1, 0, 8), 16u);
  EXPECT_EQ(nvfp4_scale_index(Nvfp4Layout::swizzled128x4, 0, 4, 8), 512u);
  EXPECT_EQ(nvfp4_scale_index(Nvfp4Layout::swizzled128x4, 128, 0, 8), 1024u);
}

FusedConfig quant_config(DType dtype, int tokens, int hidden, Nvfp4Layout layout) {
  FusedConfig c;
  c.dtype = dtype;
  c.ranks = 3;
  c.tokens = tokens;
  c.hidden = hidden;
  c.quant.fp8_static = true;
  c.quant.fp8_inv_scale = 0.75f;
  c.quant.fp8_dynamic = true;
  c.quant.nvfp4 = true;
  c.quant.nvfp4_global_scale = 448.0f * 6.0f / 4.0f;
  c.quant.nvfp4_layout = layout;
  return c;
}

TEST(RefNvfp4Layout, LinearAndSwizzledOutputsHoldTheSameScales) {
  FusedConfig lin = quant_config(DType::bf16, 130, 80, Nvfp4Layout::linear);
  FusedConfig swz = quant_config(DType::bf16, 130, 80, Nvfp4Layout::swizzled128x4);
  const FusedInputs in = make_random_inputs(lin, SpecialsSpec{5, 0, 0, false});
  const FusedOutputs a = compute_fused(lin, in), b = compute_fused(swz, in);
  EXPECT_EQ(a.nvfp4, b.nvfp4);
  std::size_t nonzero = 0;
  for (std::size_t r = 0; r < 130; ++r)
    for (std::size_t c = 0; c < 5; ++c) {
      const std::uint8_t s = a.nvfp4_scale[nvfp4_scale_index(Nvfp4Layout::linear, r, c, 5)];
      ASSERT_EQ(s, b.nvfp4_scale[nvfp4_scale_index(Nvfp4Layout::swizzled128x4, r, c, 5)]);
      nonzero += s != 0;
    }
  EXPECT_GT(nonzero, 600u);  // not a vacuous comparison of zeros
  std::vector<std::uint8_t> sa = a.nvfp4_scale, sb = b.nvfp4_scale;
  sb.erase(std::remove(sb.begin(), sb.end(), 0), sb.end());
  sa.erase(std::remove(sa.begin(), sa.end(), 0), sa.end());
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  EXPECT_EQ(sa, sb);  // padding holds zeros only
}

// Quantisation error of the reference's outputs within each format's bound, computed from
// the reference's own norm_out (q) and scales:
//   fp8:   |e4m3(fl(q*inv)) - q*inv| <= half_spacing(fl(q*inv)) + u |q*inv| when |q*inv| <= 448
//          (fl = the float product), else the code is +-448.
//   nvfp4: v = fl(q * out_scale) satisfies |v| <= 6 / (1 - 2^-4) (the block scale is amax/6
//          rounded to e4m3, relative error <= 2^-4), and |e2m1(v) - v| <= half_spacing(v)
//          below 6, = |v| - 6 above (saturation).
bool fp8_within_bound(float q, float inv, std::uint8_t code) {
  const double exact = static_cast<double>(q) * inv;
  const double got = e4m3_to_float(code);
  if (std::fabs(exact) > 448.0) return got == std::copysign(448.0, exact);
  const double bound = e4m3_half_spacing(static_cast<float>(exact)) + 0x1p-24 * std::fabs(exact);
  return std::fabs(got - exact) <= bound;
}

RC_GTEST_PROP(RefQuantProperties, ErrorWithinTheFormatBound, ()) {
  const DType dtype = *rc::gen::element(DType::f16, DType::bf16, DType::f32);
  const int tokens = *rc::gen::inRange(1, 4);
  const int hidden = 16 * *rc::gen::inRange(1, 9);
  FusedConfig c = quant_config(dtype, tokens, hidden, Nvfp4Layout::linear);
  c.quant.fp8_inv_scale = *rc::gen::element(0.25f, 1.0f, 3.0f, 100.0f);
  c.quant.nvfp4_global_scale = *rc::gen::element(1.0f, 16.0f, 672.0f);
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  const FusedInputs in = make_random_inputs(c, SpecialsSpec{seed, 0, 0, false});
  const FusedOutputs out = compute_fused(c, in);
  const std::size_t cols = static_cast<std::size_t>(hidden) / 16;
  for (std::size_t t = 0; t < static_cast<std::size_t>(tokens); ++t) {
    const float inv_dyn = 1.0f / out.fp8_dynamic_scale[t];
    for (std::size_t j = 0; j < static_cast<std::size_t>(hidden); ++j) {
      const std::size_t i = t * static_cast<std::size_t>(hidden) + j;
      const float q = out.norm_out.value_at(i);
      if (!std::isfinite(q)) continue;  // NaN/inf norms: checked by the NaN rule, not here
      RC_ASSERT(fp8_within_bound(q, c.quant.fp8_inv_scale, out.fp8_static[i]));
      RC_ASSERT(fp8_within_bound(q, inv_dyn, out.fp8_dynamic[i]));
      const std::uint8_t sf =
          out.nvfp4_scale[nvfp4_scale_index(Nvfp4Layout::linear, t, j / 16, cols)];
      const double sf_value = e4m3_to_float(sf);
      // All-zero block, saturated scale, or a subnormal e4m3 scale (relative error above 2^-4).
      if (sf_value < 0x1p-6 || sf == 0x7e) continue;
      const auto v =
          static_cast<float>(q * (1.0f / (sf_value * (1.0f / c.quant.nvfp4_global_scale))));
      RC_ASSERT(std::fabs(v) <= 6.0 / (1.0 - 0x1p-4) * (1 + 0x1p-20));
      const double got =
          e2m1_to_float(static_cast<std::uint8_t>((out.nvfp4[i / 2] >> (4 * (i % 2))) & 0xf));
      const double bound = std::fabs(v) <= 6.0f ? e2m1_half_spacing(v) : std::fabs(v) - 6.0;
      RC_ASSERT(std::fabs(got - v) <= bound);
    }
  }
}

}  // namespace
}  // namespace fusioncheck::reference
