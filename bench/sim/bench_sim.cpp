// Benchmarks of the protocol sim (medians over repetitions):
//  * simulated memory events per second on the 2-rank default configuration, per profile;
//  * the bounded exhaustive search of the tiny configuration (<= 2 deviations), per profile;
//  * time to detect each mutant on sm120-pcie (nvl72 for the MNNVL model's: random, then PCT,
//    then exhaustive tiny), with a different base seed in every iteration;
//  * the MNNVL model at 72 ranks on each rack profile: memory events per second of random,
//    PCT and held-rank schedules, and the time random or PCT schedules alone take to reach
//    each of its mutants (a new base seed in every iteration).
#include <benchmark/benchmark.h>

#include <fmt/core.h>

#include <string>
#include <vector>

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
  const SimProtocol protocol = mutant_protocol(info.mutant);
  const Profile& profile = *find_profile(protocol == SimProtocol::mnnvl ? "nvl72" : "sm120-pcie");
  if (!in_sim(info.mutant, protocol)) {
    state.SkipWithError("not in the sim");
    return;
  }
  // Each covered by the other in the copy-engine ring (docs/sim.md): nothing to detect.
  if (info.mutant == Mutant::ce_no_join || info.mutant == Mutant::ce_no_handshake) {
    state.SkipWithError("survives by design (docs/sim.md)");
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

constexpr SchedulerKind kRackSchedulers[] = {SchedulerKind::random, SchedulerKind::pct,
                                             SchedulerKind::held_rank};

// range(0): rack profile, range(1): scheduler (kRackSchedulers).
void BM_MnnvlMemoryEvents72Ranks(benchmark::State& state) {
  const Profile& profile = kRackProfiles[static_cast<std::size_t>(state.range(0))];
  const SchedulerKind scheduler = kRackSchedulers[static_cast<std::size_t>(state.range(1))];
  SearchOptions options;
  options.scheduler = scheduler;
  options.budget = scheduler == SchedulerKind::pct ? 2 : 20;
  static std::uint64_t next_seed = 0;  // a new base seed in every repetition
  std::uint64_t events = 0;
  double seconds = 0;
  for (auto _ : state) {
    options.seed = ++next_seed;
    const SearchResult result =
        search(default_config(SimProtocol::mnnvl), profile, Mutant::none, options);
    if (result.counterexample) state.SkipWithError("the correct protocol failed");
    events += result.memory_events;
    seconds += result.seconds;
  }
  state.counters["events_per_s"] = static_cast<double>(events) / seconds;
  state.SetLabel(std::string(profile.name) + " " + scheduler_name(scheduler));
}

std::vector<Mutant> mnnvl_mutants() {
  std::vector<Mutant> out;
  for (const auto& info : protocol::kMutantCatalogue)
    if (in_sim(info.mutant, SimProtocol::mnnvl) && info.mutant != Mutant::none)
      out.push_back(info.mutant);
  return out;
}

// range(0): rack profile, range(1): random (0) or PCT (1), range(2): the MNNVL mutant.
void BM_MnnvlTimeToDetect72Ranks(benchmark::State& state) {
  const Profile& profile = kRackProfiles[static_cast<std::size_t>(state.range(0))];
  const SchedulerKind scheduler = kRackSchedulers[static_cast<std::size_t>(state.range(1))];
  const Mutant mutant = mnnvl_mutants().at(static_cast<std::size_t>(state.range(2)));
  SearchOptions options;
  options.scheduler = scheduler;
  options.budget = 100000;
  options.time_limit_s = 60;
  static std::uint64_t next_seed = 0;  // a new base seed in every repetition
  std::uint64_t schedules = 0;
  for (auto _ : state) {
    options.seed = ++next_seed;
    const SearchResult result =
        search(provoking_config(mutant, SimProtocol::mnnvl), profile, mutant, options);
    if (!result.counterexample) state.SkipWithError("not reached within 60 s");
    schedules += result.executions;
  }
  state.counters["schedules"] =
      benchmark::Counter(static_cast<double>(schedules), benchmark::Counter::kAvgIterations);
  state.SetLabel(fmt::format("{} {} {}", profile.name, scheduler_name(scheduler),
                             protocol::mutant_id(mutant)));
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
BENCHMARK(BM_MnnvlMemoryEvents72Ranks)
    ->ArgsProduct({benchmark::CreateDenseRange(0, static_cast<int>(kRackProfiles.size()) - 1, 1),
                   {0, 1, 2}})
    ->Iterations(1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MnnvlTimeToDetect72Ranks)
    ->ArgsProduct({benchmark::CreateDenseRange(0, static_cast<int>(kRackProfiles.size()) - 1, 1),
                   {0, 1},
                   benchmark::CreateDenseRange(0, static_cast<int>(mnnvl_mutants().size()) - 1, 1)})
    ->Iterations(1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fusioncheck::sim

BENCHMARK_MAIN();
