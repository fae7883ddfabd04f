// The model of FlashInfer's PCIe protocol: clean on every profile and in other shapes, each
// of its mutants killed with a minimised counterexample that replays, each checker caught on
// its negative control, the layout and the configuration rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "fusioncheck/sim/kill_table.hpp"
#include "fusioncheck/sim/pcie_model.hpp"
#include "sim_test_support.hpp"

namespace fusioncheck::sim {
namespace {

using testing::profile;
using testing::run_to_quiescence;
using testing::search_with;

constexpr SimProtocol kPcie = SimProtocol::pcie;

SimConfig calls(std::vector<CallSpec> list, int ranks = 2) {
  SimConfig c = default_config(kPcie);
  c.calls = std::move(list);
  c.ranks = ranks;
  return c;
}

class PcieEveryProfile : public ::testing::TestWithParam<int> {
 protected:
  const Profile& p() const { return kProfiles[static_cast<std::size_t>(GetParam())]; }
};
INSTANTIATE_TEST_SUITE_P(SimPcie, PcieEveryProfile,
                         ::testing::Range(0, static_cast<int>(kProfiles.size())),
                         [](const auto& info) {
                           std::string name(kProfiles[static_cast<std::size_t>(info.param)].name);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(PcieEveryProfile, CorrectProtocolIsCleanUnderRandomAndPct) {
  for (auto scheduler : {SchedulerKind::random, SchedulerKind::pct}) {
    const auto result = search_with(default_config(kPcie), p(), Mutant::none, scheduler, 1500);
    ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
    EXPECT_EQ(result.executions, 1500u);
    EXPECT_GT(result.memory_events, 1500u * 50u);  // the runs did real work
  }
}

TEST_P(PcieEveryProfile, CorrectProtocolIsCleanInOtherShapes) {
  using K = CallKind;
  // The 8-rank mix (barrier kernels in the block region, sentinel kernels in the pack region),
  // three and four ranks, one element per vector, and replays of the sequence as a graph.
  std::vector<SimConfig> shapes = {
      calls({{K::pcie_barrier, 4},
             {K::pcie_flat_rsag, 4},
             {K::pcie_push, 2},
             {K::pcie_barrier, 3},
             {K::pcie_flat_rsag, 2},
             {K::pcie_barrier, 4}}),
      calls({{K::pcie_push, 3}, {K::pcie_rsag, 4}, {K::pcie_rsag, 1}, {K::pcie_push, 4}}, 3),
      calls({{K::pcie_rsag, 4}, {K::pcie_push, 2}, {K::pcie_rsag, 3}}, 4),
  };
  SimConfig one_elem = default_config(kPcie);
  one_elem.elems_per_vector = 1;
  one_elem.graph_replays = 2;
  shapes.push_back(one_elem);
  for (const SimConfig& shape : shapes) {
    const auto result = search_with(shape, p(), Mutant::none, SchedulerKind::random, 300);
    ASSERT_FALSE(result.counterexample)
        << format_calls(shape.calls) << ": " << result.counterexample->violation->text;
  }
}

TEST_P(PcieEveryProfile, TinyConfigurationIsCleanUnderTheExhaustiveSearch) {
  SearchOptions options;
  options.scheduler = SchedulerKind::exhaustive;
  options.deviation_bound = 1;
  options.budget = 100000;
  const auto result = search(tiny_config(kPcie), p(), Mutant::none, options);
  ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
  EXPECT_TRUE(result.complete);
  EXPECT_GT(result.executions, 20u);
}

std::vector<Mutant> pcie_mutants() {
  std::vector<Mutant> out;
  for (const auto& info : protocol::kMutantCatalogue)
    if (in_sim(info.mutant, kPcie)) out.push_back(info.mutant);
  return out;
}

class PcieMutant : public ::testing::TestWithParam<Mutant> {};
INSTANTIATE_TEST_SUITE_P(SimPcie, PcieMutant, ::testing::ValuesIn(pcie_mutants()),
                         [](const auto& info) {
                           std::string name(protocol::mutant_id(info.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// On both PCIe profiles, as the kill table searches: killed, minimised, replayable.
TEST_P(PcieMutant, IsKilledOnBothPcieProfilesWithAReplayableMinimalCounterexample) {
  KillTableOptions options;
  options.random_budget = 4000;
  options.exhaustive_budget = 20000;
  for (const char* name : {"sm90-pcie", "sm120-pcie"}) {
    const KillRow row = kill_row(GetParam(), profile(name), options, kPcie);
    ASSERT_TRUE(row.killed) << protocol::mutant_id(GetParam()) << " survives on " << name;
    EXPECT_EQ(row.protocol, kPcie);
    EXPECT_EQ(protocol_of(row.minimal.config), kPcie);
    const Replay again = replay(counterexample_from_json(to_json(row.minimal)));
    EXPECT_TRUE(again.reproduced) << row.minimal.violation;
    EXPECT_FALSE(again.trace.empty());
  }
}

TEST(SimPcieMutants, EachKillsTheWayItsClassDoes) {
  const auto kind_of = [](Mutant m) {
    KillTableOptions options;
    options.random_budget = 4000;
    return kill_row(m, profile("sm90-pcie"), options, kPcie).minimal.kind;
  };
  // A sign-blind sentinel test, or an unsanitised +0, waits for ever.
  EXPECT_EQ(kind_of(Mutant::float_sentinel), ViolationKind::deadlock);
  EXPECT_EQ(kind_of(Mutant::pcie_no_sanitise), ViolationKind::deadlock);
  // Leftovers read as data: the stale value is named with its tag.
  EXPECT_EQ(kind_of(Mutant::pcie_reset_other_half), ViolationKind::wrong_value);
  EXPECT_EQ(kind_of(Mutant::pcie_sentinel_on_barrier_region), ViolationKind::wrong_value);
  // The counter that is not reset shows at quiescence first (P2).
  EXPECT_EQ(kind_of(Mutant::counter_not_reset), ViolationKind::invariant);
}

TEST(SimPcieMutants, PerBlockEpochNeedsAGridChangeBetweenCallsOfOneRegion) {
  using K = CallKind;
  const auto killed = [](const SimConfig& c) {
    return search_with(c, profile("sm90-nvlink"), Mutant::pcie_per_block_epoch,
                       SchedulerKind::random, 3000)
        .counterexample.has_value();
  };
  // Same grid every call: every block has run as often as every other, no disagreement.
  EXPECT_FALSE(killed(calls({{K::pcie_push, 4}, {K::pcie_push, 4}, {K::pcie_push, 3}})));
  // 4 vectors (2 blocks), 2 (1 block), 4 again: block 1 is a call behind block 0.
  EXPECT_TRUE(killed(calls({{K::pcie_push, 4}, {K::pcie_push, 2}, {K::pcie_push, 4}})));
}

TEST(SimPcieCheckers, EachInvariantCatchesItsNegativeControl) {
  using K = CallKind;
  const SimConfig config = calls({{K::pcie_barrier, 4}, {K::pcie_push, 4}, {K::pcie_flat_rsag, 2}});
  struct Corruption {
    const char* invariant;
    std::function<void(PcieModel&)> apply;
  };
  const std::vector<Corruption> corruptions = {
      {"invariant P1", [](PcieModel& m) { m.poke(1, m.epoch_offset(PcieModel::kPackRegion), 1u); }},
      {"invariant P2",
       [](PcieModel& m) { m.poke(0, m.arrival_offset(PcieModel::kPackRegion), 1u); }},
      {"invariant P3",
       [](PcieModel& m) { m.poke(1, m.scratch_offset(PcieModel::kPackRegion, 1, 0, 3, 4), 7u); }},
      {"invariant P4", [](PcieModel& m) { m.poke(0, m.generation_offset(1), 5u); }},
  };
  {
    PcieModel clean(config, profile("sm90-pcie"), Mutant::none);
    run_to_quiescence(clean);
    clean.finish();
    ASSERT_FALSE(clean.violation()) << clean.violation()->text;
  }
  for (const Corruption& c : corruptions) {
    PcieModel model(config, profile("sm90-pcie"), Mutant::none);
    run_to_quiescence(model);
    c.apply(model);
    model.finish();
    ASSERT_TRUE(model.violation()) << c.invariant;
    EXPECT_EQ(model.violation()->kind, ViolationKind::invariant);
    EXPECT_NE(model.violation()->text.find(c.invariant), std::string::npos)
        << model.violation()->text;
  }
}

TEST(SimPcieCheckers, StepBoundFiresWhenTheBoundIsExceeded) {
  PcieModel model(default_config(kPcie), profile("sm120-pcie"), Mutant::none);
  model.set_step_bound(20);
  run_to_quiescence(model);
  ASSERT_TRUE(model.violation());
  EXPECT_EQ(model.violation()->kind, ViolationKind::step_bound);
}

TEST(SimPcieLayout, HalvesAndSlotsAreDisjointAndTheMutantsMoveThem) {
  const SimConfig config = default_config(kPcie);
  const PcieModel model(config, profile("sm90-pcie"), Mutant::none);
  std::vector<std::size_t> seen;
  for (int region : {PcieModel::kBlockRegion, PcieModel::kPackRegion})
    for (int half = 0; half < 2; ++half)
      for (int slot = 0; slot < config.ranks; ++slot)
        for (int idx = 0; idx < 4; ++idx)
          seen.push_back(model.scratch_offset(region, half, slot, idx, 1));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "two vectors share words";
  EXPECT_LT(model.arrival_offset(PcieModel::kPackRegion), model.scratch_offset(0, 0, 0, 0, 4));
  // Halves from the call's size: a 1-vector call's half 1 lands inside the 4-vector layout's
  // half 0.
  const PcieModel tp2(config, profile("sm90-pcie"), Mutant::pcie_tp2_half_from_payload);
  EXPECT_LT(tp2.scratch_offset(PcieModel::kPackRegion, 1, 0, 0, 1),
            tp2.scratch_offset(PcieModel::kPackRegion, 0, 1, 0, 4));
  const PcieModel aliased(config, profile("sm90-pcie"), Mutant::pcie_state_in_scratch);
  EXPECT_EQ(aliased.epoch_offset(PcieModel::kPackRegion),
            aliased.scratch_offset(PcieModel::kPackRegion, 0, 0, 0, 4));
  const PcieModel moved(config, profile("sm90-pcie"), Mutant::pcie_sentinel_on_barrier_region);
  EXPECT_EQ(model.region_of(CallKind::pcie_flat_rsag), PcieModel::kPackRegion);
  EXPECT_EQ(moved.region_of(CallKind::pcie_flat_rsag), PcieModel::kBlockRegion);
}

TEST(SimPcieConfig, CallsParseAndTheRulesHold) {
  std::vector<CallSpec> list;
  ASSERT_TRUE(parse_calls("pp4,rs2,rf1,pb3", list));
  EXPECT_EQ(format_calls(list), "pp4,rs2,rf1,pb3");
  EXPECT_FALSE(parse_calls("px4", list));
  const Profile& p = profile("sm120-pcie");
  EXPECT_EQ(validate(default_config(kPcie), p), "");
  EXPECT_EQ(protocol_of(default_config(kPcie)), kPcie);
  EXPECT_EQ(protocol_of(default_config()), SimProtocol::lamport);
  using K = CallKind;
  EXPECT_NE(validate(calls({{K::pcie_push, 2}, {K::one_shot, 2}}), p), "");
  // A region holds one protocol family: rs and pb both stage in the block region.
  EXPECT_NE(validate(calls({{K::pcie_rsag, 2}, {K::pcie_barrier, 2}}), p), "");
  EXPECT_EQ(validate(calls({{K::pcie_flat_rsag, 2}, {K::pcie_barrier, 2}}), p), "");
  // Each model refuses the other's calls and mutants.
  EXPECT_THROW(Model(default_config(kPcie), p, Mutant::none), std::invalid_argument);
  EXPECT_THROW(PcieModel(default_config(), p, Mutant::none), std::invalid_argument);
  EXPECT_THROW(PcieModel(default_config(kPcie), p, Mutant::two_buffers), std::invalid_argument);
  EXPECT_THROW(Model(default_config(), p, Mutant::pcie_no_double_buffer), std::invalid_argument);
  EXPECT_EQ(mutant_protocol(Mutant::pcie_no_double_buffer), kPcie);
  EXPECT_EQ(mutant_protocol(Mutant::float_sentinel), SimProtocol::lamport);
  EXPECT_EQ(mutant_protocol(Mutant::float_sentinel, kPcie), kPcie);
}

TEST(SimPcieTable, RowsOfBothModelsAreLabelled) {
  KillTableOptions options;
  options.random_budget = 50;
  options.exhaustive_budget = 50;
  const KillRow lamport = kill_row(Mutant::float_sentinel, profile("sm90-pcie"), options);
  const KillRow pcie = kill_row(Mutant::float_sentinel, profile("sm90-pcie"), options, kPcie);
  EXPECT_EQ(row_label(lamport), "float-sentinel");
  EXPECT_EQ(row_label(pcie), "float-sentinel (PCIe)");
  const std::string table = format_kill_table({lamport, pcie});
  EXPECT_NE(table.find("| float-sentinel (PCIe) |"), std::string::npos) << table;
}

}  // namespace
}  // namespace fusioncheck::sim
