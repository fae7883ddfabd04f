// `fusioncheck gpu kill-table`: the correct kernels and every kernel mutant, one check run
// each, on 2 ranks; the verdict counts false positives and survivors this setup can kill.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cstdio>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_report.hpp"

namespace fusioncheck::gpu {

KillTableResult run_kill_table(mpi::MpiComm& comm, const KillTableOptions& options) {
  options.check.limits.validate();
  std::vector<protocol::Mutant> mutants = options.mutants;
  if (mutants.empty()) {
    mutants.push_back(protocol::Mutant::none);
    for (auto m : kernels::oneshot_mutants_compiled()) mutants.push_back(m);
    for (auto m : kernels::twoshot_mutants_compiled()) mutants.push_back(m);
  }
  if (comm.size() != 2)
    throw BadInput(fmt::format("{} ranks: the mutant instances are compiled for 2 ranks (bf16); run the kill "
                               "table with mpirun -np 2",
                               comm.size()));
  std::vector<std::string> ids;
  for (auto m : mutants) ids.emplace_back(protocol::mutant_id(m));
  agree_on_config(comm, run_config(options.check, comm.size(), fmt::format("{}", fmt::join(ids, ","))));
  KillTableResult result;
  result.placement = place_rank_on_gpu(comm);
  result.setup = describe(result.placement, comm.size());
  if (comm.rank() == 0) fmt::print("fusioncheck gpu kill-table: {}\n", result.setup);
  CheckOptions check = options.check;
  check.shrink = false;  // time to detect = the first failure
  for (const auto& [mutant, percent] : kill_table_plan(mutants, options.check.twoshot_percent)) {
    check.mutant = mutant;
    check.twoshot_percent = percent;
    check.replay_out = fmt::format("fusioncheck-gpu-{}-{}.json", protocol::mutant_id(mutant), percent);
    result.runs.push_back(run_check(comm, check, result.placement));
    if (comm.rank() == 0) fmt::print("{}\n", summary_line(result.runs.back(), comm.size())), std::fflush(stdout);
  }
  for (const auto& r : result.runs)
    result.unexpected += r.mutant == protocol::Mutant::none
                             ? r.failed
                             : !r.failed && expected_survival(r.mutant, result.placement).empty();
  return result;
}

}  // namespace fusioncheck::gpu
