// Benchmarks of the protocol sim (medians over repetitions):
//  * simulated memory events per second on the 2-rank default configuration, per profile;
//  * the bounded exhaustive search of the tiny configuration (<= 2 deviations), per profile;
//  * time to detect each mutant on sm120-pcie (random, then PCT, then exhaustive tiny), with
//    a different base seed in every iteration.
#include <benchmark/benchmark.h>

#include <string>

#include "fusioncheck/sim/scheduler.hpp"

namespace fusioncheck::sim {
namespace {

void BM_MemoryEventsTwoRanks(benchmark::State& state) {
  const Profile& profile = kProfiles[static_cast<std::size_t>(state.range(0))];
  const SimConfig config = default_config();
  Model model(config, profile, Mutant::none);
  std::uint64_t events = 0, seed = 1;
  for (auto _ : state) {
    const RunResult run = run_random(model, seed++);
    if (run.violation) state.SkipWithError("the correct protocol failed");
    events += run.memory_events;
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["schedules_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(profile.name));
}

void BM_ExhaustiveTiny(benchmark::State& state) {
  const Profile& profile = kProfiles[static_cast<std::size_t>(state.range(0))];
  SearchOptions options;
  options.scheduler = SchedulerKind::exhaustive;
  options.deviation_bound = 2;
  options.budget = 100000000;
  std::uint64_t executions = 0;
  for (auto _ : state) {
    const SearchResult result = search(tiny_config(), profile, Mutant::none, options);
    if (!result.complete || result.counterexample) state.SkipWithError("exhaustive search failed");
    executions = result.executions;
  }
  state.counters["executions"] = static_cast<double>(executions);
  state.SetLabel(std::string(profile.name));
}

void BM_TimeToDetect(benchmark::State& state) {
  const auto& info = protocol::kMutantCatalogue[static_cast<std::size_t>(state.range(0))];
  const Profile& profile = *find_profile("sm120-pcie");
  const SimProtocol protocol = mutant_protocol(info.mutant);
  if (!in_sim(info.mutant, protocol)) {
    state.SkipWithError("not in the sim");
    return;
  }
  std::uint64_t seed = 1, schedules = 0;
  for (auto _ : state) {
    bool found = false;
    for (auto scheduler : {SchedulerKind::random, SchedulerKind::pct, SchedulerKind::exhaustive}) {
      SearchOptions options;
      options.scheduler = scheduler;
      options.budget = scheduler == SchedulerKind::exhaustive ? 1000000 : 20000;
      options.seed = seed;
      const SimConfig config = scheduler == SchedulerKind::exhaustive
                                   ? provoking_tiny_config(info.mutant, protocol)
                                   : provoking_config(info.mutant, protocol);
      const SearchResult result = search(config, profile, info.mutant, options);
      schedules += result.executions;
      if (result.counterexample) {
        found = true;
        break;
      }
    }
    if (!found) state.SkipWithError("mutant not killed");
    ++seed;
  }
  state.counters["schedules"] =
      benchmark::Counter(static_cast<double>(schedules), benchmark::Counter::kAvgIterations);
  state.SetLabel(std::string(info.id));
}

BENCHMARK(BM_MemoryEventsTwoRanks)
    ->DenseRange(0, static_cast<int>(kProfiles.size()) - 1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ExhaustiveTiny)
    ->DenseRange(0, static_cast<int>(kProfiles.size()) - 1)
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TimeToDetect)
    ->DenseRange(0, static_cast<int>(protocol::kMutantCatalogue.size()) - 1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fusioncheck::sim

BENCHMARK_MAIN();
