// `fusioncheck reference --selfcheck [--seed N] [--cases N]`: the CPU main job's first step.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdint>
#include <memory>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/options.hpp"
#include "fusioncheck/reference/selfcheck.hpp"

namespace fusioncheck::cli {

namespace {
constexpr int kMaxCases = 100000;
constexpr double kProgressEvery_s = 5.0;
}  // namespace

void add_reference_command(CLI::App& app, int& exit_code) {
  struct Options {
    bool selfcheck = false;
    std::uint64_t seed = 1;
    int cases = 300;
  };
  auto opt = std::make_shared<Options>();
  auto* sub = app.add_subcommand("reference", "The Eigen CPU reference of the fused call");
  sub->add_flag("--selfcheck", opt->selfcheck,
                "Check the reference against a naive implementation on seeded exact inputs "
                "(about 0.2 ms per case)");
  sub->add_option("--seed", opt->seed, "Seed of the self-check cases")->check(any_seed());
  sub->add_option("--cases", opt->cases, "Number of self-check cases")
      ->check(integer_in(1, kMaxCases));
  sub->callback([opt, sub, &exit_code] {
    if (!opt->selfcheck) {
      refuse_options(*sub, {"--seed", "--cases"}, "without --selfcheck",
                     "they set up the self-check");
      throw UsageError("reference: nothing to do (use --selfcheck)");
    }
    reference::SelfCheckProgress progress;
    progress.every_s = kProgressEvery_s;
    progress.report = [](const reference::SelfCheckProgressState& s) {
      fmt::print(stderr, "reference selfcheck: {}/{} cases, {} failed, {:.1f} s\n", s.done, s.total,
                 s.failures, s.seconds);
    };
    const auto r =
        reference::run_selfcheck(opt->seed, opt->cases, reference::compute_fused, progress);
    fmt::print("reference selfcheck: seed {}, {} cases, {} checks, {} failed{}{}\n", opt->seed,
               r.cases, r.checks, r.failures, r.failures ? "; first: " : "", r.first_failure);
    exit_code = r.failures == 0 ? kExitClean : kExitFindings;
  });
}

}  // namespace fusioncheck::cli
