#pragma once
// Shared helpers of the sim tests: searches with a given budget, and the mutant list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fusioncheck/sim/counterexample.hpp"
#include "fusioncheck/sim/kill_table.hpp"
#include <nlohmann/json.hpp>

namespace fusioncheck::sim::testing {

inline SearchResult search_with(const SimConfig& config, const Profile& profile, Mutant mutant,
                                SchedulerKind scheduler, std::uint64_t budget,
                                std::uint64_t seed = 1) {
  SearchOptions options;
  options.scheduler = scheduler;
  options.budget = budget;
  options.seed = seed;
  return search(config, profile, mutant, options);
}

// Random, then PCT, then exhaustive on the tiny configuration (the mutant's provoking
// ones): the first that finds one.
inline std::optional<Counterexample> find_counterexample(Mutant mutant, const Profile& profile,
                                                         std::uint64_t budget) {
  for (auto scheduler : {SchedulerKind::random, SchedulerKind::pct, SchedulerKind::exhaustive}) {
    const SimConfig config = scheduler == SchedulerKind::exhaustive ? provoking_tiny_config(mutant)
                                                                    : provoking_config(mutant);
    const auto result = search_with(config, profile, mutant, scheduler, budget);
    if (result.counterexample)
      return make_counterexample(config, profile, mutant, scheduler, result);
  }
  return std::nullopt;
}

inline std::vector<Mutant> sim_mutants() {
  std::vector<Mutant> out;
  for (const auto& info : protocol::kMutantCatalogue)
    if (info.layers & protocol::kInSim) out.push_back(info.mutant);
  return out;
}

inline const Profile& profile(const char* name) { return *find_profile(name); }

// The catalogue's mutants that the sim's model of `protocol` builds.
inline std::vector<Mutant> mutants_of(SimProtocol protocol) {
  std::vector<Mutant> out;
  for (const auto& info : protocol::kMutantCatalogue)
    if (in_sim(info.mutant, protocol)) out.push_back(info.mutant);
  return out;
}

// A parameterised test's name from an id or a profile name ("two-buffers" -> "two_buffers").
inline std::string test_name(std::string_view id) {
  std::string name(id);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// Golden files live in property_tests/sim/golden. With FUSIONCHECK_UPDATE_GOLDEN=1 the
// tests rewrite them instead of comparing (review the diff before committing).
inline void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(FUSIONCHECK_SIM_GOLDEN_DIR) + "/" + name;
  const char* update = std::getenv("FUSIONCHECK_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << actual;
    std::cout << "updated " << path << "\n";
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path
                  << " (run with FUSIONCHECK_UPDATE_GOLDEN=1 to create it)";
  std::stringstream buffer;
  buffer << in.rdbuf();
  EXPECT_EQ(buffer.str(), actual) << "golden file " << path << " differs";
}

// Drives the default schedule (the first enabled event each step) to quiescence without
// finishing, so a test can corrupt the state that the quiescence checks read.
inline void run_to_quiescence(ProtocolModel& model) {
  model.reset();
  for (int guard = 0; guard < 1'000'000; ++guard) {
    const auto events = model.enabled();
    if (events.empty()) return;
    model.execute(events.front());
  }
  FAIL() << "no quiescence";
}

// One invariant's negative control: a corruption of the state at quiescence, and the invariant
// ("invariant S2") that must name it.
template <class Model> struct Corruption {
  const char* invariant;
  std::function<void(Model&)> apply;
};

// The configuration runs clean to quiescence; then, on a fresh model each, every corruption
// must be an invariant violation naming its invariant.
template <class Model>
void expect_each_invariant_catches(const SimConfig& config, const Profile& profile,
                                   const std::vector<Corruption<Model>>& corruptions) {
  {
    Model clean(config, profile, Mutant::none);
    run_to_quiescence(clean);
    clean.finish();
    ASSERT_FALSE(clean.violation()) << clean.violation()->text;
  }
  for (const Corruption<Model>& c : corruptions) {
    Model model(config, profile, Mutant::none);
    run_to_quiescence(model);
    c.apply(model);
    model.finish();
    ASSERT_TRUE(model.violation()) << c.invariant << " missed its corruption";
    EXPECT_EQ(model.violation()->kind, ViolationKind::invariant);
    EXPECT_NE(model.violation()->text.find(c.invariant), std::string::npos)
        << model.violation()->text;
  }
}

// As the kill table searches (1,000 random and PCT schedules, then `exhaustive_budget`
// executions of the tiny configuration), on an NVLink and a PCIe profile: the mutant is
// killed in `protocol`'s model, its row is labelled `label`, and the minimised
// counterexample survives JSON and replays.
inline void expect_killed_with_a_replayable_minimum(Mutant mutant, SimProtocol protocol,
                                                    const std::string& label,
                                                    std::uint64_t exhaustive_budget) {
  KillTableOptions options;
  options.random_budget = 1000;
  options.exhaustive_budget = exhaustive_budget;
  for (const char* name : {"sm90-nvlink", "sm120-pcie"}) {
    const KillRow row = kill_row(mutant, profile(name), options, protocol);
    ASSERT_TRUE(row.killed) << protocol::mutant_id(mutant) << " survives on " << name;
    EXPECT_EQ(protocol_of(row.minimal.config), protocol);
    EXPECT_EQ(row_label(row), std::string(protocol::mutant_id(mutant)) + label);
    const Replay again = replay(counterexample_from_json(to_json(row.minimal)));
    EXPECT_TRUE(again.reproduced) << row.minimal.violation;
    EXPECT_FALSE(again.trace.empty());
  }
}

inline std::string exhaustive_counts_header() {
  const SimConfig t = tiny_config();
  return "# profile deviations executions (tiny config: " + format_calls(t.calls) + ", " +
         std::to_string(t.ranks) + " ranks x " + std::to_string(t.blocks) + " blocks x " +
         std::to_string(t.vectors_per_block) + " vector x " + std::to_string(t.elems_per_vector) +
         " elements)\n";
}

}  // namespace fusioncheck::sim::testing
