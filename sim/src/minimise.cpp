// Counterexample minimisation: first a smaller configuration (fewer ranks, calls, blocks,
// vectors, elements; the same search finds the same kind of violation there), then fewer
// schedule deviations by delta debugging.
#include <algorithm>
#include <chrono>

#include "fusioncheck/sim/counterexample.hpp"

namespace fusioncheck::sim {
namespace {

// Smaller configurations, biggest cuts first. Calls that do not fit the smaller grid are
// clamped to it.
std::vector<SimConfig> smaller_configs(const SimConfig& c) {
  std::vector<SimConfig> out;
  const auto clamp_calls = [](SimConfig& s) {
    for (auto& call : s.calls)
      call.vectors = std::min(call.vectors, s.blocks * s.vectors_per_block);
  };
  if (c.ranks > 2) {
    SimConfig s = c;
    s.ranks = 2;
    out.push_back(s);
    s = c;
    --s.ranks;
    out.push_back(s);
  }
  if (c.graph_replays > 1) {
    SimConfig s = c;
    s.graph_replays = 1;
    out.push_back(s);
  }
  for (std::size_t i = c.calls.size(); i-- > 0;) {
    if (c.calls.size() <= 1) break;
    SimConfig s = c;
    s.calls.erase(s.calls.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(s);
  }
  if (c.blocks > 1) {
    SimConfig s = c;
    --s.blocks;
    clamp_calls(s);
    out.push_back(s);
  }
  if (c.vectors_per_block > 1) {
    SimConfig s = c;
    --s.vectors_per_block;
    clamp_calls(s);
    out.push_back(s);
  }
  if (c.elems_per_vector > 1) {
    SimConfig s = c;
    --s.elems_per_vector;
    out.push_back(s);
  }
  for (std::size_t i = 0; i < c.calls.size(); ++i)
    if (c.calls[i].vectors > 1) {
      SimConfig s = c;
      --s.calls[i].vectors;
      out.push_back(s);
    }
  if (c.late_trigger) {
    SimConfig s = c;
    s.late_trigger = false;
    out.push_back(s);
  }
  if (c.streams > 1) {
    SimConfig s = c;
    s.streams = 1;
    out.push_back(s);
  }
  return out;
}

// Finds a violation of `kind` in `config`: schedules one deviation away from the default
// first (they give the shortest counterexamples), then random, then PCT.
bool find_in(const SimConfig& config, const Profile& profile, Mutant mutant, ViolationKind kind,
             std::uint64_t budget, Counterexample& out) {
  if (!validate(config, profile).empty()) return false;
  for (SchedulerKind scheduler :
       {SchedulerKind::exhaustive, SchedulerKind::random, SchedulerKind::pct}) {
    SearchOptions options;
    options.scheduler = scheduler;
    options.budget = scheduler == SchedulerKind::exhaustive ? budget * 4 : budget;
    options.deviation_bound = 1;
    options.seed = 1;
    options.want_kind = kind;
    const SearchResult result = search(config, profile, mutant, options);
    if (result.counterexample) {
      out = make_counterexample(config, profile, mutant, scheduler, result);
      return true;
    }
  }
  return false;
}

bool same_kind(const Counterexample& cx, const std::vector<Deviation>& deviations) {
  const auto model = make_model(cx.config, *find_profile(cx.profile), cx.mutant);
  const RunResult run = run_replay(*model, deviations);
  return run.violation && run.violation->kind == cx.kind;
}

}  // namespace

std::vector<Deviation> minimise_deviations(const Counterexample& cx) {
  std::vector<Deviation> current = cx.deviations;
  if (current.empty() || same_kind(cx, {})) return {};
  std::size_t n = 2;
  while (current.size() >= 2) {
    const std::size_t chunk = (current.size() + n - 1) / n;
    bool reduced = false;
    // Try each chunk alone, then each complement.
    for (std::size_t start = 0; start < current.size() && !reduced; start += chunk) {
      const auto end = std::min(current.size(), start + chunk);
      std::vector<Deviation> part(current.begin() + static_cast<std::ptrdiff_t>(start),
                                  current.begin() + static_cast<std::ptrdiff_t>(end));
      if (same_kind(cx, part)) {
        current = std::move(part);
        n = 2;
        reduced = true;
      }
    }
    for (std::size_t start = 0; start < current.size() && !reduced; start += chunk) {
      const auto end = std::min(current.size(), start + chunk);
      std::vector<Deviation> rest(current.begin(),
                                  current.begin() + static_cast<std::ptrdiff_t>(start));
      rest.insert(rest.end(), current.begin() + static_cast<std::ptrdiff_t>(end), current.end());
      if (same_kind(cx, rest)) {
        current = std::move(rest);
        n = std::max<std::size_t>(n - 1, 2);
        reduced = true;
      }
    }
    if (reduced) continue;
    if (n >= current.size()) break;
    n = std::min(n * 2, current.size());
  }
  return current;
}

Counterexample minimise(const Counterexample& found, const MinimiseOptions& options) {
  const Profile& profile = *find_profile(found.profile);
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  Counterexample best = found;
  bool shrunk = true;
  while (shrunk && elapsed() < options.time_limit_s) {
    shrunk = false;
    for (const SimConfig& candidate : smaller_configs(best.config)) {
      if (elapsed() >= options.time_limit_s) break;
      Counterexample cx;
      if (find_in(candidate, profile, best.mutant, best.kind, options.budget_per_candidate, cx)) {
        best = cx;
        shrunk = true;
        break;
      }
    }
  }
  // Fewer deviations; then replay once to record what the minimal schedule does.
  best.deviations = minimise_deviations(best);
  const auto model = make_model(best.config, profile, best.mutant);
  const RunResult run = run_replay(*model, best.deviations);
  best.deviations = run.deviations;
  best.violation = run.violation->text;
  best.kind = run.violation->kind;
  best.steps = run.steps;
  return best;
}

}  // namespace fusioncheck::sim
