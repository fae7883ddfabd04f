#include "fusioncheck/reference/selfcheck.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "fusioncheck/reference/generators.hpp"
#include "fusioncheck/reference/tolerance.hpp"

namespace fusioncheck::reference {
namespace {

// RMSNorm in double from residual_out (close to exact), rounded to T.
Tensor double_rmsnorm(const FusedConfig& c, const Tensor& residual_out, const Tensor& gamma) {
  Tensor out(c.dtype, residual_out.size());
  const auto hidden = static_cast<std::size_t>(c.hidden);
  for (std::size_t base = 0; base < residual_out.size(); base += hidden) {
    double ss = 0.0;
    for (std::size_t j = 0; j < hidden; ++j)
      ss += std::pow(static_cast<double>(residual_out.value_at(base + j)), 2);
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(hidden) + c.eps);
    for (std::size_t j = 0; j < hidden; ++j) {
      const double w = static_cast<double>(c.weight_bias) + gamma.value_at(j);
      out.set_value(base + j, static_cast<float>(residual_out.value_at(base + j) * r * w));
    }
  }
  return out;
}

// residual_out from the exact sum: exact inputs make the double sum exact.
Tensor naive_residual(const Tensor& allreduce, const Tensor& residual_in) {
  Tensor out(allreduce.dtype(), allreduce.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out.set_value(i, static_cast<float>(static_cast<double>(allreduce.value_at(i)) +
                                        residual_in.value_at(i)));
  return out;
}

FusedConfig case_config(std::mt19937_64& rng) {
  static constexpr std::array kDtypes{DType::f16, DType::bf16, DType::f32};
  static constexpr std::array kHidden{1, 7, 16, 64, 256, 1024};
  FusedConfig c;
  c.dtype = kDtypes[rng() % kDtypes.size()];
  c.accumulation = rng() % 2 ? Accumulation::fp32 : Accumulation::per_step;
  c.ranks = 1 + static_cast<int>(rng() % 16);
  c.tokens = 1 + static_cast<int>(rng() % 4);
  c.hidden = kHidden[rng() % kHidden.size()];
  c.eps = rng() % 2 ? 1e-6f : 1e-5f;
  c.weight_bias = rng() % 2 ? 0.0f : 1.0f;
  return c;
}

}  // namespace

SelfCheckResult run_selfcheck(std::uint64_t seed, int cases, const FusedImpl& impl,
                              const SelfCheckProgress& progress) {
  SelfCheckResult result;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto next_report = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(progress.every_s));
  std::mt19937_64 rng(seed);
  auto record = [&](const FusedConfig& c, int index, const std::optional<Mismatch>& m) {
    ++result.checks;
    if (!m) return;
    ++result.failures;
    if (result.first_failure.empty())
      result.first_failure = fmt::format(
          "case {} ({} {} ranks={} tokens={} hidden={}): {} at {}: expected {} got {} (allowed {})",
          index, dtype_name(c.dtype), accumulation_name(c.accumulation), c.ranks, c.tokens,
          c.hidden, m->what, m->index, m->expected, m->actual, m->allowed);
  };
  for (int k = 0; k < cases; ++k) {
    const FusedConfig c = case_config(rng);
    const FusedInputs in = make_exact_inputs(c, seed, static_cast<std::uint64_t>(k));
    const FusedOutputs out = impl(c, in);
    ++result.cases;

    const Tensor naive_sum = naive_exact_allreduce(in, c.dtype);
    record(c, k, first_bit_mismatch(naive_sum, out.allreduce, "allreduce vs naive"));
    record(c, k,
           first_bit_mismatch(naive_residual(naive_sum, in.residual_in), out.residual_out,
                              "residual_out vs naive"));

    FusedInputs permuted = in;
    std::shuffle(permuted.rank_inputs.begin(), permuted.rank_inputs.end(), rng);
    const FusedOutputs out_perm = impl(c, permuted);
    record(
        c, k,
        first_bit_mismatch(out.allreduce, out_perm.allreduce, "allreduce under rank permutation"));
    record(c, k,
           first_bit_mismatch(out.residual_out, out_perm.residual_out,
                              "residual_out under rank permutation"));

    const std::vector<float> allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
    record(
        c, k,
        first_norm_mismatch(out.norm_out, double_rmsnorm(c, out.residual_out, in.gamma), allowed));

    if (progress.report && k + 1 < cases && Clock::now() >= next_report) {
      const auto now = Clock::now();
      progress.report(
          {k + 1, cases, result.failures, std::chrono::duration<double>(now - start).count()});
      next_report = now + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(progress.every_s));
    }
  }
  return result;
}

}  // namespace fusioncheck::reference
