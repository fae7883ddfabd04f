// The model of SGLang's push plane: clean on every profile and in other shapes, each of its
// mutants killed the way its class fails with a minimised counterexample that replays, each
// needing the kernel it breaks, each invariant caught on its negative control, the
// configuration rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "fusioncheck/sim/kill_table.hpp"
#include "fusioncheck/sim/sglang_model.hpp"
#include "sim_test_support.hpp"

namespace fusioncheck::sim {
namespace {

using testing::mutants_of;
using testing::profile;
using testing::search_with;
using testing::test_name;

constexpr SimProtocol kSglang = SimProtocol::sglang;
using K = CallKind;

SimConfig calls(std::vector<CallSpec> list, int ranks = 2) {
  SimConfig c = default_config(kSglang);
  c.calls = std::move(list);
  c.ranks = ranks;
  return c;
}

class SglangEveryProfile : public ::testing::TestWithParam<int> {
 protected:
  const Profile& p() const { return kProfiles[static_cast<std::size_t>(GetParam())]; }
};
INSTANTIATE_TEST_SUITE_P(SimSglang, SglangEveryProfile,
                         ::testing::Range(0, static_cast<int>(kProfiles.size())),
                         [](const auto& info) {
                           return test_name(kProfiles[static_cast<std::size_t>(info.param)].name);
                         });

TEST_P(SglangEveryProfile, CorrectProtocolIsCleanUnderEveryScheduler) {
  for (auto scheduler : {SchedulerKind::random, SchedulerKind::pct, SchedulerKind::held_rank}) {
    const auto result = search_with(default_config(kSglang), p(), Mutant::none, scheduler, 300);
    ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
    EXPECT_EQ(result.executions, 300u);
    EXPECT_GT(result.memory_events, 300u * 50u);  // the runs did real work
  }
}

TEST_P(SglangEveryProfile, CorrectProtocolIsCleanInOtherShapes) {
  // Three, four and eight ranks (two-shot chunks that leave a rank without one), one
  // element per vector, fused calls with and without a bumper, replays of the sequence.
  std::vector<SimConfig> shapes = {
      calls({{K::sglang_push2, 4}, {K::sglang_push1, 3}, {K::sglang_push2, 3}}, 3),
      calls({{K::sglang_push2, 3}, {K::sglang_fused, 2}, {K::sglang_push1, 4}}, 4),
      calls({{K::sglang_push2, 4}, {K::sglang_push1, 1}, {K::sglang_fused, 1}}, 8)};
  shapes.push_back(calls({{K::sglang_fused, 2}, {K::sglang_fused, 1}, {K::sglang_push2, 2}}));
  SimConfig one_elem = default_config(kSglang);
  one_elem.elems_per_vector = 1;
  shapes.push_back(one_elem);
  SimConfig graph = calls({{K::sglang_push1, 4}, {K::sglang_fused, 1}, {K::sglang_push2, 3}});
  graph.graph_replays = 3;
  shapes.push_back(graph);
  for (const SimConfig& c : shapes) {
    const auto result = search_with(c, p(), Mutant::none, SchedulerKind::random, 100);
    ASSERT_FALSE(result.counterexample)
        << format_calls(c.calls) << ": " << result.counterexample->violation->text;
  }
}

class SglangMutant : public ::testing::TestWithParam<Mutant> {};
INSTANTIATE_TEST_SUITE_P(SimSglang, SglangMutant, ::testing::ValuesIn(mutants_of(kSglang)),
                         [](const auto& info) {
                           return test_name(protocol::mutant_id(info.param));
                         });

// On an NVLink and a PCIe profile, as the kill table searches: killed, minimised, replayable
// (every profile: docs/sim_kill_table.md).
TEST_P(SglangMutant, IsKilledWithAReplayableMinimalCounterexample) {
  testing::expect_killed_with_a_replayable_minimum(GetParam(), kSglang, " (SGLang)", 20000);
}

TEST(SimSglangMutants, EachKillsTheWayItsClassDoes) {
  const auto minimal = [](Mutant m) {
    KillTableOptions options;
    options.random_budget = 1000;
    return kill_row(m, profile("sm90-nvlink"), options, kSglang).minimal;
  };
  // No remap: a +0 payload word reads as the empty marker for ever.
  const Counterexample no_remap = minimal(Mutant::sglang_no_remap);
  EXPECT_EQ(no_remap.kind, ViolationKind::deadlock);
  EXPECT_NE(no_remap.violation.find("still +0"), std::string::npos) << no_remap.violation;
  // No re-arm: an older call's payload read as this call's.
  const Counterexample no_rearm = minimal(Mutant::sglang_no_rearm);
  EXPECT_EQ(no_rearm.kind, ViolationKind::wrong_value);
  // No bumper: the counters past the tokens keep the old phase.
  const Counterexample no_bumper = minimal(Mutant::sglang_no_bumper);
  EXPECT_NE(no_bumper.violation.find("invariant S1"), std::string::npos) << no_bumper.violation;
  // No cluster barrier: the sibling block takes the phase its leader already flipped.
  const Counterexample no_barrier = minimal(Mutant::sglang_no_cluster_barrier);
  EXPECT_EQ(no_barrier.kind, ViolationKind::deadlock);
  EXPECT_NE(no_barrier.violation.find("sf"), std::string::npos) << no_barrier.violation;
}

// Each mutant survives a sequence without the kernel or the order it breaks.
TEST(SimSglangMutants, EachNeedsTheKernelItBreaks) {
  const auto killed = [](const SimConfig& c, Mutant m) {
    return search_with(c, profile("sm90-nvlink"), m, SchedulerKind::random, 600)
        .counterexample.has_value();
  };
  const SimConfig generic =
      calls({{K::sglang_push1, 4}, {K::sglang_push2, 3}, {K::sglang_push1, 2}});
  const SimConfig fused_all =
      calls({{K::sglang_fused, 2}, {K::sglang_fused, 2}, {K::sglang_fused, 2}});
  // Counter 1 keeps its phase through the one-token call, and the push call's block 1 then
  // reuses phase 0 for vector 1, which the fused call just used.
  const SimConfig push_after_fused = calls({{K::sglang_fused, 1}, {K::sglang_push1, 4}});
  const SimConfig fused_after_push = calls({{K::sglang_push1, 4}, {K::sglang_fused, 2}});
  // The bumper and the cluster barrier live in the fused kernel; the bumper only has work
  // where a fused call has fewer tokens than counters.
  EXPECT_FALSE(killed(generic, Mutant::sglang_no_bumper));
  EXPECT_FALSE(killed(fused_all, Mutant::sglang_no_bumper));
  EXPECT_TRUE(killed(push_after_fused, Mutant::sglang_no_bumper));
  EXPECT_FALSE(killed(generic, Mutant::sglang_no_cluster_barrier));
  EXPECT_TRUE(killed(fused_all, Mutant::sglang_no_cluster_barrier));
  // Reading the phase before the wait is safe as the first call, and breaks behind an
  // all-reduce on the plane.
  EXPECT_FALSE(killed(calls({{K::sglang_fused, 2}}), Mutant::sglang_epoch_before_wait));
  EXPECT_TRUE(killed(fused_after_push, Mutant::sglang_epoch_before_wait));
  // One phase: a single call has no next call to collide with.
  EXPECT_FALSE(killed(calls({{K::sglang_push1, 4}}), Mutant::sglang_one_phase));
  EXPECT_TRUE(killed(generic, Mutant::sglang_one_phase));
}

// sglang#31117: two streams issuing on one communicator. The correct protocol breaks (two
// calls in flight read the same phase); the minimised counterexample keeps both streams and
// replays from its file; one stream is clean on the same sequence.
TEST(SimSglangStreams, TwoStreamsOnOneCommunicatorBreakTheCorrectProtocol) {
  SimConfig two = default_config(kSglang);
  two.streams = 2;
  const auto found =
      search_with(two, profile("sm90-nvlink"), Mutant::none, SchedulerKind::random, 2000);
  ASSERT_TRUE(found.counterexample) << "two streams on one plane passed";
  Counterexample cx =
      make_counterexample(two, profile("sm90-nvlink"), Mutant::none, SchedulerKind::random, found);
  cx = minimise(cx);
  EXPECT_EQ(cx.config.streams, 2);
  const Counterexample loaded = counterexample_from_json(to_json(cx));
  EXPECT_EQ(loaded.config.streams, 2);
  EXPECT_TRUE(replay(loaded).reproduced);
  const auto one = search_with(default_config(kSglang), profile("sm90-nvlink"), Mutant::none,
                               SchedulerKind::random, 500);
  EXPECT_FALSE(one.counterexample);
  // The other models keep one stream.
  SimConfig vllm = default_config(SimProtocol::vllm);
  vllm.streams = 2;
  EXPECT_NE(validate(vllm, profile("sm90-nvlink")).find("SGLang model only"), std::string::npos);
}

TEST(SimSglangCheckers, EachInvariantCatchesItsNegativeControl) {
  const SimConfig config = calls({{K::sglang_push1, 4}, {K::sglang_fused, 1}});
  testing::expect_each_invariant_catches<SglangModel>(
      config, profile("sm90-nvlink"),
      {
          {"invariant S1", [](SglangModel& m) { m.poke_counter(1, 1, 1u); }},
          {"invariant S2", [](SglangModel& m) { m.poke(0, m.slot_offset(1, 1, 0), 5u); }},
          {"invariant S3", [](SglangModel& m) { m.poke_outputs(1, 0, 3, 2); }},
          {"invariant S3", [](SglangModel& m) { m.poke_outputs(0, 1, 1, 0); }},
      });
}

TEST(SimSglangConfig, CallsParseFormatAndStayInOneModel) {
  std::vector<CallSpec> parsed;
  ASSERT_TRUE(parse_calls("sp4,st2,sf1", parsed));
  EXPECT_EQ(parsed, (std::vector<CallSpec>{
                        {K::sglang_push1, 4}, {K::sglang_push2, 2}, {K::sglang_fused, 1}}));
  EXPECT_EQ(format_calls(parsed), "sp4,st2,sf1");
  EXPECT_EQ(protocol_of(calls(parsed)), kSglang);
  EXPECT_NE(validate(calls({{K::sglang_push1, 2}, {K::vllm_1stage, 2}}), profile("sm90-nvlink"))
                .find("the calls of one protocol"),
            std::string::npos);
  // A fused call needs a phase counter (a block of the plane) per token.
  EXPECT_NE(validate(calls({{K::sglang_fused, 3}}), profile("sm90-nvlink")).find("phase counter"),
            std::string::npos);
  EXPECT_THROW(SglangModel(default_config(kSglang), profile("sm90-nvlink"), Mutant::two_buffers),
               std::invalid_argument);
  EXPECT_THROW(SglangModel(default_config(), profile("sm90-nvlink"), Mutant::none),
               std::invalid_argument);
  EXPECT_EQ(mutant_protocol(Mutant::sglang_no_bumper), kSglang);
  EXPECT_EQ(std::string(protocol_name(kSglang)), "sglang");
}

}  // namespace
}  // namespace fusioncheck::sim
