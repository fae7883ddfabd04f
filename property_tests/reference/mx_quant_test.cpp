// MXFP8 and per-token-group FP8 with packed UE8M0 scales (quant.hpp, fused.hpp) against
// straightforward implementations of their definitions written here: the UE8M0 helpers on
// every float class, then whole calls (codes, scales, layouts, padding) on the reference's own
// norm output, in shapes real models use.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"
#include "oracle.hpp"

namespace fusioncheck::reference {
namespace {

using oracle::e4m3_by_definition;
using oracle::nearest_code;

// The smallest power of two 2^k >= v with k in [-127, 127], as k + 127; 0 for v <= 0; 254
// beyond 2^127, for inf and for NaN (what the header's bit arithmetic gives).
int ue8m0_by_definition(float v) {
  if (std::isnan(v)) return 254;
  if (!(v > 0.0f)) return 0;
  for (int k = -127; k <= 127; ++k)
    if (std::ldexp(1.0, k) >= static_cast<double>(v)) return k + 127;
  return 254;
}

// 2^(127 - sf) for sf in [1, 253]; 0 for sf 0; +0 for 254 and 255 (no normal 2^-127).
float ue8m0_inverse_by_definition(int sf) {
  if (sf == 0 || sf >= 254) return 0.0f;
  return static_cast<float>(std::ldexp(1.0, 127 - sf));
}

// The smallest power of two >= max(amax / 448, 1e-10f); inf stays inf.
float group_scale_by_definition(float amax) {
  const float q = amax / 448.0f;
  const float y = std::isnan(q) ? 1e-10f : std::max(q, 1e-10f);
  if (std::isinf(y)) return y;
  int e = 0;
  const double f = std::frexp(static_cast<double>(y), &e);  // y = f * 2^e, f in [0.5, 1)
  return static_cast<float>(f == 0.5 ? y : std::ldexp(1.0, e));
}

std::uint8_t e4m3_nearest(double x) {
  if (std::isnan(x)) return 0x7f;
  return nearest_code(x, 0x7e, 0x80, e4m3_by_definition);
}

// Every float class: zeros, subnormals (at and around 2^-127), normals of every exponent
// with fractions 0, 1 ulp, half and all ones, powers of two and their neighbours, the
// largest finite, inf, NaN; both signs.
std::vector<float> every_float_class() {
  std::vector<float> out;
  for (std::uint32_t exp_field = 0; exp_field < 255; ++exp_field)
    for (std::uint32_t fraction :
         {0u, 1u, 2u, 0x3fffffu, 0x400000u, 0x400001u, 0x7ffffeu, 0x7fffffu})
      out.push_back(std::bit_cast<float>(exp_field << 23 | fraction));
  out.push_back(std::numeric_limits<float>::infinity());
  out.push_back(std::numeric_limits<float>::quiet_NaN());
  std::mt19937 rng(11);
  for (int k = 0; k < 20000; ++k)
    out.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x7fffffffu));
  const std::size_t positive = out.size();
  for (std::size_t i = 0; i < positive; ++i) out.push_back(-out[i]);
  return out;
}

TEST(RefUe8m0, CeilMatchesTheDefinitionOnEveryFloatClass) {
  for (float v : every_float_class())
    ASSERT_EQ(float_to_ue8m0_ceil(v), ue8m0_by_definition(v))
        << v << " bits 0x" << std::hex << std::bit_cast<std::uint32_t>(v);
  EXPECT_EQ(float_to_ue8m0_ceil(1.0f), 127);
  EXPECT_EQ(float_to_ue8m0_ceil(std::nextafter(1.0f, 2.0f)), 128);
  EXPECT_EQ(float_to_ue8m0_ceil(std::ldexp(1.0f, -127)), 0);  // subnormal, exactly 2^-127
  EXPECT_EQ(float_to_ue8m0_ceil(std::nextafter(std::ldexp(1.0f, -127), 1.0f)), 1);
}

TEST(RefUe8m0, InverseIsTheExactPowerOfTwoForEveryCode) {
  for (int sf = 0; sf < 256; ++sf) {
    const float got = ue8m0_inverse(static_cast<std::uint8_t>(sf));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got),
              std::bit_cast<std::uint32_t>(ue8m0_inverse_by_definition(sf)))
        << sf;
  }
  EXPECT_EQ(ue8m0_inverse(127), 1.0f);
  EXPECT_EQ(ue8m0_inverse(1), std::ldexp(1.0f, 126));
}

TEST(RefUe8m0, GroupScaleMatchesTheDefinitionOnEveryFloatClass) {
  for (float v : every_float_class()) {
    const float amax = std::fabs(v);
    const float got = group_fp8_scale(amax), want = group_scale_by_definition(amax);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want))
        << amax << " bits 0x" << std::hex << std::bit_cast<std::uint32_t>(amax);
  }
  EXPECT_EQ(group_fp8_scale(448.0f), 1.0f);
  EXPECT_EQ(group_fp8_scale(std::nextafter(448.0f, 1e9f)), 2.0f);
  EXPECT_EQ(group_fp8_scale(0.0f), std::ldexp(1.0f, -33));  // the 1e-10 floor, rounded up
  EXPECT_EQ(ue8m0_exponent(1.0f), 127);
}

TEST(RefGroupFp8, PackedScaleIndexAndStorageFollowTheLayout) {
  // DeepSeek-V3: hidden 7168, groups of 128 -> 56 groups, 14 packed words per token.
  EXPECT_EQ(group_fp8_packs(56), 14u);
  EXPECT_EQ(group_fp8_scale_bytes(5, 56, 8), 4u * (13 * 8 + 5));
  EXPECT_EQ(group_fp8_scale_index(3, 0, 8), 12u);               // word 3, byte 0
  EXPECT_EQ(group_fp8_scale_index(3, 6, 8), 4u * (8 + 3) + 2);  // pack 1, byte 2
  QuantConfig q;
  EXPECT_EQ(group_fp8_aligned_mn(q, 5), 8u);
  q.tma_aligned_mn = 16;
  EXPECT_EQ(group_fp8_aligned_mn(q, 5), 16u);
}

// A call whose norm output holds many magnitudes, zeros of both signs and bf16 subnormals.
FusedInputs varied_inputs(const FusedConfig& c, unsigned seed) {
  FusedInputs in;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> exponent(-30, 12);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  const auto count = static_cast<std::size_t>(c.tokens) * static_cast<std::size_t>(c.hidden);
  for (int r = 0; r < c.ranks; ++r) {
    Tensor t(c.dtype, count);
    for (std::size_t i = 0; i < count; ++i) {
      const unsigned pick = rng() % 16;
      float v = std::ldexp(mantissa(rng), exponent(rng));
      if (pick == 0) v = 0.0f;
      if (pick == 1) v = -0.0f;
      if (pick == 2) v = std::ldexp(1.0f, -130);                        // a bf16 subnormal
      if (pick == 3) v = 448.0f * std::ldexp(1.0f, exponent(rng) % 4);  // amax at a power of two
      t.set_value(i, v);
    }
    in.rank_inputs.push_back(t);
  }
  in.residual_in = Tensor(c.dtype, count);
  in.gamma = Tensor(c.dtype, static_cast<std::size_t>(c.hidden));
  for (int j = 0; j < c.hidden; ++j)
    in.gamma.set_value(static_cast<std::size_t>(j),
                       j % 7 == 0 ? 0.0f : 1.0f + 0.25f * static_cast<float>(j % 5));
  return in;
}

FusedConfig quant_config(DType t, int tokens, int hidden) {
  FusedConfig c;
  c.ranks = 2;
  c.tokens = tokens;
  c.hidden = hidden;
  c.dtype = t;
  c.canonicalize_neg_zero = false;
  return c;
}

class MxShapes : public ::testing::TestWithParam<std::tuple<DType, int, int>> {};
// tokens x hidden: gpt-oss (2880), Llama-3 8B (4096), DeepSeek-V3 (7168), a row of 5 scale
// columns (the swizzled padding), 131 tokens (past one 128-row tile).
INSTANTIATE_TEST_SUITE_P(RefMxfp8, MxShapes,
                         ::testing::Values(std::tuple{DType::bf16, 3, 2880},
                                           std::tuple{DType::f16, 7, 4096},
                                           std::tuple{DType::bf16, 2, 7168},
                                           std::tuple{DType::f16, 131, 160}));

TEST_P(MxShapes, CodesAndScalesMatchTheDefinitionInBothLayouts) {
  const auto [dtype, tokens, hidden] = GetParam();
  for (Nvfp4Layout layout : {Nvfp4Layout::linear, Nvfp4Layout::swizzled128x4}) {
    FusedConfig c = quant_config(dtype, tokens, hidden);
    c.quant.mxfp8 = true;
    c.quant.mxfp8_layout = layout;
    const FusedInputs in = varied_inputs(c, static_cast<unsigned>(hidden + tokens));
    const FusedOutputs out = compute_fused(c, in);
    const int cols = hidden / 32, padded_cols = (cols + 3) / 4 * 4;
    const std::size_t rows = layout == Nvfp4Layout::linear
                                 ? static_cast<std::size_t>(tokens)
                                 : (static_cast<std::size_t>(tokens) + 127) / 128 * 128;
    ASSERT_EQ(out.mxfp8_scale.size(),
              rows * static_cast<std::size_t>(layout == Nvfp4Layout::linear ? cols : padded_cols));
    std::size_t written = 0;
    for (std::uint8_t w : out.mxfp8_scale_written) written += w;
    // Every real row's scales and, swizzled, its padding columns; never a padding row.
    EXPECT_EQ(written,
              static_cast<std::size_t>(tokens) *
                  static_cast<std::size_t>(layout == Nvfp4Layout::linear ? cols : padded_cols));
    for (int t = 0; t < tokens; ++t)
      for (int b = 0; b < cols; ++b) {
        double amax = 0;
        for (int k = 0; k < 32; ++k)
          amax = std::max(amax, std::fabs(static_cast<double>(out.norm_out.value_at(
                                    static_cast<std::size_t>(t * hidden + b * 32 + k)))));
        const int sf = ue8m0_by_definition(static_cast<float>(amax) * (1.0f / 448.0f));
        const std::size_t at =
            nvfp4_scale_index(layout, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(b),
                              static_cast<std::uint64_t>(cols));
        ASSERT_EQ(out.mxfp8_scale[at], sf) << "token " << t << " block " << b;
        ASSERT_EQ(out.mxfp8_scale_written[at], 1);
        for (int k = 0; k < 32; ++k) {
          const std::size_t i = static_cast<std::size_t>(t * hidden + b * 32 + k);
          // x * 2^(127 - sf) exactly (a power of two), then clamped to +-448.
          const double x =
              static_cast<double>(out.norm_out.value_at(i)) * ue8m0_inverse_by_definition(sf);
          ASSERT_EQ(out.mxfp8[i], e4m3_nearest(std::clamp(x, -448.0, 448.0)))
              << "token " << t << " element " << b * 32 + k << " x " << x;
        }
      }
    if (layout == Nvfp4Layout::swizzled128x4)
      for (int t = 0; t < tokens; ++t)
        for (int col = cols; col < padded_cols; ++col) {
          const std::size_t at =
              nvfp4_scale_index(layout, static_cast<std::uint64_t>(t),
                                static_cast<std::uint64_t>(col), static_cast<std::uint64_t>(cols));
          EXPECT_EQ(out.mxfp8_scale[at], 0);
          EXPECT_EQ(out.mxfp8_scale_written[at], 1);
        }
  }
}

class GroupShapes : public ::testing::TestWithParam<std::tuple<DType, int, int, int>> {};
// tokens x hidden / group: DeepSeek-V3 (7168 / 128, 56 groups: 14 full words), Qwen3
// (5120 / 128, 40 groups), gpt-oss (2880 / 64, 45 groups: a part word), small groups of 32.
INSTANTIATE_TEST_SUITE_P(RefGroupFp8, GroupShapes,
                         ::testing::Values(std::tuple{DType::bf16, 5, 7168, 128},
                                           std::tuple{DType::f16, 3, 5120, 128},
                                           std::tuple{DType::bf16, 9, 2880, 64},
                                           std::tuple{DType::f16, 1, 352, 32}));

TEST_P(GroupShapes, CodesAndPackedScalesMatchTheDefinition) {
  const auto [dtype, tokens, hidden, group] = GetParam();
  FusedConfig c = quant_config(dtype, tokens, hidden);
  c.quant.group_fp8 = true;
  c.quant.group_size = group;
  const FusedInputs in = varied_inputs(c, static_cast<unsigned>(hidden * 3 + tokens));
  FusedOutputs out = compute_fused(c, in);
  const std::size_t groups = static_cast<std::size_t>(hidden / group);
  const std::size_t mn = (static_cast<std::size_t>(tokens) + 3) / 4 * 4;
  const std::size_t packs = (groups + 3) / 4;
  ASSERT_EQ(out.group_fp8_scale.size(), 4 * ((packs - 1) * mn + static_cast<std::size_t>(tokens)));
  std::vector<int> expected(out.group_fp8_scale.size(), 0);  // padding reads 0
  for (int t = 0; t < tokens; ++t)
    for (std::size_t g = 0; g < groups; ++g) {
      float amax = 0;
      for (int k = 0; k < group; ++k)
        amax = std::max(amax, std::fabs(out.norm_out.value_at(static_cast<std::size_t>(t * hidden) +
                                                              g * static_cast<std::size_t>(group) +
                                                              static_cast<std::size_t>(k))));
      const float y = group_scale_by_definition(amax);
      int e = 0;
      std::frexp(y, &e);
      expected[((g / 4) * mn + static_cast<std::size_t>(t)) * 4 + g % 4] = e - 1 + 127;
      for (int k = 0; k < group; ++k) {
        const std::size_t i = static_cast<std::size_t>(t * hidden) +
                              g * static_cast<std::size_t>(group) + static_cast<std::size_t>(k);
        const double x = static_cast<double>(out.norm_out.value_at(i)) / static_cast<double>(y);
        ASSERT_EQ(out.group_fp8[i], e4m3_nearest(std::clamp(x, -448.0, 448.0)))
            << "token " << t << " element " << i % static_cast<std::size_t>(hidden);
      }
    }
  for (std::size_t b = 0; b < expected.size(); ++b)
    ASSERT_EQ(out.group_fp8_scale[b], expected[b]) << "byte " << b;
  // Reused buffers give the same bytes (padding re-zeroed).
  std::fill(out.group_fp8_scale.begin(), out.group_fp8_scale.end(), 0xAB);
  compute_fused_into(c, in, out);
  for (std::size_t b = 0; b < expected.size(); ++b) ASSERT_EQ(out.group_fp8_scale[b], expected[b]);
}

TEST(RefMxQuant, BadShapesAreRefused) {
  FusedConfig c = quant_config(DType::bf16, 2, 48);
  c.quant.mxfp8 = true;
  EXPECT_THROW(compute_fused(c, varied_inputs(c, 1)), std::invalid_argument);  // 48 % 32
  c = quant_config(DType::bf16, 2, 192);
  c.quant.group_fp8 = true;
  c.quant.group_size = 128;
  EXPECT_THROW(compute_fused(c, varied_inputs(c, 1)), std::invalid_argument);  // 192 % 128
  c.quant.group_size = 64;
  c.quant.tma_aligned_mn = 1;
  EXPECT_THROW(compute_fused(c, varied_inputs(c, 1)), std::invalid_argument);  // below tokens
  c.quant.tma_aligned_mn = 0;
  EXPECT_NO_THROW(compute_fused(c, varied_inputs(c, 1)));
}

// Negative control: the definitions above must see a wrong scale rule. A scale rounded to
// nearest instead of up changes some codes of the varied inputs.
TEST(RefMxQuant, TheCheckSeesAScaleRoundedTheOtherWay) {
  FusedConfig c = quant_config(DType::bf16, 4, 2880);
  c.quant.mxfp8 = true;
  c.quant.mxfp8_layout = Nvfp4Layout::linear;
  const FusedOutputs out = compute_fused(c, varied_inputs(c, 5));
  int differ = 0;
  for (int t = 0; t < 4; ++t)
    for (int b = 0; b < 90; ++b) {
      float amax = 0;
      for (int k = 0; k < 32; ++k)
        amax = std::max(
            amax,
            std::fabs(out.norm_out.value_at(static_cast<std::size_t>(t * 2880 + b * 32 + k))));
      const int nearest =
          static_cast<int>(std::lround(std::log2(static_cast<double>(amax) / 448.0))) + 127;
      if (amax > 0 && nearest != out.mxfp8_scale[static_cast<std::size_t>(t * 90 + b)]) ++differ;
    }
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace fusioncheck::reference
