// Regression hashes of the reference's outputs, tolerances and quantised-output verdicts over
// a fixed grid of calls, taken from the reference before its loops were made branch-free and
// vectorised: those rewrites must not change one value. NaNs are hashed as "a NaN" (their
// sign after an inf - inf or a NaN + NaN depends on the compiler's operand order, which IEEE
// leaves open and no check looks at); every other bit counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "fusioncheck/reference/reference.hpp"

namespace fusioncheck::reference {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) { return (h ^ v) * 0x100000001b3ull; }
std::uint64_t hash_float(std::uint64_t h, double v) {  // every bit (-0 too), NaN as one value
  if (std::isnan(v)) return mix(h, 0x7ff8);
  std::uint64_t b;
  std::memcpy(&b, &v, 8);
  return mix(h, b);
}
std::uint64_t hash_tensor(std::uint64_t h, const Tensor& t) {
  for (std::size_t i = 0; i < t.size(); ++i) h = hash_float(h, t.value_at(i));
  return h;
}
std::uint64_t hash_e4m3(std::uint64_t h, const std::vector<std::uint8_t>& codes) {
  for (std::uint8_t c : codes) h = mix(h, (c & 0x7f) == 0x7f ? 0x7f : c);
  return h;
}
std::uint64_t hash_bytes(std::uint64_t h, const std::vector<std::uint8_t>& bytes) {
  for (std::uint8_t c : bytes) h = mix(h, c);
  return h;
}
std::uint64_t hash_floats(std::uint64_t h, const std::vector<float>& v) {
  for (float f : v) h = hash_float(h, f);
  return h;
}

FusedConfig grid_config(DType d, int ranks, int tokens, int hidden, int acc, int pattern,
                        int kind) {
  FusedConfig c;
  c.dtype = d;
  c.ranks = ranks;
  c.tokens = tokens;
  c.hidden = hidden;
  c.accumulation = acc ? Accumulation::per_step : Accumulation::fp32;
  c.weight_bias = hidden % 3 == 0 ? 1.0f : 0.0f;
  c.eps = kind == 2 ? 0.0f : 1e-6f;
  c.sum_from = (tokens + hidden) % ranks;
  c.canonicalize_neg_zero = kind != 1;
  c.quant.fp8_static = pattern == 1;
  c.quant.fp8_inv_scale = 2.0f;
  c.quant.fp8_dynamic = pattern == 2;
  c.quant.nvfp4 = pattern == 3;
  c.quant.nvfp4_global_scale = 448.0f * 6.0f / 8.0f;
  return c;
}

FusedInputs grid_inputs(const FusedConfig& c, int kind) {
  // kind 0: exact; 1: specials, no inf/NaN; 2: half specials, with inf and NaN
  if (kind == 0)
    return make_exact_inputs(c, 5 + static_cast<std::uint64_t>(c.hidden),
                             static_cast<std::uint64_t>(c.tokens));
  return make_random_inputs(c, SpecialsSpec{7u + static_cast<std::uint64_t>(c.hidden), 1,
                                            kind == 1 ? 24 : 128, kind == 2, true});
}

// compute_fused's every output, over dtypes, rank counts, shapes (threaded ones included),
// both accumulations, every quantised pattern and three kinds of inputs.
TEST(RefGolden, FusedOutputsHashAsBefore) {
  std::uint64_t h = 1469598103934665603ull;
  for (DType d : {DType::f16, DType::bf16, DType::f32})
    for (int ranks : {1, 2, 3, 8})
      for (int tokens : {1, 3, 40})
        for (int hidden : {16, 48, 1024})
          for (int acc = 0; acc < 2; ++acc)
            for (int pattern = 0; pattern < 4; ++pattern)
              for (int kind = 0; kind < 3; ++kind) {
                if (tokens * hidden * ranks > 200000) continue;
                const FusedConfig c = grid_config(d, ranks, tokens, hidden, acc, pattern, kind);
                const FusedOutputs o = compute_fused(c, grid_inputs(c, kind));
                h = hash_tensor(h, o.allreduce);
                h = hash_tensor(h, o.residual_out);
                h = hash_tensor(h, o.norm_out);
                h = hash_e4m3(h, o.fp8_static);
                h = hash_e4m3(h, o.fp8_dynamic);
                h = hash_floats(h, o.fp8_dynamic_scale);
                h = hash_bytes(h, o.nvfp4);
                h = hash_e4m3(h, o.nvfp4_scale);
              }
  EXPECT_EQ(h, 0xe7ba64b61a60f8dull);
}

// norm_out_tolerance and norm_before_rounding, including eps 0 and inputs with inf and NaN.
TEST(RefGolden, NormToleranceHashesAsBefore) {
  std::uint64_t h = 1469598103934665603ull;
  for (DType d : {DType::f16, DType::bf16, DType::f32})
    for (int tokens : {1, 3, 20})
      for (int hidden : {16, 48, 1024})
        for (int kind = 0; kind < 3; ++kind) {
          const FusedConfig c = grid_config(d, 2, tokens, hidden, 0, 0, kind);
          const FusedInputs in = grid_inputs(c, kind);
          const FusedOutputs out = compute_fused(c, in);
          h = hash_floats(h, norm_out_tolerance(c, out.residual_out, in.gamma));
          h = hash_floats(h, norm_before_rounding(c, out.residual_out, in.gamma));
        }
  EXPECT_EQ(h, 0xfa856d04c90771cbull);
}

// first_quant_mismatch's verdict (which element, which interval) on the reference's own codes
// and on codes and scales perturbed at random places.
TEST(RefGolden, QuantisedVerdictsHashAsBefore) {
  std::uint64_t h = 1469598103934665603ull;
  std::mt19937 rng(3);
  int found = 0;
  for (DType d : {DType::f16, DType::bf16})
    for (int tokens : {1, 4, 33})
      for (int hidden : {16, 64, 1024})
        for (int pattern = 1; pattern < 4; ++pattern)
          for (int kind = 0; kind < 2; ++kind)
            for (int perturb = 0; perturb < 6; ++perturb) {
              const FusedConfig c = grid_config(d, 2, tokens, hidden, 0, pattern, kind);
              const FusedInputs in = grid_inputs(c, kind);
              const FusedOutputs out = compute_fused(c, in);
              const auto allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
              QuantOutputs q{out.fp8_static, out.fp8_dynamic, out.fp8_dynamic_scale, out.nvfp4,
                             out.nvfp4_scale};
              const auto count =
                  static_cast<std::size_t>(tokens) * static_cast<std::size_t>(hidden);
              for (int k = 0; k < perturb; ++k) {
                const std::size_t i = rng() % count;
                const int delta = rng() % 2 ? 1 : -1;
                if (pattern == 1)
                  q.fp8_static[i] = static_cast<std::uint8_t>(q.fp8_static[i] + delta);
                if (pattern == 2 && k % 2)
                  q.fp8_dynamic[i] = static_cast<std::uint8_t>(q.fp8_dynamic[i] + delta);
                if (pattern == 2 && k % 2 == 0)
                  q.fp8_dynamic_scale[i % static_cast<std::size_t>(tokens)] *=
                      1.0f + static_cast<float>(delta) * 0x1p-20f * static_cast<float>(rng() % 8);
                if (pattern == 3 && k % 2)
                  q.nvfp4[i / 2] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
                if (pattern == 3 && k % 2 == 0) {
                  auto& s = q.nvfp4_scale[rng() % q.nvfp4_scale.size()];
                  s = static_cast<std::uint8_t>(s + delta);
                }
              }
              const auto m = first_quant_mismatch(c, out.norm_out, allowed, q);
              if (!m) {
                h = mix(h, 12345);
                continue;
              }
              ++found;
              h = mix(h, m->index);
              h = hash_float(h, m->expected);
              h = hash_float(h, m->actual);
              h = hash_float(h, m->allowed);
              for (char ch : m->what) h = mix(h, static_cast<unsigned char>(ch));
            }
  EXPECT_GT(found, 200);  // the grid does reach the checks' failures
  EXPECT_EQ(h, 0xd6cf7e8e6aa50cfcull);
}

}  // namespace
}  // namespace fusioncheck::reference
