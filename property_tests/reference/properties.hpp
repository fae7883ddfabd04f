#pragma once
// Property bodies shared by the RapidCheck tests (run on the real reference) and the
// negative controls (run on perturbed references, which must fail them). Each returns a
// one-line description of the first violation, or nothing.
#include <fmt/core.h>

#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <string>

#include "oracle.hpp"
#include "perturbed_reference.hpp"

namespace fusioncheck::reference::testing {

using Failure = std::optional<std::string>;

inline std::string describe(const FusedConfig& c) {
  return fmt::format("{} {} ranks={} tokens={} hidden={} eps={} wb={}", dtype_name(c.dtype),
                     accumulation_name(c.accumulation), c.ranks, c.tokens, c.hidden, c.eps,
                     c.weight_bias);
}

inline Failure compare_bits(const FusedConfig& c, const std::vector<std::uint32_t>& expected,
                            const Tensor& actual, const char* what) {
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (!oracle::same_value_bits(c.dtype, expected[i], actual.bits_at(i)))
      return fmt::format("{}: {} [{}] expected {:#x} got {:#x}", describe(c), what, i, expected[i],
                         actual.bits_at(i));
  return std::nullopt;
}

inline std::vector<std::uint32_t> bits_of(const Tensor& t) {
  std::vector<std::uint32_t> out(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) out[i] = t.bits_at(i);
  return out;
}

// Exact inputs: bit-identical allreduce and residual_out against the naive implementation
// and under a random permutation of the ranks.
inline Failure exact_inputs_bitwise(const FusedConfig& c, std::uint64_t seed, Perturbation p) {
  const FusedInputs in = make_exact_inputs(c, seed, seed % 7);
  const FusedOutputs out = perturbed_compute(c, in, p);
  const oracle::NaiveSum naive = oracle::naive_allreduce_residual(c, in);
  if (auto f = compare_bits(c, naive.allreduce, out.allreduce, "allreduce vs naive")) return f;
  if (auto f = compare_bits(c, naive.residual_out, out.residual_out, "residual_out vs naive"))
    return f;
  FusedInputs permuted = in;
  std::mt19937_64 rng(seed);
  std::shuffle(permuted.rank_inputs.begin(), permuted.rank_inputs.end(), rng);
  const FusedOutputs out_perm = perturbed_compute(c, permuted, p);
  if (auto f = compare_bits(c, bits_of(out.allreduce), out_perm.allreduce, "allreduce permuted"))
    return f;
  return compare_bits(c, bits_of(out.residual_out), out_perm.residual_out, "residual_out permuted");
}

// Random inputs with specials: the documented order of operations, bit for bit.
inline Failure ordered_matches_naive(const FusedConfig& c, std::uint64_t seed, Perturbation p) {
  const FusedInputs in = make_random_inputs(c, SpecialsSpec{seed, 0, 24, false});
  const FusedOutputs out = perturbed_compute(c, in, p);
  const oracle::NaiveSum naive = oracle::naive_allreduce_residual(c, in);
  if (auto f = compare_bits(c, naive.allreduce, out.allreduce, "allreduce vs naive")) return f;
  return compare_bits(c, naive.residual_out, out.residual_out, "residual_out vs naive");
}

// norm_out within the derived tolerance of a double-precision RMSNorm of the same x.
inline Failure norm_within_bound(const FusedConfig& c, std::uint64_t seed, Perturbation p) {
  const FusedInputs in = make_exact_inputs(c, seed, 0);
  const FusedOutputs out = perturbed_compute(c, in, p);
  const FusedOutputs ref = compute_fused(c, in);  // the tolerance comes from the real reference
  const std::vector<float> allowed = norm_out_tolerance(c, ref.residual_out, in.gamma);
  const std::vector<double> exact = oracle::double_rmsnorm(c, ref.residual_out, in.gamma);
  for (std::size_t i = 0; i < exact.size(); ++i) {
    if (std::isinf(allowed[i]))
      return fmt::format("{}: no claim at {} for exact inputs", describe(c), i);
    const double got = out.norm_out.value_at(i);
    if (std::fabs(got - exact[i]) > allowed[i])
      return fmt::format("{}: norm_out[{}] = {} but the double-precision norm is {} (allowed {})",
                         describe(c), i, got, exact[i], allowed[i]);
  }
  return std::nullopt;
}

// RMSNorm is invariant under x -> 2^k x with eps = 0 (all steps scale exactly in fp32, away
// from under/overflow): the scaled run's norm_out must lie within the derived bound.
inline Failure norm_scale_invariant(FusedConfig c, std::uint64_t seed, int k, Perturbation p) {
  c.eps = 0.0f;
  const FusedInputs in = make_exact_inputs(c, seed, 0);
  FusedInputs scaled = in;
  for (Tensor& t : scaled.rank_inputs)
    for (std::size_t i = 0; i < t.size(); ++i) t.set_value(i, std::ldexp(t.value_at(i), k));
  for (std::size_t i = 0; i < scaled.residual_in.size(); ++i)
    scaled.residual_in.set_value(i, std::ldexp(scaled.residual_in.value_at(i), k));
  const FusedOutputs out = compute_fused(c, in);
  const FusedOutputs out_scaled = perturbed_compute(c, scaled, p);
  const std::vector<float> allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    if (std::isinf(allowed[i])) continue;  // an all-zero token: nothing to compare
    const double a = out.norm_out.value_at(i), b = out_scaled.norm_out.value_at(i);
    if (std::fabs(a - b) > allowed[i])
      return fmt::format("{}: norm_out[{}] = {} but {} after scaling by 2^{} (allowed {})",
                         describe(c), i, a, b, k, allowed[i]);
  }
  return std::nullopt;
}

}  // namespace fusioncheck::reference::testing
