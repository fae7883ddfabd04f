// RapidCheck properties over generated configurations: the correct protocol is clean on
// any shape and schedule, and every run replays exactly from its deviation list.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "sim_test_support.hpp"

namespace fusioncheck::sim {
namespace {

// Shapes up to 4 ranks x 3 blocks x 2 vectors x 4 elements, 1..6 calls of either kind.
rc::Gen<SimConfig> gen_config() {
  return rc::gen::exec([] {
    SimConfig c;
    c.ranks = *rc::gen::inRange(2, 5);
    c.blocks = *rc::gen::inRange(1, 4);
    c.vectors_per_block = *rc::gen::inRange(1, 3);
    c.elems_per_vector = *rc::gen::inRange(1, 5);
    const int calls = *rc::gen::inRange(1, 7);
    for (int i = 0; i < calls; ++i) {
      CallSpec spec;
      spec.kind = *rc::gen::element(CallKind::one_shot, CallKind::two_shot);
      spec.vectors = *rc::gen::inRange(1, c.blocks * c.vectors_per_block + 1);
      c.calls.push_back(spec);
    }
    c.graph_replays = *rc::gen::inRange(1, 3);
    c.late_trigger = *rc::gen::arbitrary<bool>();
    return c;
  });
}

RC_GTEST_PROP(SimProperties, CorrectProtocolIsCleanOnAnyShapeAndSchedule, ()) {
  const SimConfig config = *gen_config();
  const Profile& p = kProfiles[*rc::gen::inRange<std::size_t>(0, kProfiles.size())];
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  Model model(config, p, Mutant::none);
  const RunResult random = run_random(model, seed);
  RC_ASSERT(!random.violation.has_value());
  const RunResult pct = run_pct(model, seed, 3, random.steps);
  RC_ASSERT(!pct.violation.has_value());
  // A rank held back while the others run ahead is a schedule the protocol must survive too.
  const RunResult held =
      run_held_rank(model, seed, config.ranks, static_cast<int>(expanded_calls(config).size()));
  RC_ASSERT(!held.violation.has_value());
  RC_ASSERT(held.hold.rfind("rank ", 0) == 0);
}

RC_GTEST_PROP(SimProperties, HeldRankRunsReplayFromTheirDeviations, ()) {
  const SimConfig config = *gen_config();
  const Profile& p = kProfiles[*rc::gen::inRange<std::size_t>(0, kProfiles.size())];
  const auto mutants = testing::sim_mutants();
  const Mutant mutant = mutants[*rc::gen::inRange<std::size_t>(0, mutants.size())];
  Model model(config, p, mutant);
  const RunResult first = run_held_rank(model, *rc::gen::arbitrary<std::uint64_t>(), config.ranks,
                                        static_cast<int>(expanded_calls(config).size()));
  const RunResult again = run_replay(model, first.deviations);
  RC_ASSERT(again.steps == first.steps);
  RC_ASSERT(again.violation.has_value() == first.violation.has_value());
  if (first.violation) RC_ASSERT(again.violation->text == first.violation->text);
}

RC_GTEST_PROP(SimProperties, EveryRunReplaysFromItsDeviations, ()) {
  const SimConfig config = *gen_config();
  const Profile& p = kProfiles[*rc::gen::inRange<std::size_t>(0, kProfiles.size())];
  const auto mutants = testing::sim_mutants();
  const Mutant mutant = mutants[*rc::gen::inRange<std::size_t>(0, mutants.size())];
  Model model(config, p, mutant);
  const RunResult first = run_random(model, *rc::gen::arbitrary<std::uint64_t>());
  const RunResult again = run_replay(model, first.deviations);
  RC_ASSERT(again.steps == first.steps);
  RC_ASSERT(again.memory_events == first.memory_events);
  RC_ASSERT(again.violation.has_value() == first.violation.has_value());
  if (first.violation) RC_ASSERT(again.violation->text == first.violation->text);
}

}  // namespace
}  // namespace fusioncheck::sim
