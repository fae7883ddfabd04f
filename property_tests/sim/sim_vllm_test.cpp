// The model of vLLM's custom allreduce barriers: clean on every profile and in other shapes,
// each of its mutants killed the way its class fails with a minimised counterexample that
// replays, each invariant caught on its negative control, the configuration rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "fusioncheck/sim/counterexample.hpp"
#include "fusioncheck/sim/kill_table.hpp"
#include "fusioncheck/sim/vllm_model.hpp"
#include "sim_test_support.hpp"

namespace fusioncheck::sim {
namespace {

using testing::profile;
using testing::search_with;

constexpr SimProtocol kVllm = SimProtocol::vllm;
using K = CallKind;

SimConfig calls(std::vector<CallSpec> list, int ranks = 2) {
  SimConfig c = default_config(kVllm);
  c.calls = std::move(list);
  c.ranks = ranks;
  return c;
}

class VllmEveryProfile : public ::testing::TestWithParam<int> {
 protected:
  const Profile& p() const { return kProfiles[static_cast<std::size_t>(GetParam())]; }
};
INSTANTIATE_TEST_SUITE_P(SimVllm, VllmEveryProfile,
                         ::testing::Range(0, static_cast<int>(kProfiles.size())),
                         [](const auto& info) {
                           std::string name(kProfiles[static_cast<std::size_t>(info.param)].name);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(VllmEveryProfile, CorrectProtocolIsCleanUnderEveryScheduler) {
  for (auto scheduler : {SchedulerKind::random, SchedulerKind::pct, SchedulerKind::held_rank}) {
    const auto result = search_with(default_config(kVllm), p(), Mutant::none, scheduler, 300);
    ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
    EXPECT_EQ(result.executions, 300u);
    EXPECT_GT(result.memory_events, 300u * 50u);  // the runs did real work
  }
}

TEST_P(VllmEveryProfile, CorrectProtocolIsCleanInOtherShapes) {
  // Three, four and eight ranks (uneven parts: the last rank's part is larger), one element
  // per vector, grids that change between calls, replays of the sequence as a graph.
  std::vector<SimConfig> shapes = {
      calls({{K::vllm_2stage, 4}, {K::vllm_1stage, 3}, {K::vllm_2stage, 3}}, 3),
      calls({{K::vllm_2stage, 4}, {K::vllm_2stage, 2}, {K::vllm_1stage, 4}}, 4),
      calls({{K::vllm_2stage, 4}, {K::vllm_1stage, 1}}, 8)};
  // Calls too small to reach block 1: its counters stay zero.
  shapes.push_back(calls({{K::vllm_1stage, 1}, {K::vllm_2stage, 2}, {K::vllm_1stage, 2}}));
  SimConfig one_elem = default_config(kVllm);
  one_elem.elems_per_vector = 1;
  shapes.push_back(one_elem);
  SimConfig graph = calls({{K::vllm_1stage, 4}, {K::vllm_2stage, 3}});
  graph.graph_replays = 3;
  shapes.push_back(graph);
  for (const SimConfig& c : shapes) {
    const auto result = search_with(c, p(), Mutant::none, SchedulerKind::random, 100);
    ASSERT_FALSE(result.counterexample)
        << format_calls(c.calls) << ": " << result.counterexample->violation->text;
  }
}

std::vector<Mutant> vllm_mutants() {
  std::vector<Mutant> out;
  for (const auto& info : protocol::kMutantCatalogue)
    if (info.layers & protocol::kInSimVllm) out.push_back(info.mutant);
  return out;
}

class VllmMutant : public ::testing::TestWithParam<Mutant> {};
INSTANTIATE_TEST_SUITE_P(SimVllm, VllmMutant, ::testing::ValuesIn(vllm_mutants()),
                         [](const auto& info) {
                           std::string name(protocol::mutant_id(info.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// On an NVLink and a PCIe profile, as the kill table searches: killed, minimised, replayable
// (every profile: docs/sim_kill_table.md).
TEST_P(VllmMutant, IsKilledWithAReplayableMinimalCounterexample) {
  testing::expect_killed_with_a_replayable_minimum(GetParam(), kVllm, " (vLLM)", 20000);
}

TEST(SimVllmMutants, EachKillsTheWayItsClassDoes) {
  const auto minimal = [](Mutant m) {
    KillTableOptions options;
    options.random_budget = 1000;
    return kill_row(m, profile("sm90-nvlink"), options, kVllm).minimal;
  };
  // One counter set: a peer's next count overwrites the one a slower rank awaits.
  const Counterexample one_set = minimal(Mutant::vllm_one_counter_set);
  EXPECT_EQ(one_set.kind, ViolationKind::deadlock);
  EXPECT_NE(one_set.violation.find("waits for count"), std::string::npos) << one_set.violation;
  // No end barrier: the next call's input read in place of this call's.
  const Counterexample no_end = minimal(Mutant::vllm_no_end_barrier);
  EXPECT_EQ(no_end.kind, ViolationKind::wrong_value);
  EXPECT_NE(no_end.violation.find("input vector"), std::string::npos) << no_end.violation;
  // No fence: a peer's chunk gathered before its stores landed.
  const Counterexample no_fence = minimal(Mutant::vllm_no_fence);
  EXPECT_EQ(no_fence.kind, ViolationKind::wrong_value);
  EXPECT_NE(no_fence.violation.find("temporary vector"), std::string::npos) << no_fence.violation;
}

// The fence matters only between the scatter and the gather: without two-stage calls the
// no-fence mutant is the correct protocol, and without one-stage calls so is no-end-barrier.
TEST(SimVllmMutants, EachNeedsTheKernelItBreaks) {
  const auto killed = [](const SimConfig& c, Mutant m) {
    return search_with(c, profile("sm90-nvlink"), m, SchedulerKind::random, 2000)
        .counterexample.has_value();
  };
  const SimConfig one_stage =
      calls({{K::vllm_1stage, 4}, {K::vllm_1stage, 2}, {K::vllm_1stage, 4}});
  const SimConfig two_stage =
      calls({{K::vllm_2stage, 4}, {K::vllm_2stage, 3}, {K::vllm_2stage, 4}});
  EXPECT_FALSE(killed(one_stage, Mutant::vllm_no_fence));
  EXPECT_TRUE(killed(two_stage, Mutant::vllm_no_fence));
  EXPECT_FALSE(killed(two_stage, Mutant::vllm_no_end_barrier));
  EXPECT_TRUE(killed(one_stage, Mutant::vllm_no_end_barrier));
}

TEST(SimVllmCheckers, EachInvariantCatchesItsNegativeControl) {
  const SimConfig config = calls({{K::vllm_1stage, 4}, {K::vllm_2stage, 3}});
  testing::expect_each_invariant_catches<VllmModel>(
      config, profile("sm90-nvlink"),
      {
          {"invariant V1", [](VllmModel& m) { m.poke_count(1, 0, 1, 7u); }},
          {"invariant V2", [](VllmModel& m) { m.poke(0, m.counter_offset(0, 1, 1), 9u); }},
          {"invariant V3", [](VllmModel& m) { m.poke(1, m.tmp_offset(0), 5u); }},
          {"invariant V4", [](VllmModel& m) { m.poke(0, m.input_offset(2), 5u); }},
      });
}

TEST(SimVllmConfig, CallsParseFormatAndStayInOneModel) {
  std::vector<CallSpec> parsed;
  ASSERT_TRUE(parse_calls("vs4,vt2", parsed));
  EXPECT_EQ(parsed, (std::vector<CallSpec>{{K::vllm_1stage, 4}, {K::vllm_2stage, 2}}));
  EXPECT_EQ(format_calls(parsed), "vs4,vt2");
  EXPECT_EQ(protocol_of(calls(parsed)), kVllm);
  EXPECT_NE(validate(calls({{K::vllm_1stage, 2}, {K::one_shot, 2}}), profile("sm90-nvlink"))
                .find("the calls of one protocol"),
            std::string::npos);
  // The model takes its own mutants and calls only.
  EXPECT_THROW(VllmModel(default_config(kVllm), profile("sm90-nvlink"), Mutant::two_buffers),
               std::invalid_argument);
  EXPECT_THROW(VllmModel(default_config(), profile("sm90-nvlink"), Mutant::none),
               std::invalid_argument);
  EXPECT_EQ(mutant_protocol(Mutant::vllm_no_fence), kVllm);
  EXPECT_EQ(std::string(protocol_name(kVllm)), "vllm");
}

// --- vLLM's own header today: a flag per block, start and end arrays (SimConfig::vllm_barrier).

SimConfig start_end(SimConfig c, bool independent_lanes = false) {
  c.vllm_barrier = VllmBarrier::start_end;
  c.independent_lanes = independent_lanes;
  return c;
}

TEST_P(VllmEveryProfile, StartEndBarrierIsCleanWhenTheLanesReadTheFlagTogether) {
  std::vector<SimConfig> shapes = {start_end(default_config(kVllm)),
                                   start_end(calls({{K::vllm_2stage, 4}, {K::vllm_1stage, 3}}, 3)),
                                   start_end(calls({{K::vllm_1stage, 1}, {K::vllm_2stage, 2}}))};
  SimConfig graph = start_end(calls({{K::vllm_1stage, 4}, {K::vllm_2stage, 3}}));
  graph.graph_replays = 3;
  shapes.push_back(graph);
  for (auto scheduler : {SchedulerKind::random, SchedulerKind::pct})
    for (const SimConfig& c : shapes) {
      const auto result = search_with(c, p(), Mutant::none, scheduler, 150);
      ASSERT_FALSE(result.counterexample)
          << format_calls(c.calls) << ": " << result.counterexample->violation->text;
      EXPECT_GT(result.memory_events, 150u * 10u);
    }
}

// Each mutant of the barrier protocol dies on the start-end barrier too, the way its class does.
TEST(SimVllmStartEnd, EachMutantIsKilledAndReplays) {
  const std::vector<std::pair<Mutant, ViolationKind>> expected = {
      {Mutant::vllm_one_counter_set, ViolationKind::deadlock},
      {Mutant::vllm_no_end_barrier, ViolationKind::wrong_value},
      {Mutant::vllm_no_fence, ViolationKind::wrong_value}};
  const SimConfig c = start_end(default_config(kVllm));
  for (const auto& [mutant, kind] : expected) {
    const auto result = search_with(c, profile("sm90-nvlink"), mutant, SchedulerKind::random, 3000);
    ASSERT_TRUE(result.counterexample) << protocol::mutant_id(mutant);
    EXPECT_EQ(result.counterexample->violation->kind, kind) << protocol::mutant_id(mutant);
    const Counterexample cx =
        make_counterexample(c, profile("sm90-nvlink"), mutant, SchedulerKind::random, result);
    const Counterexample back = counterexample_from_json(to_json(cx));
    EXPECT_EQ(back.config.vllm_barrier, VllmBarrier::start_end);
    EXPECT_TRUE(replay(back).reproduced) << protocol::mutant_id(mutant);
  }
}

// With the lanes reading the block's flag each on its own, the one-stage kernel's final
// barrier (no __syncthreads between the lanes' read and thread 0's update) lets thread 0
// publish the next flag before another lane read it. The two-stage kernel, whose middle
// barrier has the __syncthreads, stays clean.
TEST(SimVllmStartEnd, IndependentLanesHangTheOneStageFinalBarrierOnly) {
  const SimConfig one_stage = start_end(calls({{K::vllm_1stage, 1}}), true);
  const auto hung =
      search_with(one_stage, profile("sm90-nvlink"), Mutant::none, SchedulerKind::random, 5000);
  ASSERT_TRUE(hung.counterexample);
  // A lane that read the published flag awaits a count no peer stores (a hang), or, where the
  // peer's lane did the same, the call completes with the block's lanes a barrier apart.
  const Violation& v = *hung.counterexample->violation;
  EXPECT_TRUE(
      (v.kind == ViolationKind::deadlock && v.text.find("end counter") != std::string::npos) ||
      (v.kind == ViolationKind::invariant && v.text.find("invariant V1") != std::string::npos))
      << v.text;
  const Counterexample cx = minimise(make_counterexample(
      one_stage, profile("sm90-nvlink"), Mutant::none, SchedulerKind::random, hung));
  EXPECT_EQ(cx.config.ranks, 2);
  EXPECT_TRUE(counterexample_from_json(to_json(cx)).config.independent_lanes);
  EXPECT_TRUE(replay(cx).reproduced);
  const SimConfig two_stage =
      start_end(calls({{K::vllm_2stage, 4}, {K::vllm_2stage, 3}, {K::vllm_2stage, 4}}), true);
  const auto clean =
      search_with(two_stage, profile("sm90-nvlink"), Mutant::none, SchedulerKind::random, 1000);
  EXPECT_FALSE(clean.counterexample) << clean.counterexample->violation->text;
}

TEST(SimVllmStartEnd, EachInvariantCatchesItsNegativeControl) {
  const SimConfig config = start_end(calls({{K::vllm_1stage, 4}, {K::vllm_2stage, 3}}));
  testing::expect_each_invariant_catches<VllmModel>(
      config, profile("sm90-nvlink"),
      {
          {"invariant V1", [](VllmModel& m) { m.poke_count(1, 0, 1, 7u); }},
          {"invariant V1", [](VllmModel& m) { m.poke_flag(0, 1, 3u); }},  // thread 0's update
          {"invariant V2", [](VllmModel& m) { m.poke(0, m.counter_offset(1, 1, 1), 9u); }},
          {"invariant V3", [](VllmModel& m) { m.poke(1, m.tmp_offset(0), 5u); }},
      });
}

TEST(SimVllmStartEnd, ConfigurationRules) {
  SimConfig lamport = default_config();
  lamport.vllm_barrier = VllmBarrier::start_end;
  EXPECT_NE(validate(lamport, profile("sm90-nvlink")).find("vLLM model only"), std::string::npos);
  SimConfig lanes = default_config(kVllm);
  lanes.independent_lanes = true;  // without the start-end barrier, which has the block flag
  EXPECT_NE(validate(lanes, profile("sm90-nvlink")).find("start-end"), std::string::npos);
  EXPECT_EQ(validate(start_end(default_config(kVllm), true), profile("sm90-nvlink")), "");
  EXPECT_EQ(parse_vllm_barrier("start-end"), VllmBarrier::start_end);
  EXPECT_EQ(parse_vllm_barrier(vllm_barrier_name(VllmBarrier::counter_sets)),
            VllmBarrier::counter_sets);
  EXPECT_FALSE(parse_vllm_barrier("parity"));
  // A file with an unknown barrier is refused, one without the field reads as counter sets.
  const SimConfig c = default_config(kVllm);
  const auto found = search_with(c, profile("sm90-nvlink"), Mutant::vllm_one_counter_set,
                                 SchedulerKind::random, 3000);
  ASSERT_TRUE(found.counterexample);
  nlohmann::json j = to_json(make_counterexample(
      c, profile("sm90-nvlink"), Mutant::vllm_one_counter_set, SchedulerKind::random, found));
  EXPECT_FALSE(j.at("config").contains("vllm_barrier"));
  EXPECT_EQ(counterexample_from_json(j).config.vllm_barrier, VllmBarrier::counter_sets);
  j["config"]["vllm_barrier"] = "sideways";
  EXPECT_THROW((void)counterexample_from_json(j), std::invalid_argument);
}

}  // namespace
}  // namespace fusioncheck::sim
