// Golden tests: the minimal traces of known-bad mutants and the exhaustive execution counts
// are checked in under golden/ and compared exactly. To regenerate them after a deliberate
// change of the model, run the test binary with FUSIONCHECK_UPDATE_GOLDEN=1 and review the
// diff (see docs/sim.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fmt/core.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim_test_support.hpp"

namespace fusioncheck::sim {
namespace {

// Deterministic: fixed seeds, and minimisation without a time limit.
Counterexample minimal_counterexample(Mutant mutant, const char* profile_name) {
  const auto found = testing::find_counterexample(mutant, testing::profile(profile_name), 2000);
  EXPECT_TRUE(found);
  if (!found) return {};
  MinimiseOptions options;
  options.time_limit_s = 1e9;
  return minimise(*found, options);
}

void expect_golden_trace(Mutant mutant, const char* profile_name) {
  const Counterexample cx = minimal_counterexample(mutant, profile_name);
  const Replay r = replay(cx);
  ASSERT_TRUE(r.reproduced);
  testing::expect_golden(fmt::format("{}-{}.trace.txt", protocol::mutant_id(mutant), profile_name),
                         format_counterexample(cx, r.trace, ""));
}

TEST(SimGolden, WrongClearBufferTrace) {
  expect_golden_trace(Mutant::wrong_clear_buffer, "sm90-nvlink");
}
TEST(SimGolden, PdlWaitMissingTrace) {
  expect_golden_trace(Mutant::pdl_wait_missing, "sm120-pcie");
}
TEST(SimGolden, BarrierNoReleaseTrace) {
  expect_golden_trace(Mutant::barrier_no_release, "sm90-nvlink");
}
TEST(SimGolden, ClearSizeCurrentTrace) {
  expect_golden_trace(Mutant::clear_size_current, "sm90-pcie");
}

// The counterexample file the CLI replay test runs.
TEST(SimGolden, PdlWaitMissingCounterexampleFile) {
  const Counterexample cx = minimal_counterexample(Mutant::pdl_wait_missing, "sm120-pcie");
  testing::expect_golden("pdl-wait-missing-sm120-pcie.json", to_json(cx).dump(2) + "\n");
}

// The model checker's golden count: executions of the tiny configuration with at most k
// deviations (preemptions) from the default schedule, per profile.
// Up to one deviation here; the two-deviation counts are checked by the long test.
TEST(SimGolden, ExhaustiveCounts) {
  std::string text = testing::exhaustive_counts_header();
  for (const auto& p : kProfiles)
    for (int k = 0; k <= 1; ++k) {
      SearchOptions options;
      options.scheduler = SchedulerKind::exhaustive;
      options.deviation_bound = k;
      options.budget = 100000000;
      const auto result = search(tiny_config(), p, Mutant::none, options);
      ASSERT_TRUE(result.complete);
      ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
      text += fmt::format("{} {} {}\n", p.name, k, result.executions);
    }
  testing::expect_golden("exhaustive_counts.txt", text);
}

}  // namespace
}  // namespace fusioncheck::sim
