// The model of FlashInfer's MNNVL Lamport allreduce: clean at 72 ranks on the rack profiles
// and in small shapes; each mutant killed at 72 ranks and, minimised, replayable; each needs
// what it breaks; each invariant caught on its negative control; the configuration rules; the
// trace of a 72-rank counterexample names only the ranks involved.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "fusioncheck/sim/kill_table.hpp"
#include "fusioncheck/sim/mnnvl_model.hpp"
#include "sim_test_support.hpp"

namespace fusioncheck::sim {
namespace {

using testing::profile;
using testing::search_with;

constexpr SimProtocol kMnnvl = SimProtocol::mnnvl;
using K = CallKind;

SimConfig calls(std::vector<CallSpec> list, int ranks = 2) {
  SimConfig c = default_config(kMnnvl);
  c.calls = std::move(list);
  c.ranks = ranks;
  return c;
}

class MnnvlRackProfile : public ::testing::TestWithParam<int> {
 protected:
  const Profile& p() const { return kRackProfiles[static_cast<std::size_t>(GetParam())]; }
};
INSTANTIATE_TEST_SUITE_P(SimMnnvl, MnnvlRackProfile,
                         ::testing::Range(0, static_cast<int>(kRackProfiles.size())),
                         [](const auto& info) {
                           return testing::test_name(
                               kRackProfiles[static_cast<std::size_t>(info.param)].name);
                         });

TEST_P(MnnvlRackProfile, CorrectProtocolIsCleanAtSeventyTwoRanks) {
  ASSERT_EQ(default_config(kMnnvl).ranks, 72);
  for (auto [scheduler, budget] : {std::pair{SchedulerKind::random, 40u},
                                   {SchedulerKind::held_rank, 40u},
                                   {SchedulerKind::pct, 2u}}) {
    const auto result = search_with(default_config(kMnnvl), p(), Mutant::none, scheduler, budget);
    ASSERT_FALSE(result.counterexample) << result.counterexample->violation->text;
    EXPECT_EQ(result.executions, budget);
    // Every rank reads every rank's payload of every one-shot token: 72^2 words and more.
    EXPECT_GT(result.memory_events, budget * 72u * 72u);
  }
}

TEST_P(MnnvlRackProfile, CorrectProtocolIsCleanInSmallShapes) {
  std::vector<SimConfig> shapes = {
      calls({{K::mnnvl_twoshot, 2}, {K::mnnvl_oneshot, 2}, {K::mnnvl_twoshot, 1}}, 3),
      calls({{K::mnnvl_oneshot, 1}, {K::mnnvl_twoshot, 2}, {K::mnnvl_twoshot, 2}}, 4)};
  SimConfig wide = calls({{K::mnnvl_oneshot, 3},
                          {K::mnnvl_twoshot, 3},
                          {K::mnnvl_oneshot, 1},
                          {K::mnnvl_twoshot, 1},
                          {K::mnnvl_oneshot, 2}},
                         3);
  wide.blocks = 3;
  wide.vectors_per_block = 2;
  shapes.push_back(wide);
  SimConfig graph = calls({{K::mnnvl_oneshot, 2}, {K::mnnvl_twoshot, 1}});
  graph.graph_replays = 4;
  shapes.push_back(graph);
  for (const SimConfig& c : shapes)
    for (auto scheduler : {SchedulerKind::random, SchedulerKind::held_rank}) {
      const auto result = search_with(c, p(), Mutant::none, scheduler, 300);
      ASSERT_FALSE(result.counterexample)
          << format_calls(c.calls) << ": " << result.counterexample->violation->text;
    }
  SearchOptions exhaustive;
  exhaustive.scheduler = SchedulerKind::exhaustive;
  exhaustive.deviation_bound = 1;  // 2 in docs/sim.md's figures
  const auto tiny = search(tiny_config(kMnnvl), p(), Mutant::none, exhaustive);
  EXPECT_FALSE(tiny.counterexample);
  EXPECT_TRUE(tiny.complete);
}

std::vector<Mutant> mnnvl_mutants() { return testing::mutants_of(kMnnvl); }

class MnnvlMutant : public ::testing::TestWithParam<Mutant> {};
INSTANTIATE_TEST_SUITE_P(SimMnnvl, MnnvlMutant, ::testing::ValuesIn(mnnvl_mutants()),
                         [](const auto& info) {
                           return testing::test_name(protocol::mutant_id(info.param));
                         });

// At 72 ranks random schedules reach it (docs/sim_kill_table.md: every scheduler, both
// profiles); minimised, it replays from its file.
TEST_P(MnnvlMutant, IsKilledAtSeventyTwoRanksWithAReplayableMinimalCounterexample) {
  SearchOptions options;
  options.budget = 500;
  options.time_limit_s = 60;
  const auto result = search(default_config(kMnnvl), profile("nvl72"), GetParam(), options);
  ASSERT_TRUE(result.counterexample) << protocol::mutant_id(GetParam()) << " survives";
  const Counterexample found = make_counterexample(default_config(kMnnvl), profile("nvl72"),
                                                   GetParam(), SchedulerKind::random, result);
  const Counterexample minimal = minimise(found);
  EXPECT_EQ(protocol_of(minimal.config), kMnnvl);
  EXPECT_LE(minimal.config.ranks, found.config.ranks);
  const Replay again = replay(counterexample_from_json(to_json(minimal)));
  EXPECT_TRUE(again.reproduced) << minimal.violation;
  EXPECT_FALSE(again.trace.empty());
  KillRow row;
  row.mutant = GetParam();
  row.protocol = kMnnvl;
  EXPECT_EQ(row_label(row), std::string(protocol::mutant_id(GetParam())) + " (MNNVL)");
}

Counterexample minimal_on_tiny(Mutant m) {
  const SimConfig tiny = provoking_tiny_config(m, kMnnvl);
  const auto result = search_with(tiny, profile("nvl72"), m, SchedulerKind::random, 20000);
  EXPECT_TRUE(result.counterexample) << protocol::mutant_id(m);
  if (!result.counterexample) return {};
  return minimise(make_counterexample(tiny, profile("nvl72"), m, SchedulerKind::random, result));
}

TEST(SimMnnvlMutants, EachKillsTheWayItsClassDoes) {
  struct Expect {
    Mutant mutant;
    ViolationKind kind;
    const char* text;
  };
  const Expect expects[] = {
      // a peer a call ahead stores into the buffer a slower rank clears: it polls for ever
      {Mutant::mnnvl_two_buffers, ViolationKind::deadlock, "polls"},
      // a vector read while its second word is still the sentinel
      {Mutant::mnnvl_sentinel_first_word, ViolationKind::wrong_value, "-0 (the sentinel)"},
      // a -0 payload looks like one that never arrived
      {Mutant::mnnvl_no_sanitize, ViolationKind::deadlock, "polls"},
      // the last call's buffer never cleared: three calls on, its payload reads as arrived
      {Mutant::mnnvl_clear_current, ViolationKind::wrong_value, "call 0 payload"},
      // a smaller call leaves a larger one's tail in a buffer the next call takes
      {Mutant::mnnvl_clear_size_current, ViolationKind::invariant, "invariant M2"},
      {Mutant::mnnvl_clear_through_multicast, ViolationKind::deadlock, "polls"},
      // a block arriving after the flags rotated leaves the counter for the next call
      {Mutant::mnnvl_no_arrival_wait, ViolationKind::invariant, "arrival counter holds 1"},
      // the previous call's buffer index: this call's stores land where the last call's are
      {Mutant::mnnvl_flags_before_wait, ViolationKind::wrong_value, "instead of call"},
  };
  ASSERT_EQ(std::size(expects), mnnvl_mutants().size());
  for (const Expect& e : expects) {
    const Counterexample cx = minimal_on_tiny(e.mutant);
    EXPECT_EQ(cx.kind, e.kind) << protocol::mutant_id(e.mutant) << ": " << cx.violation;
    EXPECT_NE(cx.violation.find(e.text), std::string::npos)
        << protocol::mutant_id(e.mutant) << ": " << cx.violation;
  }
}

// Each mutant is the correct protocol where what it breaks is absent: two calls leave no call
// for a peer to be ahead in, one block per call needs no arrival count, one element per vector
// cannot land in part, the same call size every time leaves no tail to clear.
TEST(SimMnnvlMutants, EachNeedsWhatItBreaks) {
  const auto killed = [](const SimConfig& c, Mutant m) {
    for (auto scheduler : {SchedulerKind::random, SchedulerKind::held_rank})
      if (search_with(c, profile("nvl72"), m, scheduler, 3000).counterexample) return true;
    return false;
  };
  const SimConfig two_calls = calls({{K::mnnvl_oneshot, 1}, {K::mnnvl_oneshot, 1}}, 3);
  const SimConfig three_calls =
      calls({{K::mnnvl_oneshot, 1}, {K::mnnvl_oneshot, 1}, {K::mnnvl_oneshot, 1}}, 3);
  EXPECT_FALSE(killed(two_calls, Mutant::mnnvl_two_buffers));
  EXPECT_TRUE(killed(three_calls, Mutant::mnnvl_two_buffers));
  EXPECT_FALSE(killed(three_calls, Mutant::mnnvl_no_arrival_wait));
  EXPECT_TRUE(
      killed(calls({{K::mnnvl_oneshot, 2}, {K::mnnvl_oneshot, 2}}), Mutant::mnnvl_no_arrival_wait));
  SimConfig one_elem = three_calls;
  one_elem.elems_per_vector = 1;
  EXPECT_FALSE(killed(one_elem, Mutant::mnnvl_sentinel_first_word));
  EXPECT_TRUE(killed(three_calls, Mutant::mnnvl_sentinel_first_word));
  EXPECT_FALSE(killed(three_calls, Mutant::mnnvl_clear_size_current));
  EXPECT_TRUE(killed(calls({{K::mnnvl_oneshot, 2},
                            {K::mnnvl_oneshot, 1},
                            {K::mnnvl_oneshot, 1},
                            {K::mnnvl_oneshot, 1}}),
                     Mutant::mnnvl_clear_size_current));
  // Clearing through the multicast object harms only a peer still in the previous call.
  EXPECT_FALSE(killed(calls({{K::mnnvl_oneshot, 1}}), Mutant::mnnvl_clear_through_multicast));
}

TEST(SimMnnvlCheckers, EachInvariantCatchesItsNegativeControl) {
  const SimConfig config = calls({{K::mnnvl_oneshot, 2}, {K::mnnvl_twoshot, 2}}, 3);
  // After two calls: buffer 1 is dirty (the two-shot call's), 0 and 2 are clear.
  testing::expect_each_invariant_catches<MnnvlModel>(
      config, profile("nvl72"),
      {
          {"invariant M1", [](MnnvlModel& m) { m.flags_of(2).arrivals = 1; }},
          {"invariant M1", [](MnnvlModel& m) { m.flags_of(1).current = 0; }},
          {"invariant M2", [](MnnvlModel& m) { m.poke(1, m.word_offset(0, 0, 1, 3, 0), 7u); }},
          {"invariant M2", [](MnnvlModel& m) { m.poke(0, m.word_offset(2, 1, 2, 0, 1), 0u); }},
          {"invariant M3", [](MnnvlModel& m) { m.poke(2, m.word_offset(1, 1, 2, 1, 0), 7u); }},
          {"invariant M3",
           [](MnnvlModel& m) {  // a word the last call never wrote
             m.poke(0, m.word_offset(1, 0, 2, 5, 1), 0u);
           }},
      });
}

TEST(SimMnnvlConfig, CallsProfilesAndSizes) {
  std::vector<CallSpec> parsed;
  ASSERT_TRUE(parse_calls("mo2,mt1", parsed));
  EXPECT_EQ(parsed, (std::vector<CallSpec>{{K::mnnvl_oneshot, 2}, {K::mnnvl_twoshot, 1}}));
  EXPECT_EQ(format_calls(parsed), "mo2,mt1");
  EXPECT_EQ(protocol_of(calls(parsed)), kMnnvl);
  EXPECT_EQ(std::string(protocol_name(kMnnvl)), "mnnvl");
  EXPECT_EQ(profiles_of(kMnnvl).size(), kRackProfiles.size());
  EXPECT_EQ(profiles_of(SimProtocol::pcie).size(), kProfiles.size());
  const SimConfig two = calls({{K::mnnvl_oneshot, 2}});
  EXPECT_EQ(validate(calls({{K::mnnvl_oneshot, 2}}, 72), profile("nvl72-mnnvl")), "");
  EXPECT_EQ(validate(two, profile("sm90-nvlink")), "");  // NVSwitch multicast, 2 ranks
  EXPECT_NE(validate(two, profile("sm120-pcie")).find("multicast"), std::string::npos);
  EXPECT_NE(validate(calls({{K::mnnvl_oneshot, 1}}, 73), profile("nvl72")).find("[2, 72]"),
            std::string::npos);
  EXPECT_NE(validate(calls({{K::mnnvl_oneshot, 1}}, 20), profile("sm90-nvlink")).find("[2, 16]"),
            std::string::npos);
  SimConfig wide = calls({{K::mnnvl_oneshot, 3}});
  wide.vectors_per_block = 2;  // 2 blocks x 2 vectors would hold 3 vectors, not 3 tokens
  EXPECT_NE(validate(wide, profile("nvl72")).find("a block per token"), std::string::npos);
  // The other models stay single-node.
  SimConfig lamport = default_config();
  lamport.ranks = 20;
  EXPECT_NE(validate(lamport, profile("nvl72")).find("[2, 16]"), std::string::npos);
  EXPECT_THROW(MnnvlModel(default_config(kMnnvl), profile("nvl72"), Mutant::two_buffers),
               std::invalid_argument);
  EXPECT_THROW(MnnvlModel(default_config(), profile("nvl72"), Mutant::none), std::invalid_argument);
  EXPECT_EQ(mutant_protocol(Mutant::mnnvl_two_buffers), kMnnvl);
}

// An unminimised 72-rank counterexample prints only the ranks its violation names.
TEST(SimMnnvlReport, TraceAtRackScaleNamesOnlyTheRanksInvolved) {
  const auto result = search_with(default_config(kMnnvl), profile("nvl72"),
                                  Mutant::mnnvl_flags_before_wait, SchedulerKind::random, 100);
  ASSERT_TRUE(result.counterexample);
  const Counterexample cx =
      make_counterexample(default_config(kMnnvl), profile("nvl72"), Mutant::mnnvl_flags_before_wait,
                          SchedulerKind::random, result);
  const Replay again = replay(cx);
  ASSERT_TRUE(again.reproduced);
  const std::string text = format_counterexample(cx, again.trace, "");
  std::smatch header;
  ASSERT_TRUE(std::regex_search(text, header, std::regex("trace of ranks ([0-9, ]+):")))
      << text.substr(0, 2000);
  std::set<int> involved;
  const std::string listed = header.str(1);
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(listed.begin(), listed.end(), number); it != std::sregex_iterator();
       ++it)
    involved.insert(std::stoi(it->str()));
  EXPECT_LT(involved.size(), 8u);
  const std::regex rank(R"(\brank (\d+))");
  const std::string trace = header.suffix().str();
  for (std::sregex_iterator it(trace.begin(), trace.end(), rank); it != std::sregex_iterator();
       ++it)
    ASSERT_TRUE(involved.contains(std::stoi((*it)[1].str()))) << it->str();
  EXPECT_NE(text.find("steps of other ranks left out"), std::string::npos);
  EXPECT_EQ(text.find("deviations (step:choice)"), std::string::npos);  // too many to list
  // A step stays only when every rank it names is involved.
  EXPECT_EQ(trace_of_ranks({"1  rank 0 a", "2  rank 5 b", "3  rank 0 -> rank 5"}, {0}),
            (std::vector<std::string>{"(2 steps of other ranks left out)", "1  rank 0 a"}));
}

}  // namespace
}  // namespace fusioncheck::sim
