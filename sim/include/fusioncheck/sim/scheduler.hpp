#pragma once
// Schedulers. A schedule is a value: the list of steps where the choice differs from the
// default (the actor of the previous step goes on; when it cannot, the first enabled event:
// the oldest deliverable store, else the lowest thread). Seeded random and PCT record their choices
// as such deviations, so every run replays exactly from its deviation list alone.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fusioncheck/sim/model.hpp"

namespace fusioncheck::sim {

struct Deviation {
  std::uint32_t step;
  std::uint32_t choice;  // index into the enabled list at that step
  bool operator==(const Deviation&) const = default;
};

struct RunResult {
  std::optional<Violation> violation;
  std::string hold;  // held-rank: "rank 1 held at push of call 2" (else empty)
  std::vector<Deviation> deviations;
  std::uint64_t steps = 0;
  std::uint64_t memory_events = 0;
};

// What a step offered: how many events were enabled, which one the default takes.
struct ChoicePoint {
  std::uint32_t count, fallback;
};

// A choice past the end of the enabled list falls back to the default.
RunResult run_replay(ProtocolModel& model, const std::vector<Deviation>& deviations,
                     std::vector<ChoicePoint>* choice_points = nullptr);
RunResult run_random(ProtocolModel& model, std::uint64_t seed);
// PCT (Burckhardt et al.): random actor priorities, depth-1 change points in the first
// `expected_steps` steps, always run the highest-priority enabled actor.
RunResult run_pct(ProtocolModel& model, std::uint64_t seed, int depth,
                  std::uint64_t expected_steps);
// One rank held back: the seed draws a rank, a call (over graph replays) and a step code; the
// rank's threads that reach that step of that call, and all of its later calls, wait while
// any other event is enabled (the other ranks run as far as they can: into their next calls,
// reusing slots and flags), then go on; every choice among the others is random. This is the
// rank-ahead schedule (a peer reuses a buffer before a slower rank has read it) made certain
// instead of left to chance.
RunResult run_held_rank(ProtocolModel& model, std::uint64_t seed, int ranks, int calls);

enum class SchedulerKind : std::uint8_t { random, pct, exhaustive, held_rank };
std::optional<SchedulerKind> parse_scheduler(std::string_view name);
const char* scheduler_name(SchedulerKind kind);

struct SearchProgress {
  std::uint64_t executions, memory_events;
  double seconds;
};

struct SearchOptions {
  SchedulerKind scheduler = SchedulerKind::random;
  std::uint64_t budget = 10000;  // schedules (random, pct) or executions (exhaustive)
  std::uint64_t seed = 1;
  int pct_depth = 3;
  int deviation_bound = 2;  // exhaustive: every schedule with at most this many deviations
  double time_limit_s = 0;  // 0: none
  std::optional<ViolationKind> want_kind;               // minimisation: other kinds do not count
  std::function<void(const SearchProgress&)> progress;  // about once a second
};

struct SearchResult {
  std::optional<RunResult> counterexample;
  std::uint64_t counterexample_seed = 0;  // random/pct: the seed of the failing schedule
  std::uint64_t executions = 0;
  std::uint64_t memory_events = 0;
  double seconds = 0;
  bool complete = false;  // exhaustive: the bounded space was explored to the end
};

SearchResult search(const SimConfig& config, const Profile& profile, Mutant mutant,
                    const SearchOptions& options);

// Seed of the i-th schedule of a search.
std::uint64_t schedule_seed(std::uint64_t base, std::uint64_t i);

}  // namespace fusioncheck::sim
