// The model of vLLM's custom allreduce barriers: clean on every profile and in other shapes,
// each of its mutants killed the way its class fails with a minimised counterexample that
// replays, each invariant caught on its negative control, the configuration rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace fusioncheck::sim
