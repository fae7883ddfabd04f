// `fusioncheck reference --selfcheck [--seed N] [--cases N]`: the CPU main job's first step.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdint>
#include <memory>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/reference/selfcheck.hpp"

namespace fusioncheck::cli {

void add_reference_command(CLI::App& app, int& exit_code) {
  struct Options {
    bool selfcheck = false;
    std::uint64_t seed = 1;
    int cases = 300;
  };
  auto opt = std::make_shared<Options>();
  auto* sub = app.add_subcommand("reference", "The Eigen CPU reference of the fused call");
  sub->add_flag("--selfcheck", opt->selfcheck,
                "Check the reference against a naive implementation on seeded exact inputs");
  sub->add_option("--seed", opt->seed, "Seed of the self-check cases");
  sub->add_option("--cases", opt->cases, "Number of self-check cases (1..100000)");
  sub->callback([opt, &exit_code] {
    if (!opt->selfcheck) throw UsageError("reference: nothing to do (use --selfcheck)");
    if (opt->cases < 1 || opt->cases > 100000)
      throw UsageError(fmt::format("reference: --cases must be in [1, 100000], got {}", opt->cases));
    const auto r = reference::run_selfcheck(opt->seed, opt->cases);
    fmt::print("reference selfcheck: seed {}, {} cases, {} checks, {} failed{}{}\n", opt->seed,
               r.cases, r.checks, r.failures, r.failures ? "; first: " : "", r.first_failure);
    exit_code = r.failures == 0 ? kExitClean : kExitFindings;
  });
}

}  // namespace fusioncheck::cli
