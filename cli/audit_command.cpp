// `fusioncheck audit FILE...`: per-architecture synchronisation audit of compiled CUDA code.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "fusioncheck/audit/audit.hpp"
#include "fusioncheck/audit/cuobjdump.hpp"
#include "fusioncheck/cli/command.hpp"

namespace fusioncheck::cli {
namespace {

struct AuditArguments {
  std::vector<std::string> files;
  std::string pdl_kernels;
  bool pdl_all = false;
  bool no_pdl_heuristic = false;
  bool as_json = false;
  double timeout_s = 300.0;
};

audit::AuditOptions make_options(const AuditArguments& args) {
  audit::AuditOptions options;
  options.pdl_all = args.pdl_all;
  options.pdl_heuristic = !args.no_pdl_heuristic;
  if (!args.pdl_kernels.empty()) {
    try {
      options.pdl_kernels.emplace(args.pdl_kernels, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw UsageError("--pdl-kernels: not a valid regular expression: " + args.pdl_kernels);
    }
  }
  return options;
}

int run_audit(const AuditArguments& args) {
  if (!(args.timeout_s > 0 && args.timeout_s <= 86400))
    throw UsageError("--timeout must be a number of seconds in (0, 86400]");
  const audit::AuditOptions options = make_options(args);
  const auto cuobjdump = audit::find_cuobjdump();
  if (!cuobjdump)
    throw UsageError(std::string("cuobjdump not found ($CUOBJDUMP, PATH, /usr/local/cuda/bin); install it with: ") +
                     audit::kCuobjdumpInstallHint);
  const auto time_limit = std::chrono::milliseconds(static_cast<long long>(args.timeout_s * 1000));
  std::vector<audit::FileReport> reports;
  try {
    for (const auto& file : args.files)
      reports.push_back(audit::audit_listing(file, audit::dump_listing(*cuobjdump, file, time_limit), options));
  } catch (const audit::AuditInputError& e) {
    throw UsageError(e.what());
  }
  if (args.as_json)
    fmt::print("{}\n", audit::to_json(reports).dump(2));
  else
    fmt::print("{}", audit::format_table(reports));
  return audit::count_findings(reports) == 0 ? kExitClean : kExitFindings;
}

}  // namespace

void add_audit_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<AuditArguments>();
  auto* sub = app.add_subcommand(
      "audit", "List each kernel's synchronisation instructions per architecture in compiled CUDA "
               "binaries (via cuobjdump) and flag differences, missing PDL waits and empty bodies");
  sub->add_option("files", args->files, "Objects, executables or shared libraries with device code")
      ->required();
  sub->add_option("--pdl-kernels", args->pdl_kernels,
                  "Regular expression (searched in demangled names) of kernels launched with PDL");
  sub->add_flag("--pdl-all", args->pdl_all, "Every kernel is launched with PDL");
  sub->add_flag("--no-pdl-heuristic", args->no_pdl_heuristic,
                "Do not treat a kernel with a grid-dependency wait or trigger on some arch as PDL-launched");
  sub->add_flag("--json", args->as_json, "Print as JSON");
  sub->add_option("--timeout", args->timeout_s, "Seconds cuobjdump may run per file (default 300)");
  sub->callback([args, &exit_code] { exit_code = run_audit(*args); });
}

}  // namespace fusioncheck::cli
