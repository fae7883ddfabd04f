// `fusioncheck audit FILE...`: per-architecture synchronisation audit of compiled CUDA code.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "fusioncheck/audit/audit.hpp"
#include "fusioncheck/audit/cuobjdump.hpp"
#include "fusioncheck/audit/inputs.hpp"
#include "fusioncheck/audit/user_regex.hpp"
#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/options.hpp"
#include "fusioncheck/cli/paths.hpp"

namespace fusioncheck::cli {
namespace {

constexpr double kMaxTimeout_s = 86400;

struct AuditArguments {
  std::vector<std::string> files;
  std::string pdl_kernels;
  bool pdl_all = false;
  bool no_pdl_heuristic = false;
  bool no_known_pdl = false;
  std::string empty_kernels;
  std::string baseline;
  bool as_json = false;
  bool recursive = false;
  double timeout_s = 300.0;
};

// An unset option is no pattern; a set one must be a pattern that matches in bounded time.
std::optional<std::regex> regex_option(const char* option, const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    return audit::compile_user_regex(option, text);
  } catch (const audit::AuditInputError& e) {
    throw UsageError(e.what());
  }
}

audit::AuditOptions make_options(const AuditArguments& args) {
  audit::AuditOptions options;
  options.pdl_all = args.pdl_all;
  options.pdl_heuristic = !args.no_pdl_heuristic;
  options.known_pdl = !args.no_known_pdl;
  options.pdl_kernels = regex_option("--pdl-kernels", args.pdl_kernels);
  options.empty_kernels = regex_option("--empty-kernels", args.empty_kernels);
  return options;
}

audit::FileReport audit_file(const std::string& cuobjdump, const std::string& file,
                             std::chrono::milliseconds time_limit,
                             const audit::AuditOptions& options) {
  // A progress line only when cuobjdump takes long (a large binary: ~0.5 s per MB), so that
  // quick runs and their errors stay one line.
  bool reported = false;
  audit::DumpProgress progress;
  progress.report = [&](double seconds) {
    fmt::print(stderr, "audit: cuobjdump is still disassembling {} ({:.0f} s)\n", file, seconds);
    reported = true;
  };
  const auto start = std::chrono::steady_clock::now();
  audit::FileReport report = audit::audit_listing(
      file, audit::dump_listing(cuobjdump, file, time_limit, progress), options);
  if (reported)
    fmt::print(stderr, "audit: {} disassembled in {:.1f} s\n", file,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return report;
}

// The files to audit: each file argument, and with --recursive the files of each folder
// argument that may hold device code. Every input is checked before any work.
std::vector<std::string> input_files(const AuditArguments& args) {
  std::vector<std::string> files;
  for (const auto& arg : args.files) {
    std::error_code error;
    if (args.recursive && std::filesystem::is_directory(arg, error)) {
      try {
        const auto found = audit::files_in_folder(arg);
        files.insert(files.end(), found.begin(), found.end());
      } catch (const audit::AuditInputError& e) {
        throw UsageError(e.what());
      }
      continue;
    }
    require_readable_file("", arg);
    files.push_back(arg);
  }
  return files;
}

// Audits every file; with several, one without device code is skipped (one line each,
// printed once something was audited) instead of ending the run.
std::vector<audit::FileReport> audit_files(const std::string& cuobjdump,
                                           const std::vector<std::string>& files,
                                           std::chrono::milliseconds time_limit,
                                           const audit::AuditOptions& options) {
  std::vector<audit::FileReport> reports;
  std::vector<std::string> skipped;
  for (const auto& file : files) {
    try {
      reports.push_back(audit_file(cuobjdump, file, time_limit, options));
    } catch (const audit::NoDeviceCodeError& e) {
      if (files.size() == 1) throw;
      skipped.push_back(e.what());
    }
  }
  if (reports.empty())
    throw audit::AuditInputError("none of the " + std::to_string(files.size()) +
                                 " inputs holds device code (first: " + skipped.front() + ")");
  for (const auto& why : skipped) fmt::print(stderr, "audit: skipped {}\n", why);
  return reports;
}

int run_audit(const AuditArguments& args) {
  const audit::AuditOptions options = make_options(args);
  // Every input first: a missing file is the user's mistake whether or not cuobjdump is here.
  const std::vector<std::string> files = input_files(args);
  if (!args.baseline.empty()) require_readable_file("--baseline", args.baseline);
  const auto cuobjdump = audit::find_cuobjdump();
  if (!cuobjdump)
    throw UsageError(
        std::string(
            "cuobjdump not found ($CUOBJDUMP, PATH, /usr/local/cuda/bin); install it with: ") +
        audit::kCuobjdumpInstallHint);
  const auto time_limit = std::chrono::milliseconds(static_cast<long long>(args.timeout_s * 1000));
  std::vector<audit::FileReport> reports;
  try {
    reports = audit_files(*cuobjdump, files, time_limit, options);
    if (!args.baseline.empty()) {
      const audit::FileReport baseline = audit_file(*cuobjdump, args.baseline, time_limit, options);
      for (auto& report : reports)
        if (audit::compare_with_baseline(report, baseline) == 0)
          fmt::print(stderr, "audit: no kernel of {} is in the baseline {}\n", report.path,
                     args.baseline);
    }
  } catch (const audit::AuditInputError& e) {
    throw UsageError(e.what());
  }
  if (args.as_json) fmt::print("{}\n", audit::to_json(reports).dump(2));
  else fmt::print("{}", audit::format_table(reports));
  return audit::count_findings(reports) == 0 ? kExitClean : kExitFindings;
}

}  // namespace

void add_audit_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<AuditArguments>();
  auto* sub = app.add_subcommand(
      "audit",
      "List each kernel's synchronisation instructions per architecture in compiled CUDA "
      "binaries (via cuobjdump) and flag differences, missing PDL waits and empty bodies");
  sub->add_option(
         "files", args->files,
         "Objects, executables, shared libraries, fatbins or cubins with device code (readable "
         "regular files; folders with --recursive)")
      ->required()
      ->type_name("FILE")
      ->default_str("");
  sub->add_option(
      "--pdl-kernels", args->pdl_kernels,
      "Regular expression (ECMAScript, searched in demangled and mangled names, at most 256 "
      "characters, no quantified group holding a quantifier or |) of kernels launched "
      "with PDL; default: none besides --pdl-all and the heuristic");
  sub->add_flag("--pdl-all", args->pdl_all, "Every kernel is launched with PDL");
  sub->add_flag(
      "--no-pdl-heuristic", args->no_pdl_heuristic,
      "Do not treat a kernel with a grid-dependency wait on some arch as PDL-launched (nor note "
      "kernels that only trigger)");
  sub->add_flag(
      "--no-known-pdl", args->no_known_pdl,
      "Do not treat the built-in list of PDL-launched kernels (FlashInfer's, TRT-LLM's, ours; "
      "audit/README.md) as PDL-launched");
  sub->add_option(
      "--empty-kernels", args->empty_kernels,
      "Regular expression (as --pdl-kernels) of kernels meant to be empty (never reported as "
      "empty-body); default: none");
  sub->add_option(
         "--baseline", args->baseline,
         "Another build of the same kernels (e.g. the sm_90 build known to work): report the sync "
         "classes each kernel lacks against it, per source")
      ->type_name("FILE");
  sub->add_flag("--json", args->as_json, "Print as JSON instead of a table");
  sub->add_flag("-r,--recursive", args->recursive,
                "Read folder arguments recursively: every ELF, fatbin or archive in them (an "
                "unpacked wheel); files without device code are skipped");
  sub->add_option("--timeout", args->timeout_s, "Seconds cuobjdump may run per file")
      ->check(seconds_up_to(kMaxTimeout_s));
  sub->footer(
      "cuobjdump is looked for in $CUOBJDUMP, then PATH, then /usr/local/cuda/bin. Notes (e.g. "
      "pdl-trigger-only) are shown but do not set exit code 1.");
  sub->callback([args, sub, &exit_code] {
    refuse_empty_values(*sub);
    exit_code = run_audit(*args);
  });
}

}  // namespace fusioncheck::cli
