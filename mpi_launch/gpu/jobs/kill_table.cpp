// `fusioncheck gpu kill-table`: the correct kernels and every kernel mutant, one check run
// each, on 2 ranks; the verdict counts false positives and survivors this setup can kill.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_report.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "fusioncheck/gpu/mpi_bootstrap.hpp"

namespace fusioncheck::gpu {

KillTableResult run_kill_table(mpi::MpiComm& comm, const KillTableOptions& options) {
  options.check.limits.validate();
  require_launcher(comm, "2");
  const std::vector<int>& ranks = options.check.kernel.mutant_ranks;
  if (std::find(ranks.begin(), ranks.end(), comm.size()) == ranks.end())
    throw BadInput(fmt::format(
        "{} ranks: the mutant instances are compiled for {} ranks; run the kill table with "
        "mpirun -np {}",
        comm.size(), fmt::join(ranks, ", "), ranks.front()));
  if (options.check.kernel.host_traits)  // refused before any GPU is touched
    require_variant(options.check.variant, options.check.kernel.name,
                    options.check.kernel.host_traits(comm.size()));
  require_cuda_device();  // before the kernel below is made (some adapters load device code)
  // A kernel made only to ask it which mutants it has and where they live.
  MpiBootstrap bootstrap(comm);
  const std::unique_ptr<KernelUnderTest> kernel = options.check.kernel.make(bootstrap, MutantId());
  std::vector<MutantId> mutants = options.mutants;
  if (mutants.empty()) {
    mutants.emplace_back();
    for (auto m : kernel->mutants()) mutants.push_back(m);
  }
  std::vector<std::string> ids;
  for (auto m : mutants) ids.emplace_back(m.id());
  agree_on_config(comm,
                  run_config(options.check, comm.size(), fmt::format("{}", fmt::join(ids, ","))));
  KillTableResult result;
  result.placement = place_rank_on_gpu(comm, options.check.kernel.share_sms);
  result.setup = describe(result.placement, comm.size());
  if (comm.rank() == 0)
    fmt::print("fusioncheck gpu kill-table: {}; {}\n", kernel->name(), result.setup);
  CheckOptions check = options.check;
  check.shrink = false;  // time to detect = the first failure
  const auto plan = kill_table_plan(
      mutants, options.check.twoshot_percent,
      [&](const MutantId& m) { return kernel->mutant_in_twoshot_only(m); },
      [&](const MutantId& m) { return kernel->mutant_needs_late_blocks(m); },
      [&](const MutantId& m) { return kernel->mutant_variant(m); },
      [&](const MutantId& m) { return kernel->mutant_needs_held_rank(m); });
  for (const auto& run : plan) {
    check.mutant = run.mutant;
    // An absent known finding says something of the kernel as built, not of a mutant.
    check.strict = options.check.strict && run.mutant.none();
    check.twoshot_percent = run.twoshot_percent;
    check.focus_twoshot = run.twoshot_percent == kTwoShotMutantPercent;
    check.focus_late_blocks = run.late_blocks;
    check.focus_held_rank = run.held_rank;
    // A mutant of one launch variant draws it alone, unless --variant chose one for every run.
    check.variant = options.check.variant >= 0 ? options.check.variant : run.variant;
    // Every case of a two-shot race run is a long sequence: each call is another chance for
    // the race, at no cost in cases.
    check.limits.max_calls = check.focus_twoshot || check.focus_late_blocks
                                 ? kMaxCallsPerCase
                                 : options.check.limits.max_calls;
    check.replay_out =
        fmt::format("fusioncheck-gpu-{}-{}{}{}{}.json", run.mutant.id(), run.twoshot_percent,
                    run.late_blocks ? "-late-blocks" : "", run.held_rank ? "-held-rank" : "",
                    run.variant >= 0 ? fmt::format("-variant{}", run.variant) : "");
    result.runs.push_back(run_check(comm, check, result.placement));
    if (!run.mutant.none()) {
      std::string excuse = expected_survival(run.mutant, result.placement);
      if (excuse.empty()) excuse = kernel->mutant_may_survive(run.mutant, result.placement);
      result.runs.back().survival_excuse = excuse;
    }
    if (comm.rank() == 0)
      fmt::print("{}\n", summary_line(result.runs.back(), comm.size())), std::fflush(stdout);
  }
  if (options.mutants.empty()) result.not_built = kernel->mutants_not_built();
  for (const auto& r : result.runs)
    result.unexpected += r.mutant.none() ? r.failed : !r.failed && r.survival_excuse.empty();
  return result;
}

}  // namespace fusioncheck::gpu
