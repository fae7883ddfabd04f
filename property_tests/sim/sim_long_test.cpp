// Acceptance: the correct protocol passes 10^5 random + PCT schedules per profile and the
// bounded exhaustive search of the smallest non-trivial configuration (2 ranks, 2 blocks,
// 4 calls). Labelled `long`: the ASan run skips it and runs the short version instead.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim_test_support.hpp"

namespace fusioncheck::sim {
namespace {

class LongEveryProfile : public ::testing::TestWithParam<int> {
 protected:
  const Profile& p() const { return kProfiles[static_cast<std::size_t>(GetParam())]; }
};
INSTANTIATE_TEST_SUITE_P(SimLong, LongEveryProfile,
                         ::testing::Range(0, static_cast<int>(kProfiles.size())),
                         [](const auto& info) {
                           std::string name(kProfiles[static_cast<std::size_t>(info.param)].name);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(LongEveryProfile, CorrectProtocolPassesOneHundredThousandSchedules) {
  std::uint64_t total = 0;
  for (auto scheduler : {SchedulerKind::random, SchedulerKind::pct}) {
    const auto result = testing::search_with(default_config(), p(), Mutant::none, scheduler, 50000);
    ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
    total += result.executions;
  }
  EXPECT_GE(total, 100000u);
}

// The bounded exhaustive search of the tiny configuration for every profile; the number of
// executions is the model checker's golden count.
TEST(SimLong, CorrectProtocolPassesExhaustiveTinySearch) {
  std::string text = testing::exhaustive_counts_header();
  for (const auto& p : kProfiles) {
    SearchOptions options;
    options.scheduler = SchedulerKind::exhaustive;
    options.deviation_bound = 2;
    options.budget = 100000000;
    const SimConfig tiny = tiny_config();
    ASSERT_EQ(tiny.ranks, 2);
    ASSERT_EQ(tiny.blocks, 2);
    ASSERT_GE(tiny.calls.size(), 4u);
    const auto result = search(tiny, p, Mutant::none, options);
    EXPECT_TRUE(result.complete);
    ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
    text += std::string(p.name) + " 2 " + std::to_string(result.executions) + "\n";
  }
  testing::expect_golden("exhaustive_counts_k2.txt", text);
}

}  // namespace
}  // namespace fusioncheck::sim
