// The model: the correct protocol is clean, every checker catches its negative control,
// every sim mutant is killed, schedules replay exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fusioncheck/protocol/rotation.hpp"
#include "sim_test_support.hpp"

namespace fusioncheck::sim {
namespace {

using testing::find_counterexample;
using testing::profile;
using testing::search_with;

class EveryProfile : public ::testing::TestWithParam<int> {
 protected:
  const Profile& p() const { return kProfiles[static_cast<std::size_t>(GetParam())]; }
};
INSTANTIATE_TEST_SUITE_P(Sim, EveryProfile, ::testing::Range(0, static_cast<int>(kProfiles.size())),
                         [](const auto& info) {
                           std::string name(kProfiles[static_cast<std::size_t>(info.param)].name);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Short version of the long acceptance test; runs under ASan.
TEST_P(EveryProfile, CorrectProtocolIsCleanUnderRandomAndPct) {
  for (auto scheduler : {SchedulerKind::random, SchedulerKind::pct}) {
    const auto result = search_with(default_config(), p(), Mutant::none, scheduler, 1500);
    ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
    EXPECT_EQ(result.executions, 1500u);
    EXPECT_GT(result.memory_events, 1500u * 100u);  // the runs did real work
  }
}

// Negative control of the livelock guard: spins are blocking in the model, so no mutant
// can livelock; a bound below what the run needs must make the checker fire, and the
// default bound must not.
TEST_P(EveryProfile, StepBoundCheckerFiresWhenTheBoundIsExceeded) {
  auto run = [&](std::uint64_t bound) {
    Model model(default_config(), p(), Mutant::none);
    model.set_step_bound(bound);
    model.reset();
    for (int guard = 0; guard < 10'000'000; ++guard) {
      const auto events = model.enabled();
      if (events.empty()) break;
      model.execute(events.front());
    }
    if (!model.violation()) model.finish();
    return std::make_pair(model.violation(), model.steps());
  };
  const auto [clean, steps_needed] = run(0);
  ASSERT_FALSE(clean) << clean->text;
  ASSERT_GT(steps_needed, 10u);
  const auto [bounded, steps_taken] = run(steps_needed / 2);
  ASSERT_TRUE(bounded);
  EXPECT_EQ(bounded->kind, ViolationKind::step_bound) << bounded->text;
  EXPECT_LE(steps_taken, steps_needed / 2 + 1);
}

TEST_P(EveryProfile, CorrectProtocolIsCleanInOtherShapes) {
  SimConfig late = default_config();
  late.late_trigger = true;
  SimConfig graph = tiny_config();
  graph.graph_replays = 3;
  SimConfig wide = default_config();
  wide.ranks = 4;
  wide.elems_per_vector = 4;
  SimConfig two_shot_only;
  two_shot_only.calls = {{CallKind::two_shot, 4}, {CallKind::two_shot, 3}, {CallKind::two_shot, 4}};
  for (const SimConfig& config : {late, graph, wide, two_shot_only}) {
    const auto result = search_with(config, p(), Mutant::none, SchedulerKind::random, 300);
    ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
  }
}

TEST_P(EveryProfile, TinyConfigurationHasManyDistinctSchedules) {
  // Guards the exhaustive count against passing vacuously: branching happens.
  SearchOptions options;
  options.scheduler = SchedulerKind::exhaustive;
  options.deviation_bound = 1;
  options.budget = 1000000;
  const auto result = search(tiny_config(), p(), Mutant::none, options);
  EXPECT_TRUE(result.complete);
  EXPECT_FALSE(result.counterexample);
  EXPECT_GT(result.executions, 50u);
}

// Every mutant the sim expresses is killed on at least one profile.
class EveryMutant : public ::testing::TestWithParam<Mutant> {};
INSTANTIATE_TEST_SUITE_P(Sim, EveryMutant, ::testing::ValuesIn(testing::sim_mutants()),
                         [](const auto& info) {
                           std::string name(protocol::mutant_id(info.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(EveryMutant, IsKilledOnSomeProfile) {
  int killed = 0;
  for (const auto& p : kProfiles)
    if (find_counterexample(GetParam(), p, 2000)) ++killed;
  EXPECT_GE(killed, 1) << protocol::mutant_id(GetParam()) << " survives on every profile";
}

// Negative controls, one per checker.
TEST(SimCheckers, StaleReadIsCaughtWithItsTag) {
  const auto cx = find_counterexample(Mutant::wrong_clear_buffer, profile("sm90-nvlink"), 2000);
  ASSERT_TRUE(cx);
  const auto min = minimise(*cx);
  EXPECT_EQ(min.kind, ViolationKind::wrong_value);
  EXPECT_NE(min.violation.find("holding call"), std::string::npos) << min.violation;
}

TEST(SimCheckers, DeadlockIsCaught) {
  const auto cx = find_counterexample(Mutant::float_sentinel, profile("sm90-pcie"), 2000);
  ASSERT_TRUE(cx);
  EXPECT_EQ(cx->kind, ViolationKind::deadlock);
  EXPECT_NE(cx->violation.find("holds +0"), std::string::npos) << cx->violation;
}

TEST(SimCheckers, QuiescenceInvariantIsCaught) {
  // One call with counter-not-reset leaves the counter at the grid size: invariant 1.
  SimConfig config = tiny_config();
  config.calls = {{CallKind::one_shot, 1}};
  const auto result = search_with(config, profile("sm90-pcie"), Mutant::counter_not_reset,
                                  SchedulerKind::random, 10);
  ASSERT_TRUE(result.counterexample);
  EXPECT_EQ(result.counterexample->violation->kind, ViolationKind::invariant);
  EXPECT_NE(result.counterexample->violation->text.find("invariant 1"), std::string::npos);
}

TEST(SimCheckers, MissingOutputIsCaught) {
  const auto result = search_with(tiny_config(), profile("sm120-pcie"), Mutant::empty_body,
                                  SchedulerKind::random, 10);
  ASSERT_TRUE(result.counterexample);
  EXPECT_EQ(result.counterexample->violation->kind, ViolationKind::output_missing);
}

TEST(SimCheckers, PushBeforeInitIsCaught) {
  const auto cx = find_counterexample(Mutant::no_init_barrier, profile("sm90-nvlink"), 2000);
  ASSERT_TRUE(cx);
  EXPECT_EQ(cx->kind, ViolationKind::early_push);
}

TEST(SimMutants, EmptyBodyIsArchSpecific) {
  // Compiled out for SM120 only: clean on SM90, killed on SM120.
  EXPECT_FALSE(search_with(default_config(), profile("sm90-pcie"), Mutant::empty_body,
                           SchedulerKind::random, 300)
                   .counterexample);
  EXPECT_TRUE(search_with(default_config(), profile("sm120-pcie"), Mutant::empty_body,
                          SchedulerKind::random, 300)
                  .counterexample);
}

TEST(SimMutants, PdlWaitMissingOnSm120ShowsOverlappingKernels) {
  const auto cx = find_counterexample(Mutant::pdl_wait_missing, profile("sm120-pcie"), 2000);
  ASSERT_TRUE(cx);
  const auto min = minimise(*cx);
  const Replay r = replay(min);
  ASSERT_TRUE(r.reproduced);
  const bool overlap = std::any_of(r.trace.begin(), r.trace.end(), [](const std::string& line) {
    return line.find("kernels overlap") != std::string::npos;
  });
  EXPECT_TRUE(overlap);
}

TEST(SimMutants, TornElementNeedsPiecesSmallerThanAnElement) {
  // The correct protocol survives vector stores split per element (NVLink profile: 4-byte
  // pieces); the torn mutant splits elements and is caught.
  EXPECT_EQ(profile("sm90-nvlink").store_granularity_bytes, 4);
  EXPECT_TRUE(find_counterexample(Mutant::torn_element, profile("sm90-nvlink"), 2000));
}

TEST(SimMutants, TwoShotGatherOverlapNeedsALargerTwoShotCallNext) {
  // Gather region at N * chunk of the call: only a larger next two-shot call's scatter
  // reaches it while a slower rank still reads it. The default sequence has no two two-shot
  // calls in a row, a shrinking pair is safe, a growing pair is caught.
  const Profile& p = profile("sm90-nvlink");
  const auto mutant = Mutant::twoshot_gather_overlap;
  EXPECT_FALSE(
      search_with(default_config(), p, mutant, SchedulerKind::random, 1000).counterexample);
  SimConfig config = default_config();
  config.elems_per_vector = 1;
  config.calls = {{CallKind::two_shot, 3}, {CallKind::two_shot, 1}};
  EXPECT_FALSE(search_with(config, p, mutant, SchedulerKind::random, 1000).counterexample);
  config.calls = {{CallKind::two_shot, 1}, {CallKind::two_shot, 3}};
  EXPECT_FALSE(search_with(config, p, Mutant::none, SchedulerKind::random, 1000).counterexample);
  const auto result = search_with(config, p, mutant, SchedulerKind::random, 2000);
  ASSERT_TRUE(result.counterexample);
  const Violation& v = *result.counterexample->violation;
  EXPECT_EQ(v.kind, ViolationKind::wrong_value);
  // Rank 1's call-1 scatter value in rank 0's gather region of call 0.
  EXPECT_NE(v.text.find("rank 0 block"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("read gathered element"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("holding call 1 data from rank 1"), std::string::npos) << v.text;
  EXPECT_NE(v.text.find("during call 0"), std::string::npos) << v.text;
  // Its provoking configuration holds such a pair, and the correct protocol is clean there.
  EXPECT_TRUE(
      search_with(provoking_config(mutant), p, mutant, SchedulerKind::random, 2000).counterexample);
  EXPECT_FALSE(search_with(provoking_config(mutant), p, Mutant::none, SchedulerKind::random, 1000)
                   .counterexample);
}

// A one-shot grid of one block updates the state when it arrives, as the kernel does
// (step 7 at step 2): its trace shows the update at the arrival and never a counter above 0;
// runs stay clean under every profile. With two blocks the counter is used as before, and
// the same early update there (flag-before-arrival) is caught.
TEST(SimSteps, OneBlockGridUpdatesTheStateWhenItArrives) {
  SimConfig one = default_config();
  one.blocks = 1;
  one.vectors_per_block = 4;  // the largest call of default_config
  for (const char* p : {"sm90-nvlink", "sm90-pcie", "sm100-nvlink", "sm120-pcie"}) {
    Model model(one, profile(p), Mutant::none);
    std::vector<std::string> trace;
    model.set_trace(&trace);
    const RunResult r = run_random(model, 7);
    EXPECT_FALSE(r.violation) << p << ": " << r.violation->text;
    const auto has = [&](const std::string& text) {
      return std::any_of(trace.begin(), trace.end(), [&](const std::string& line) {
        return line.find(text) != std::string::npos;
      });
    };
    EXPECT_TRUE(has("the only block: arrives and sets f=")) << p;
    EXPECT_FALSE(has("block arrives, arrival counter")) << p;
    EXPECT_FALSE(
        search_with(one, profile(p), Mutant::none, SchedulerKind::random, 300).counterexample)
        << p;
  }
  Model two(default_config(), profile("sm90-nvlink"), Mutant::none);
  std::vector<std::string> trace;
  two.set_trace(&trace);
  EXPECT_FALSE(run_random(two, 7).violation);
  EXPECT_TRUE(std::any_of(trace.begin(), trace.end(), [](const std::string& line) {
    return line.find("block arrives, arrival counter") != std::string::npos;
  }));
  EXPECT_TRUE(search_with(default_config(), profile("sm90-nvlink"), Mutant::flag_before_arrival,
                          SchedulerKind::random, 2000)
                  .counterexample);
}

// Schedules are values.
TEST(SimSchedules, RandomRunReplaysExactly) {
  const auto result = search_with(default_config(), profile("sm90-nvlink"),
                                  Mutant::clear_size_current, SchedulerKind::random, 2000);
  ASSERT_TRUE(result.counterexample);
  Model model(default_config(), profile("sm90-nvlink"), Mutant::clear_size_current);
  const RunResult again = run_replay(model, result.counterexample->deviations);
  ASSERT_TRUE(again.violation);
  EXPECT_EQ(again.violation->text, result.counterexample->violation->text);
  EXPECT_EQ(again.steps, result.counterexample->steps);
  // And the seed alone regenerates the same schedule.
  const RunResult from_seed = run_random(model, result.counterexample_seed);
  EXPECT_EQ(from_seed.deviations, result.counterexample->deviations);
}

// A rank held back while its peer runs a call ahead: the two-buffer rotation (a buffer reused
// while the slow rank still reads it) dies within a few held-rank schedules on every profile,
// where random schedules need hundreds on sm90-nvlink; the counterexample names the hold and
// replays from its deviations.
TEST_P(EveryProfile, HeldRankKillsTheRankAheadMutantQuickly) {
  const auto held =
      search_with(default_config(), p(), Mutant::two_buffers, SchedulerKind::held_rank, 50);
  ASSERT_TRUE(held.counterexample) << "not killed in 50 held-rank schedules";
  EXPECT_EQ(held.counterexample->hold.rfind("rank ", 0), 0u) << held.counterexample->hold;
  Model model(default_config(), p(), Mutant::two_buffers);
  const RunResult again = run_replay(model, held.counterexample->deviations);
  ASSERT_TRUE(again.violation);
  EXPECT_EQ(again.violation->text, held.counterexample->violation->text);
  const Counterexample cx = make_counterexample(default_config(), p(), Mutant::two_buffers,
                                                SchedulerKind::held_rank, held);
  EXPECT_EQ(counterexample_from_json(to_json(cx)).hold, cx.hold);
}

TEST(SimSchedules, HeldRankNamesTheStepsOfEachModel) {
  Model lamport(default_config(), profile("sm90-nvlink"), Mutant::none);
  EXPECT_EQ(lamport.step_name(3), "push");
  EXPECT_EQ(lamport.step_name(lamport.step_codes() - 1), "done");
  EXPECT_EQ(lamport.step_name(lamport.step_codes()), "?");
  // Deliveries and inits are not a rank's step: never held.
  EXPECT_FALSE(lamport.site_of({EventKind::deliver, 0, 0}).has_value());
  EXPECT_FALSE(lamport.site_of({EventKind::init, 0, 0}).has_value());
  EXPECT_EQ(parse_scheduler("held-rank"), SchedulerKind::held_rank);
  EXPECT_STREQ(scheduler_name(SchedulerKind::held_rank), "held-rank");
}

TEST(SimSchedules, CounterexampleRoundTripsThroughJson) {
  const auto cx = find_counterexample(Mutant::two_buffers, profile("sm100-nvlink"), 2000);
  ASSERT_TRUE(cx);
  const Counterexample back = counterexample_from_json(to_json(*cx));
  EXPECT_EQ(back.config, cx->config);
  EXPECT_EQ(back.deviations, cx->deviations);
  EXPECT_EQ(back.mutant, cx->mutant);
  EXPECT_TRUE(replay(back).reproduced);
}

TEST(SimSchedules, MalformedCounterexampleIsRejected) {
  auto j = to_json(*find_counterexample(Mutant::two_buffers, profile("sm100-nvlink"), 2000));
  j["profile"] = "sm75-isa";
  EXPECT_THROW(counterexample_from_json(j), std::invalid_argument);
  j = nlohmann::json{{"format", "something-else"}};
  EXPECT_THROW(counterexample_from_json(j), std::invalid_argument);
}

TEST(SimMinimise, ResultIsSmallerAndOneMinimal) {
  const auto cx = find_counterexample(Mutant::clear_size_current, profile("sm90-pcie"), 2000);
  ASSERT_TRUE(cx);
  const Counterexample min = minimise(*cx);
  EXPECT_LE(min.config.calls.size(), cx->config.calls.size());
  EXPECT_LE(min.config.blocks * min.config.vectors_per_block,
            cx->config.blocks * cx->config.vectors_per_block);
  EXPECT_EQ(min.kind, cx->kind);
  EXPECT_TRUE(replay(min).reproduced);
  // 1-minimal: dropping any single deviation loses the violation.
  Model model(min.config, profile("sm90-pcie"), min.mutant);
  for (std::size_t i = 0; i < min.deviations.size(); ++i) {
    auto fewer = min.deviations;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
    const RunResult r = run_replay(model, fewer);
    EXPECT_FALSE(r.violation && r.violation->kind == min.kind) << "deviation " << i;
  }
}

TEST(SimConfig, ImpossibleSizesAreRejected) {
  const Profile& p = profile("sm90-nvlink");
  SimConfig c = default_config();
  c.ranks = 17;
  EXPECT_NE(validate(c, p), "");
  c = default_config();
  c.blocks = 500;
  EXPECT_NE(validate(c, p), "");
  c = default_config();
  c.calls = {{CallKind::one_shot, 99}};
  EXPECT_NE(validate(c, p), "");
  c = default_config();
  c.elems_per_vector = 5;
  EXPECT_NE(validate(c, p), "");
  EXPECT_THROW(Model(c, p, Mutant::none), std::invalid_argument);
  EXPECT_EQ(validate(default_config(), p), "");
}

TEST(SimConfig, CallListParses) {
  std::vector<CallSpec> calls;
  ASSERT_TRUE(parse_calls("os4,ts2,os1", calls));
  EXPECT_EQ(format_calls(calls), "os4,ts2,os1");
  EXPECT_FALSE(parse_calls("os", calls));
  EXPECT_FALSE(parse_calls("xx4", calls));
  EXPECT_FALSE(parse_calls("os4,", calls));
}

}  // namespace
}  // namespace fusioncheck::sim
