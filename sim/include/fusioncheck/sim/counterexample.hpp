#pragma once
// A counterexample is a value: profile + mutant + configuration + seed + deviation list.
// It prints as a readable trace ending at the violation, is written as JSON, replays with
// `fusioncheck sim --replay FILE`, and is minimised (smaller configuration, then fewer
// schedule deviations by delta debugging).
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "fusioncheck/sim/scheduler.hpp"

namespace fusioncheck::sim {

struct Counterexample {
  std::string profile;
  Mutant mutant = Mutant::none;
  SimConfig config;
  SchedulerKind scheduler = SchedulerKind::random;
  std::uint64_t seed = 0;
  std::vector<Deviation> deviations;
  std::string hold;  // held-rank: which rank waited where ("" for the other schedulers)
  ViolationKind kind = ViolationKind::wrong_value;
  std::string violation;
  std::uint64_t steps = 0;
};

// Builds the counterexample of a failing search result.
Counterexample make_counterexample(const SimConfig& config, const Profile& profile, Mutant mutant,
                                   SchedulerKind scheduler, const SearchResult& result);

nlohmann::json to_json(const Counterexample& cx);
// Throws std::invalid_argument with a one-line reason on a malformed file.
Counterexample counterexample_from_json(const nlohmann::json& j);
void write_counterexample(const Counterexample& cx, const std::string& path);
Counterexample read_counterexample(const std::string& path);
std::string counterexample_file_name(const Counterexample& cx);

struct Replay {
  RunResult run;
  std::vector<std::string> trace;
  bool reproduced = false;  // same violation text as recorded
};
Replay replay(const Counterexample& cx);

// Header (what, where, size, replay command) followed by the trace; above this many ranks the
// trace keeps only the steps whose ranks are all named by the violation or the hold.
inline constexpr int kRanksTracedWhole = 8;
// A schedule of more deviations (an unminimised random one) is only counted in the header.
inline constexpr std::size_t kDeviationsShown = 64;
std::vector<std::string> trace_of_ranks(const std::vector<std::string>& trace,
                                        const std::set<int>& ranks);
std::string format_counterexample(const Counterexample& cx, const std::vector<std::string>& trace,
                                  const std::string& file);

struct MinimiseOptions {
  std::uint64_t budget_per_candidate = 300;  // random + PCT schedules per smaller config
  double time_limit_s = 4.0;
};
Counterexample minimise(const Counterexample& cx, const MinimiseOptions& options = {});

// Delta debugging (Zeller's ddmin) over the deviations: a 1-minimal subset that still
// produces a violation of the same kind.
std::vector<Deviation> minimise_deviations(const Counterexample& cx);

}  // namespace fusioncheck::sim
