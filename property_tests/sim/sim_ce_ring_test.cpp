// The model of the copy-engine ring: clean on every profile and in other shapes, each of its
// killable mutants killed with a minimised counterexample that replays, the join and the
// end-of-call rendezvous each covered by the other (the header's own analysis) and needed
// together, each invariant caught on its negative control, the configuration rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "fusioncheck/sim/ce_ring_model.hpp"
#include "fusioncheck/sim/kill_table.hpp"
#include "sim_test_support.hpp"

namespace fusioncheck::sim {
namespace {

using testing::profile;
using testing::search_with;
using testing::test_name;

constexpr SimProtocol kCe = SimProtocol::ce_ring;
using K = CallKind;

SimConfig calls(std::vector<CallSpec> list, int ranks = 4) {
  SimConfig c = default_config(kCe);
  c.calls = std::move(list);
  c.ranks = ranks;
  return c;
}

class CeEveryProfile : public ::testing::TestWithParam<int> {
 protected:
  const Profile& p() const { return kProfiles[static_cast<std::size_t>(GetParam())]; }
};
INSTANTIATE_TEST_SUITE_P(SimCeRing, CeEveryProfile,
                         ::testing::Range(0, static_cast<int>(kProfiles.size())),
                         [](const auto& info) {
                           return test_name(kProfiles[static_cast<std::size_t>(info.param)].name);
                         });

TEST_P(CeEveryProfile, CorrectProtocolIsCleanUnderEveryScheduler) {
  for (auto scheduler : {SchedulerKind::random, SchedulerKind::pct, SchedulerKind::held_rank}) {
    const auto result = search_with(default_config(kCe), p(), Mutant::none, scheduler, 150);
    ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
    EXPECT_EQ(result.executions, 150u);
    EXPECT_GT(result.memory_events, 150u * 100u);  // the runs did real work
  }
}

TEST_P(CeEveryProfile, CorrectProtocolIsCleanInOtherShapes) {
  // Two, three and six ranks, one word per piece, graph replays.
  std::vector<SimConfig> shapes = {calls({{K::ce_flat, 2}, {K::ce_memop, 1}}, 2),
                                   calls({{K::ce_memop, 1}, {K::ce_flat, 3}}, 3),
                                   calls({{K::ce_flat, 1}, {K::ce_memop, 2}}, 6)};
  SimConfig one_word = default_config(kCe);
  one_word.elems_per_vector = 1;
  shapes.push_back(one_word);
  SimConfig graph = calls({{K::ce_memop, 1}, {K::ce_flat, 2}});
  graph.graph_replays = 3;
  shapes.push_back(graph);
  for (const SimConfig& c : shapes) {
    const auto result = search_with(c, p(), Mutant::none, SchedulerKind::random, 60);
    ASSERT_FALSE(result.counterexample)
        << format_calls(c.calls) << ": " << result.counterexample->violation->text;
  }
}

class CeKilledMutant : public ::testing::TestWithParam<Mutant> {};
INSTANTIATE_TEST_SUITE_P(SimCeRing, CeKilledMutant,
                         ::testing::Values(Mutant::ce_copy_before_add,
                                           Mutant::ce_publish_before_copy, Mutant::ce_no_fork,
                                           Mutant::ce_no_join_no_handshake,
                                           Mutant::ce_pieces_differ),
                         [](const auto& info) {
                           return test_name(protocol::mutant_id(info.param));
                         });

// On an NVLink and a PCIe profile, as the kill table searches: killed, minimised, replayable.
TEST_P(CeKilledMutant, IsKilledWithAReplayableMinimalCounterexample) {
  testing::expect_killed_with_a_replayable_minimum(GetParam(), kCe, " (CE ring)", 2000);
}

// The header: the rendezvous is unreachable skew under the copy gating. The model adds that in
// eager mode the join and the rendezvous each cover the other: either alone survives, both
// dropped lose a chunk (the caller's next call overwrites what the copy stream still forwards).
TEST(SimCeRingMutants, TheJoinAndTheRendezvousCoverEachOther) {
  const auto killed = [](Mutant m) {
    return search_with(default_config(kCe), profile("sm90-nvlink"), m, SchedulerKind::random, 1000)
        .counterexample.has_value();
  };
  EXPECT_FALSE(killed(Mutant::ce_no_handshake));
  EXPECT_FALSE(killed(Mutant::ce_no_join));
  EXPECT_TRUE(killed(Mutant::ce_no_join_no_handshake));
  // At three ranks a call's last copy and the next call's first add never share a chunk.
  SimConfig three = default_config(kCe);
  three.ranks = 3;
  EXPECT_FALSE(search_with(three, profile("sm90-nvlink"), Mutant::ce_no_join_no_handshake,
                           SchedulerKind::random, 1000)
                   .counterexample);
}

TEST(SimCeRingMutants, EachKillsTheWayItsClassDoes) {
  const auto minimal = [](Mutant m) {
    KillTableOptions options;
    options.random_budget = 1000;
    return kill_row(m, profile("sm120-pcie"), options, kCe).minimal;
  };
  // Publishing before the copy landed: the peer adds a slot still empty.
  const Counterexample early = minimal(Mutant::ce_publish_before_copy);
  EXPECT_EQ(early.kind, ViolationKind::wrong_value);
  EXPECT_NE(early.violation.find("never written"), std::string::npos) << early.violation;
  // No fork: the first copy reads the input before the producer wrote it.
  const Counterexample no_fork = minimal(Mutant::ce_no_fork);
  EXPECT_EQ(no_fork.kind, ViolationKind::wrong_value);
  // Pieces that differ: other slots, a chunk that never lands or a flag never published.
  const Counterexample pieces = minimal(Mutant::ce_pieces_differ);
  EXPECT_TRUE(pieces.kind == ViolationKind::wrong_value || pieces.kind == ViolationKind::deadlock)
      << pieces.violation;
}

TEST(SimCeRingCheckers, EachInvariantCatchesItsNegativeControl) {
  const SimConfig config = calls({{K::ce_flat, 2}, {K::ce_memop, 1}});
  testing::expect_each_invariant_catches<CeRingModel>(
      config, profile("sm90-nvlink"),
      {
          {"invariant C1", [](CeRingModel& m) { m.poke(1, m.flag_offset(0), 5u); }},
          {"invariant C1",
           [](CeRingModel& m) { m.poke(2, m.flag_offset(m.handshake_slot()), 9u); }},
          {"invariant C2", [](CeRingModel& m) { m.poke(0, m.binary_offset(1), 1u); }},
      });
}

TEST(SimCeRingConfig, CallsParseFormatAndStayInOneModel) {
  std::vector<CallSpec> parsed;
  ASSERT_TRUE(parse_calls("cf2,cm1", parsed));
  EXPECT_EQ(parsed, (std::vector<CallSpec>{{K::ce_flat, 2}, {K::ce_memop, 1}}));
  EXPECT_EQ(format_calls(parsed), "cf2,cm1");
  EXPECT_EQ(protocol_of(calls(parsed)), kCe);
  EXPECT_NE(validate(calls({{K::ce_flat, 2}, {K::sglang_push1, 2}}), profile("sm90-nvlink"))
                .find("the calls of one protocol"),
            std::string::npos);
  EXPECT_NE(validate(calls({{K::ce_flat, 5}}), profile("sm90-nvlink")).find("1 to 4 pieces"),
            std::string::npos);
  EXPECT_THROW(CeRingModel(default_config(kCe), profile("sm90-nvlink"), Mutant::two_buffers),
               std::invalid_argument);
  EXPECT_EQ(mutant_protocol(Mutant::ce_no_fork), kCe);
  EXPECT_EQ(std::string(protocol_name(kCe)), "ce-ring");
}

}  // namespace
}  // namespace fusioncheck::sim
