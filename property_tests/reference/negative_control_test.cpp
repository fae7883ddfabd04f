// Negative controls: every perturbed reference must be caught by the property that is
// meant to catch it, on a bounded set of seeded inputs; the real reference passes the same
// set (so the catch is the perturbation's doing, not a broken property).
#include <gtest/gtest.h>

#include <functional>

#include "properties.hpp"

namespace fusioncheck::reference::testing {
namespace {

using Property = std::function<Failure(const FusedConfig&, std::uint64_t, Perturbation)>;

struct Control {
  Perturbation perturbation;
  Property property;
  const char* property_name;
  std::vector<DType> dtypes;
  int min_ranks;
  float eps;
};

// Runs the property over a fixed grid of configs and seeds; returns (cases, failures) and
// the first failure's text.
struct Tally {
  int cases = 0;
  int failures = 0;
  std::string first;
};

Tally run(const Control& ctl, Perturbation p) {
  Tally tally;
  for (DType t : ctl.dtypes)
    for (Accumulation a : {Accumulation::fp32, Accumulation::per_step})
      for (std::uint64_t seed = 0; seed < 6; ++seed) {
        FusedConfig c;
        c.dtype = t;
        c.accumulation = a;
        c.ranks = ctl.min_ranks + static_cast<int>(seed % 4);
        c.tokens = 2;
        c.hidden = seed % 2 ? 256 : 64;
        c.eps = ctl.eps;
        c.weight_bias = seed % 3 == 0 ? 1.0f : 0.0f;
        ++tally.cases;
        if (Failure f = ctl.property(c, seed, p)) {
          if (tally.failures++ == 0) tally.first = *f;
        }
      }
  return tally;
}

Failure scale_invariance(const FusedConfig& c, std::uint64_t seed, Perturbation p) {
  return norm_scale_invariant(c, seed, -2, p);
}

const std::vector<DType> kAll{DType::f16, DType::bf16, DType::f32};
const std::vector<DType> k16{DType::f16, DType::bf16};

void PrintTo(const Control& c, std::ostream* os) {
  *os << perturbation_name(c.perturbation) << " by " << c.property_name;
}

class RefNegativeControl : public ::testing::TestWithParam<Control> {};

TEST_P(RefNegativeControl, PerturbationIsCaughtAndRealReferencePasses) {
  const Control& ctl = GetParam();
  const Tally real = run(ctl, Perturbation::none);
  EXPECT_EQ(real.failures, 0) << ctl.property_name << ": " << real.first;
  const Tally broken = run(ctl, ctl.perturbation);
  EXPECT_GT(broken.failures, 0) << ctl.property_name << " misses "
                                << perturbation_name(ctl.perturbation) << " in " << broken.cases
                                << " cases";
}

INSTANTIATE_TEST_SUITE_P(
    Perturbations, RefNegativeControl,
    ::testing::Values(
        Control{Perturbation::output_one_ulp, exact_inputs_bitwise, "exact_inputs_bitwise", kAll, 1,
                1e-6f},
        Control{Perturbation::reversed_rank_order, ordered_matches_naive, "ordered_matches_naive",
                kAll, 3, 1e-6f},
        Control{Perturbation::wrong_rounding_point, ordered_matches_naive, "ordered_matches_naive",
                k16, 3, 1e-6f},
        Control{Perturbation::residual_before_round, ordered_matches_naive, "ordered_matches_naive",
                k16, 2, 1e-6f},
        Control{Perturbation::norm_one_ulp, norm_within_bound, "norm_within_bound", k16, 1, 1e-6f},
        Control{Perturbation::norm_scale_4rho, norm_within_bound, "norm_within_bound", kAll, 1,
                1e-6f},
        // eps only matters when comparable to the mean square (exact inputs: ~1e2..1e5).
        Control{Perturbation::norm_without_eps, norm_within_bound, "norm_within_bound", kAll, 1,
                4096.0f},
        Control{Perturbation::norm_scale_4rho, scale_invariance, "norm_scale_invariant", kAll, 1,
                0.0f}),
    [](const auto& p) {
      return std::string(perturbation_name(p.param.perturbation)) + "_by_" + p.param.property_name;
    });

// Which controls each property does NOT catch, stated as tests so the limits are visible:
// exact inputs are, by construction, blind to summation order and rounding point.
TEST(RefNegativeControlLimits, ExactInputsCannotSeeOrderOrRoundingPoint) {
  const Control order{
      Perturbation::reversed_rank_order, exact_inputs_bitwise, "exact", kAll, 3, 1e-6f};
  EXPECT_EQ(run(order, Perturbation::reversed_rank_order).failures, 0);
  const Control rounding{
      Perturbation::wrong_rounding_point, exact_inputs_bitwise, "exact", kAll, 3, 1e-6f};
  EXPECT_EQ(run(rounding, Perturbation::wrong_rounding_point).failures, 0);
}

}  // namespace
}  // namespace fusioncheck::reference::testing

namespace fusioncheck::reference::testing {
namespace {

// The CLI self-check is itself a checker: clean on the real reference, failing on each
// perturbation it is meant to see (exact inputs: output values, not order or rounding).
TEST(RefSelfCheck, CleanOnTheReferenceAndFailsOnAPerturbedOne) {
  const SelfCheckResult clean = run_selfcheck(5, 60);
  EXPECT_EQ(clean.failures, 0) << clean.first_failure;
  EXPECT_EQ(clean.cases, 60);
  EXPECT_EQ(clean.checks, 60 * 5);
  for (Perturbation p : {Perturbation::output_one_ulp, Perturbation::norm_scale_4rho}) {
    const SelfCheckResult broken = run_selfcheck(
        5, 60,
        [p](const FusedConfig& c, const FusedInputs& in) { return perturbed_compute(c, in, p); });
    EXPECT_GT(broken.failures, 0) << perturbation_name(p);
    EXPECT_FALSE(broken.first_failure.empty());
  }
}

}  // namespace
}  // namespace fusioncheck::reference::testing
