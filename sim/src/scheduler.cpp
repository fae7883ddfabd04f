// Random, PCT and bounded exhaustive scheduling over the model.
#include "fusioncheck/sim/scheduler.hpp"

#include <algorithm>
#include <chrono>

namespace fusioncheck::sim {
namespace {

// splitmix64: small, fast and the same on every platform, so seeds replay anywhere.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint32_t below(std::uint32_t n) {
    return static_cast<std::uint32_t>((next() >> 32) * n >> 32);
  }
};

// The default choice: the actor that ran last goes on if it can (a thread runs until it
// spins, a link keeps delivering), else the first enabled event. A deviation is thus a
// preemption, and "at most k deviations" is a preemption bound as in CHESS.
std::uint32_t default_choice(const ProtocolModel& model, std::span<const Event> events,
                             int last_actor) {
  if (last_actor < 0) return 0;
  for (std::uint32_t i = 0; i < events.size(); ++i)
    if (model.actor_of(events[i]) == last_actor) return i;
  return 0;
}

// Whether `pick` is the default choice, without a scan in the common cases: a thread
// appears once in the list, so only a link (several pieces) or pick 0 need a look back.
bool is_default(std::span<const Event> events, std::uint32_t pick, int last_actor) {
  if (events[pick].actor == last_actor) {
    if (events[pick].kind != EventKind::deliver) return true;
    for (std::uint32_t i = 0; i < pick; ++i)
      if (events[i].actor == last_actor) return false;
    return true;
  }
  if (pick != 0) return false;
  for (const Event& e : events)
    if (e.actor == last_actor) return false;
  return true;
}

// Runs the model to the end, asking `choose` for an index whenever more than one event is
// enabled, and records the choices that differ from the default. `kNeedsDefault`: the
// chooser takes the default index as input (replay), else it is checked afterwards.
template <bool kNeedsDefault, class Choose>
RunResult run_with(ProtocolModel& model, Choose&& choose) {
  RunResult result;
  model.reset();
  std::uint32_t step = 0;
  int last_actor = -1;
  for (;;) {
    const auto events = model.enabled();
    if (events.empty()) {
      model.finish();
      break;
    }
    std::uint32_t pick = 0;
    if (events.size() > 1) {
      if constexpr (kNeedsDefault) {
        const std::uint32_t fallback = default_choice(model, events, last_actor);
        pick = choose(step, events, fallback);
        if (pick != fallback) result.deviations.push_back({step, pick});
      } else {
        pick = choose(step, events, 0u);
        if (!is_default(events, pick, last_actor)) result.deviations.push_back({step, pick});
      }
    }
    last_actor = model.actor_of(events[pick]);
    model.execute(events[pick]);
    ++step;
    if (model.violation()) break;
  }
  result.violation = model.violation();
  result.steps = model.steps();
  result.memory_events = model.memory_events();
  return result;
}

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

std::uint64_t schedule_seed(std::uint64_t base, std::uint64_t i) {
  Rng rng{base * 0x100000001B3ull + i};
  return rng.next();
}

RunResult run_replay(ProtocolModel& model, const std::vector<Deviation>& deviations,
                     std::vector<ChoicePoint>* choice_points) {
  std::size_t next = 0;
  if (choice_points) choice_points->clear();
  return run_with<true>(
      model, [&](std::uint32_t step, std::span<const Event> events, std::uint32_t fallback) {
        if (choice_points) {
          choice_points->resize(step, ChoicePoint{1, 0});  // steps with a single event
          choice_points->push_back({static_cast<std::uint32_t>(events.size()), fallback});
        }
        while (next < deviations.size() && deviations[next].step < step) ++next;
        if (next < deviations.size() && deviations[next].step == step &&
            deviations[next].choice < events.size())
          return deviations[next].choice;
        return fallback;
      });
}

RunResult run_random(ProtocolModel& model, std::uint64_t seed) {
  Rng rng{seed};
  return run_with<false>(model, [&](std::uint32_t, std::span<const Event> events, std::uint32_t) {
    return rng.below(static_cast<std::uint32_t>(events.size()));
  });
}

RunResult run_pct(ProtocolModel& model, std::uint64_t seed, int depth,
                  std::uint64_t expected_steps) {
  Rng rng{seed};
  const int actors = model.actor_count();
  std::vector<std::uint32_t> priority(static_cast<std::size_t>(actors));
  // Initial priorities are all above the depth-1 low priorities given at change points.
  for (auto& p : priority) p = static_cast<std::uint32_t>(depth) + (rng.next() >> 40);
  std::vector<std::uint32_t> change_points;
  for (int i = 0; i + 1 < depth; ++i)
    change_points.push_back(
        rng.below(static_cast<std::uint32_t>(std::max<std::uint64_t>(1, expected_steps))));
  std::sort(change_points.begin(), change_points.end());
  std::size_t next_change = 0;
  return run_with<false>(
      model, [&](std::uint32_t step, std::span<const Event> events, std::uint32_t) {
        std::uint32_t best = 0, best_priority = 0, ties = 0;
        int best_actor = -1;
        for (std::uint32_t i = 0; i < events.size(); ++i) {
          const int actor = model.actor_of(events[i]);
          const std::uint32_t p = priority[static_cast<std::size_t>(actor)];
          if (best_actor < 0 || p > best_priority) {
            best = i, best_priority = p, best_actor = actor, ties = 1;
          } else if (actor == best_actor && rng.below(++ties) == 0) {
            best = i;  // several deliveries on one link: any of them, uniformly
          }
        }
        while (next_change < change_points.size() && change_points[next_change] <= step) {
          priority[static_cast<std::size_t>(best_actor)] =
              static_cast<std::uint32_t>(depth - 1) - static_cast<std::uint32_t>(next_change);
          ++next_change;
        }
        return best;
      });
}

RunResult run_held_rank(ProtocolModel& model, std::uint64_t seed, int ranks, int calls) {
  Rng rng{seed};
  const int rank = static_cast<int>(rng.below(static_cast<std::uint32_t>(std::max(1, ranks))));
  const int call = static_cast<int>(rng.below(static_cast<std::uint32_t>(std::max(1, calls))));
  const int step =
      static_cast<int>(rng.below(static_cast<std::uint32_t>(std::max(1, model.step_codes()))));
  const auto held = [&](const Event& e) {
    const std::optional<StepSite> site = model.site_of(e);
    return site && site->rank == rank &&
           (site->call > call || (site->call == call && site->step == step));
  };
  std::vector<std::uint32_t> free;
  RunResult run =
      run_with<false>(model, [&](std::uint32_t, std::span<const Event> events, std::uint32_t) {
        // A few uniform draws first (the held rank's events are a few among many at 72
        // ranks); the list of the free ones only when they keep hitting it. Both are uniform
        // over the free events.
        const auto n = static_cast<std::uint32_t>(events.size());
        for (int attempt = 0; attempt < 4; ++attempt)
          if (const std::uint32_t pick = rng.below(n); !held(events[pick])) return pick;
        free.clear();
        for (std::uint32_t i = 0; i < events.size(); ++i)
          if (!held(events[i])) free.push_back(i);
        if (free.empty()) return rng.below(static_cast<std::uint32_t>(events.size()));
        return free[rng.below(static_cast<std::uint32_t>(free.size()))];
      });
  run.hold = "rank " + std::to_string(rank) + " held at " + model.step_name(step) + " of call " +
             std::to_string(call);
  return run;
}

std::optional<SchedulerKind> parse_scheduler(std::string_view name) {
  if (name == "held-rank") return SchedulerKind::held_rank;
  if (name == "random") return SchedulerKind::random;
  if (name == "pct") return SchedulerKind::pct;
  if (name == "exhaustive") return SchedulerKind::exhaustive;
  return std::nullopt;
}

const char* scheduler_name(SchedulerKind kind) {
  switch (kind) {
    case SchedulerKind::random: return "random";
    case SchedulerKind::pct: return "pct";
    case SchedulerKind::exhaustive: return "exhaustive";
    case SchedulerKind::held_rank: return "held-rank";
  }
  return "?";
}

namespace {

struct Exhaustive {
  ProtocolModel& model;
  const SearchOptions& options;
  SearchResult& result;
  Clock::time_point t0;
  double next_report = 1.0;
  bool stop = false;
  std::vector<Deviation> deviations;
  std::vector<ChoicePoint> points;

  void explore(std::uint32_t from_step) {
    if (stop) return;
    if (result.executions >= options.budget ||
        (options.time_limit_s > 0 && since(t0) > options.time_limit_s)) {
      stop = true;
      return;
    }
    RunResult run = run_replay(model, deviations, &points);
    ++result.executions;
    result.memory_events += run.memory_events;
    if (options.progress && (result.executions & 255u) == 0 && since(t0) > next_report) {
      next_report = since(t0) + 1.0;
      options.progress({result.executions, result.memory_events, since(t0)});
    }
    if (run.violation) {
      if (!options.want_kind || run.violation->kind == *options.want_kind) {
        result.counterexample = std::move(run);
        stop = true;
      }
      return;
    }
    if (static_cast<int>(deviations.size()) >= options.deviation_bound) return;
    const std::vector<ChoicePoint> mine = points;  // the next runs overwrite points
    for (std::uint32_t s = from_step; s < mine.size() && !stop; ++s)
      for (std::uint32_t j = 0; j < mine[s].count && !stop; ++j) {
        if (j == mine[s].fallback) continue;
        deviations.push_back({s, j});
        explore(s + 1);
        deviations.pop_back();
      }
  }
};

}  // namespace

SearchResult search(const SimConfig& config, const Profile& profile, Mutant mutant,
                    const SearchOptions& options) {
  SearchResult result;
  const std::unique_ptr<ProtocolModel> owned = make_model(config, profile, mutant);
  ProtocolModel& model = *owned;
  const auto t0 = Clock::now();
  if (options.scheduler == SchedulerKind::exhaustive) {
    Exhaustive ex{model, options, result, t0, 1.0, false, {}, {}};
    ex.explore(0);
    result.complete = !ex.stop;
    result.seconds = since(t0);
    return result;
  }
  std::uint64_t expected_steps = 0;
  if (options.scheduler == SchedulerKind::pct) expected_steps = run_replay(model, {}).steps;
  double next_report = 1.0;
  for (std::uint64_t i = 0; i < options.budget; ++i) {
    const std::uint64_t seed = schedule_seed(options.seed, i);
    RunResult run = options.scheduler == SchedulerKind::pct
                        ? run_pct(model, seed, options.pct_depth, expected_steps)
                    : options.scheduler == SchedulerKind::held_rank
                        ? run_held_rank(model, seed, config.ranks,
                                        static_cast<int>(expanded_calls(config).size()))
                        : run_random(model, seed);
    ++result.executions;
    result.memory_events += run.memory_events;
    if (run.violation && (!options.want_kind || run.violation->kind == *options.want_kind)) {
      result.counterexample = std::move(run);
      result.counterexample_seed = seed;
      break;
    }
    if ((i & 63u) == 0) {
      const double s = since(t0);
      if (options.time_limit_s > 0 && s > options.time_limit_s) break;
      if (options.progress && s > next_report) {
        next_report = s + 1.0;
        options.progress({result.executions, result.memory_events, s});
      }
    }
  }
  result.seconds = since(t0);
  return result;
}

}  // namespace fusioncheck::sim
