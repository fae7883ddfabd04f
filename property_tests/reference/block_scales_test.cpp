// The block-scaled FP8 checks (first_quant_mismatch for mxfp8 and group_fp8) and the scale
// layouts they read (block_scales.hpp): the reference's own outputs, read back through the
// kernel's layouts, pass in model shapes; a scale one step off, a code one step off, a
// nonzero padding byte and a too small storage are each caught (negative controls).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fusioncheck/reference/block_scales.hpp"
#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"
#include "fusioncheck/reference/tolerance.hpp"

namespace fusioncheck::reference {
namespace {

struct Shape {
  int tokens;
  int hidden;
  int group_size;  // group FP8
  int tma_aligned_mn;
};

FusedConfig config_of(const Shape& s, DType dtype) {
  FusedConfig c;
  c.ranks = 2;
  c.tokens = s.tokens;
  c.hidden = s.hidden;
  c.dtype = dtype;
  c.quant.group_size = s.group_size;
  c.quant.tma_aligned_mn = s.tma_aligned_mn;
  return c;
}

FusedInputs inputs_of(const FusedConfig& c, bool exact, std::uint64_t seed) {
  if (exact) return make_exact_inputs(c, seed, 0);
  SpecialsSpec spec;
  spec.seed = seed;
  return make_random_inputs(c, spec);
}

// The GPU's outputs as the reference computes them, read back through the kernel's layouts.
QuantOutputs as_kernel_writes(const FusedConfig& c, const FusedOutputs& out) {
  QuantOutputs q;
  const auto tokens = static_cast<std::size_t>(c.tokens);
  const auto hidden = static_cast<std::size_t>(c.hidden);
  if (c.quant.mxfp8) {
    q.mxfp8 = out.mxfp8;
    q.mxfp8_scale =
        mxfp8_scales_of_rows(c.quant.mxfp8_layout, out.mxfp8_scale, hidden / 32, 0, tokens);
  }
  if (c.quant.group_fp8) {
    q.group_fp8 = out.group_fp8;
    q.group_fp8_scale = group_fp8_exponents_of_rows(
        out.group_fp8_scale, hidden / static_cast<std::size_t>(c.quant.group_size),
        group_fp8_aligned_mn(c.quant, tokens), 0, tokens);
  }
  return q;
}

std::optional<Mismatch> check(const FusedConfig& c, const FusedOutputs& out, const FusedInputs& in,
                              const QuantOutputs& q) {
  return first_quant_mismatch(c, out.norm_out, norm_out_tolerance(c, out.residual_out, in.gamma),
                              q);
}

// gpt-oss 2880, Llama 4096, DeepSeek-V3 7168 (groups of 128), Qwen3 5120 (groups of 64),
// 2880 in groups of 96 (the kernel's shared-memory amax) and 512, a tile's 128 rows and more.
const Shape kShapes[] = {{1, 2880, 32, 0},     {7, 4096, 128, 0},  {3, 7168, 128, 8},
                         {5, 5120, 64, 5},     {131, 2880, 96, 0}, {2, 1024, 512, 0},
                         {129, 1024, 128, 131}};

TEST(BlockScaledChecks, TheReferencesOwnOutputsPassInModelShapes) {
  for (const Shape& s : kShapes)
    for (DType dtype : {DType::bf16, DType::f16})
      for (bool exact : {true, false})
        for (Nvfp4Layout layout : {Nvfp4Layout::swizzled128x4, Nvfp4Layout::linear}) {
          FusedConfig c = config_of(s, dtype);
          c.quant.mxfp8 = true;
          c.quant.mxfp8_layout = layout;
          c.quant.group_fp8 = true;
          const FusedInputs in = inputs_of(c, exact, 11 + s.tokens);
          const FusedOutputs out = compute_fused(c, in);
          const std::string what = std::to_string(s.tokens) + "x" + std::to_string(s.hidden) +
                                   (exact ? " exact" : " random");
          const auto m = check(c, out, in, as_kernel_writes(c, out));
          EXPECT_FALSE(m) << what << ": " << (m ? m->what + " at " + std::to_string(m->index) : "");
          EXPECT_FALSE(
              mxfp8_scale_padding_mismatch(layout, out.mxfp8_scale, s.tokens, s.hidden / 32))
              << what;
          EXPECT_FALSE(group_fp8_scale_padding_mismatch(out.group_fp8_scale, s.tokens,
                                                        s.hidden / s.group_size,
                                                        group_fp8_aligned_mn(c.quant, s.tokens)))
              << what;
        }
}

// A call whose every block has a nonzero scale (exact inputs: no all-zero block).
struct Fixture {
  FusedConfig c;
  FusedInputs in;
  FusedOutputs out;
  QuantOutputs q;
  explicit Fixture(Shape s) : c(config_of(s, DType::bf16)) {
    c.quant.mxfp8 = true;
    c.quant.group_fp8 = true;
    in = make_exact_inputs(c, 5, 0);
    out = compute_fused(c, in);
    q = as_kernel_writes(c, out);
  }
};

TEST(BlockScaledChecks, AScaleOneStepOffIsCaughtEitherWay) {
  for (int step : {1, -1}) {
    Fixture f({9, 2880, 96, 0});
    f.q.mxfp8_scale[37] = static_cast<std::uint8_t>(f.q.mxfp8_scale[37] + step);
    const auto m = check(f.c, f.out, f.in, f.q);
    ASSERT_TRUE(m) << step;
    EXPECT_EQ(m->what, "mxfp8_scale (index = first element of block)");
    EXPECT_EQ(m->index, 37u * 32);
    Fixture g({9, 2880, 96, 0});
    g.q.group_fp8_scale[50] = static_cast<std::uint8_t>(g.q.group_fp8_scale[50] + step);
    const auto n = check(g.c, g.out, g.in, g.q);
    ASSERT_TRUE(n) << step;
    EXPECT_EQ(n->what, "group_fp8_scale (index = first element of group)");
    EXPECT_EQ(n->index, 50u * 96);
  }
}

TEST(BlockScaledChecks, ACodeOneStepOffIsCaught) {
  Fixture f({4, 4096, 128, 0});
  for (std::size_t i = 1000; i < f.q.mxfp8.size(); ++i)  // a code whose magnitude can grow
    if ((f.q.mxfp8[i] & 0x7f) > 8 && (f.q.mxfp8[i] & 0x7f) < 0x7e) {
      ++f.q.mxfp8[i];
      const auto m = check(f.c, f.out, f.in, f.q);
      ASSERT_TRUE(m);
      EXPECT_EQ(m->what, "mxfp8");
      EXPECT_EQ(m->index, i);
      --f.q.mxfp8[i];
      ++f.q.group_fp8[i];
      const auto n = check(f.c, f.out, f.in, f.q);
      ASSERT_TRUE(n);
      EXPECT_EQ(n->what, "group_fp8");
      return;
    }
  FAIL() << "no code to move";
}

TEST(BlockScaledChecks, RowsReadOutOfTheLayoutsAreThoseOfTheWholeCall) {
  Fixture f({131, 2880, 96, 136});
  for (Nvfp4Layout layout : {Nvfp4Layout::swizzled128x4, Nvfp4Layout::linear}) {
    FusedConfig c = f.c;
    c.quant.mxfp8_layout = layout;
    const FusedOutputs out = compute_fused(c, f.in);
    const auto whole = mxfp8_scales_of_rows(layout, out.mxfp8_scale, 90, 0, 131);
    const auto part = mxfp8_scales_of_rows(layout, out.mxfp8_scale, 90, 120, 11);
    EXPECT_EQ(part, std::vector<std::uint8_t>(whole.begin() + 120 * 90, whole.end()));
  }
  const auto whole = group_fp8_exponents_of_rows(f.out.group_fp8_scale, 30, 136, 0, 131);
  const auto part = group_fp8_exponents_of_rows(f.out.group_fp8_scale, 30, 136, 64, 3);
  EXPECT_EQ(part, std::vector<std::uint8_t>(whole.begin() + 64 * 30, whole.begin() + 67 * 30));
  // Rows past the storage: the swizzled storage of 131 rows holds 256, not 260.
  EXPECT_THROW(mxfp8_scales_of_rows(Nvfp4Layout::swizzled128x4, f.out.mxfp8_scale, 90, 200, 60),
               std::invalid_argument);
  EXPECT_THROW(group_fp8_exponents_of_rows(f.out.group_fp8_scale, 30, 136, 130, 7),
               std::invalid_argument);
}

TEST(BlockScaledChecks, ANonzeroPaddingByteIsCaught) {
  // MXFP8 swizzled: 90 scales per row pad to 92 columns.
  Fixture f({3, 2880, 96, 8});
  std::vector<std::uint8_t> mx = f.out.mxfp8_scale;
  const std::size_t column = nvfp4_scale_index(Nvfp4Layout::swizzled128x4, 2, 91, 90);
  mx[column] = 0x7f;
  const auto m = mxfp8_scale_padding_mismatch(Nvfp4Layout::swizzled128x4, mx, 3, 90);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->index, column);
  // A padding row is not written by the kernel: no claim.
  mx[column] = 0;
  mx[nvfp4_scale_index(Nvfp4Layout::swizzled128x4, 100, 5, 90)] = 0x33;
  EXPECT_FALSE(mxfp8_scale_padding_mismatch(Nvfp4Layout::swizzled128x4, mx, 3, 90));
  // Group FP8, 30 groups: bytes 2 and 3 of each token's last word, and the padding tokens
  // 3..7 of the packs before the last.
  for (std::size_t at : {group_fp8_scale_index(1, 31, 8), std::size_t{(2 * 8 + 6) * 4 + 1}}) {
    std::vector<std::uint8_t> g = f.out.group_fp8_scale;
    ASSERT_EQ(g[at], 0) << at;
    g[at] = 1;
    const auto n = group_fp8_scale_padding_mismatch(g, 3, 30, 8);
    ASSERT_TRUE(n) << at;
    EXPECT_EQ(n->index, at);
  }
  EXPECT_THROW(group_fp8_scale_padding_mismatch(f.out.group_fp8_scale, 3, 30, 2),
               std::invalid_argument);
  std::vector<std::uint8_t> short_storage(f.out.group_fp8_scale.begin(),
                                          f.out.group_fp8_scale.end() - 1);
  EXPECT_THROW(group_fp8_scale_padding_mismatch(short_storage, 3, 30, 8), std::invalid_argument);
}

// amax / 448 below 2^-126: IEEE makes a subnormal product with scale code 1, the fast-math
// build flushes it and writes 0 (and zero codes). Each build's result passes in its mode;
// the flushed one is caught in the IEEE mode.
TEST(BlockScaledChecks, AFlushedMxfp8ScaleIsAllowedInFastMathOnly) {
  FusedConfig c;
  c.ranks = 1;
  c.tokens = 1;
  c.hidden = 32;
  c.quant.mxfp8 = true;
  Tensor norm(DType::bf16, 32);
  for (std::size_t i = 0; i < 32; ++i) norm.set_value(i, std::ldexp(1.0f, -118));
  const std::vector<float> allowed(32, 0.0f);
  QuantOutputs ieee;
  ieee.mxfp8.assign(32, float_to_e4m3(256.0f));  // 2^-118 * 2^126
  ieee.mxfp8_scale = {1};
  ASSERT_EQ(float_to_ue8m0_ceil(std::ldexp(1.0f, -118) * (1.0f / 448.0f)), 1);
  QuantOutputs flushed;
  flushed.mxfp8.assign(32, 0);
  flushed.mxfp8_scale = {0};
  EXPECT_FALSE(first_quant_mismatch(c, norm, allowed, ieee));
  const auto m = first_quant_mismatch(c, norm, allowed, flushed);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->what, "mxfp8_scale (index = first element of block)");
  c.fast_math = true;
  EXPECT_FALSE(first_quant_mismatch(c, norm, allowed, ieee));
  EXPECT_FALSE(first_quant_mismatch(c, norm, allowed, flushed));
}

}  // namespace
}  // namespace fusioncheck::reference
