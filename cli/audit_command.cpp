// `fusioncheck audit FILE...`: per-architecture synchronisation audit of compiled CUDA code.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "fusioncheck/audit/audit.hpp"
#include "fusioncheck/audit/release_diff.hpp"
#include "fusioncheck/audit/cuobjdump.hpp"
#include "fusioncheck/audit/inputs.hpp"
#include "fusioncheck/audit/installed.hpp"
#include "fusioncheck/audit/user_regex.hpp"
#include "fusioncheck/audit/wheel.hpp"
#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/options.hpp"
#include "fusioncheck/cli/paths.hpp"
#include "fusioncheck/files/json_file.hpp"

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
  std::string kernels;  // --kernels: only these are disassembled and audited
  std::string baseline;
  bool diff_releases = false;
  bool as_json = false;
  bool recursive = false;
  std::string arch_list = "sm_90+";  // --arch: comma-separated, or all
  std::vector<std::string> archs;    // arch_list, split (empty: all)
  std::string python;                // --python: what this Python has installed
  double timeout_s = 300.0;
  int jobs = 0;  // --jobs; 0: default_jobs()
  bool whole_files = false;
};

// The cores, at most 4: each cuobjdump run may hold ~300 MB (audit/README.md).
int default_jobs() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores, 1u, 4u));
}

// An unset option is no pattern; a set one must be a pattern that matches in bounded time.
std::optional<audit::UserRegex> regex_option(const char* option, const std::string& text) {
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

// One thing to audit: a file, or a member of a wheel (extracted only while it is audited).
struct AuditInput {
  std::string path;  // the file, or the wheel
  std::optional<audit::WheelMember> member;
  std::shared_ptr<const audit::Wheel> wheel;  // open for all its members
  std::string shown() const { return member ? path + ":" + member->name : path; }
};

// `file` audited under the name `shown` (a wheel's member is audited from a temporary copy).
audit::FileReport audit_file(const std::string& cuobjdump, const std::string& file,
                             const std::string& shown, const audit::DumpOptions& dump,
                             const audit::AuditOptions& options) {
  // A progress line only when cuobjdump takes long (a large library: ~1 s per MB of code per
  // core), so that quick runs and their errors stay one line.
  bool reported = false;
  audit::DumpProgress progress;
  progress.report = [&](double seconds, std::size_t ended, std::size_t known) {
    fmt::print(stderr, "audit: disassembling {}: {} of {} cuobjdump runs done ({:.0f} s)\n", shown,
               ended, known, seconds);
    reported = true;
  };
  const auto start = std::chrono::steady_clock::now();
  audit::Listing listing;
  try {
    listing = audit::dump_listing(cuobjdump, file, dump, progress);
  } catch (const audit::NoDeviceCodeError& e) {
    if (file == shown) throw;
    std::string message = e.what();
    message.replace(0, file.size(), shown);  // the messages start with the path
    throw audit::NoDeviceCodeError(message);
  }
  audit::FileReport report = audit::audit_listing(shown, std::move(listing), options);
  if (reported)
    fmt::print(stderr, "audit: {} disassembled in {:.1f} s\n", shown,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return report;
}

audit::FileReport audit_input(const std::string& cuobjdump, const AuditInput& input,
                              const audit::DumpOptions& dump, const audit::AuditOptions& options) {
  if (!input.member) return audit_file(cuobjdump, input.path, input.path, dump, options);
  audit::FileReport report;
  input.wheel->with_extracted_member(*input.member, [&](const std::string& copy) {
    report = audit_file(cuobjdump, copy, input.shown(), dump, options);
  });
  return report;
}

constexpr std::chrono::seconds kPythonTimeLimit{60};
constexpr std::chrono::seconds kInputsProgressEvery{10};

// --python: the files with device code in each folder of installed_places(), named on stderr.
std::vector<AuditInput> installed_inputs(const std::string& python) {
  std::vector<AuditInput> inputs;
  std::vector<audit::InstalledPlace> places;
  try {
    places = audit::installed_places(python, kPythonTimeLimit);
  } catch (const audit::AuditInputError& e) {
    throw UsageError(e.what());
  }
  std::string looked_for;
  for (const auto& name : audit::comm_kernel_packages())
    looked_for += (looked_for.empty() ? "" : ", ") + name;
  for (const auto& place : places) {
    std::vector<std::string> files;
    try {
      files = audit::files_in_folder(place.folder);
    } catch (const audit::AuditInputError&) {
      continue;  // a package without device code (flashinfer's Python, an empty cache)
    }
    fmt::print(stderr, "audit: {} ({}): {} file(s) that may hold device code\n", place.what,
               place.folder, files.size());
    for (auto& file : files) inputs.push_back({std::move(file), {}, {}});
  }
  if (inputs.empty())
    throw UsageError("--python " + python + ": it has none of " + looked_for +
                     " with device code installed, and no FlashInfer JIT cache with any");
  return inputs;
}

// The inputs: each file argument; a wheel's members that may hold device code; with
// --recursive the files of each folder argument that may hold it. All checked before any work.
std::vector<AuditInput> audit_inputs(const AuditArguments& args) {
  std::vector<AuditInput> inputs;
  if (!args.python.empty()) inputs = installed_inputs(args.python);
  for (const auto& arg : args.files) {
    std::error_code error;
    try {
      if (args.recursive && std::filesystem::is_directory(arg, error)) {
        for (auto& file : audit::files_in_folder(arg)) inputs.push_back({std::move(file), {}, {}});
        continue;
      }
      require_readable_file("", arg);
      if (audit::is_zip_archive(arg)) {
        const auto wheel = std::make_shared<const audit::Wheel>(arg);
        for (auto& member : wheel->device_code_members()) inputs.push_back({arg, member, wheel});
        continue;
      }
    } catch (const audit::AuditInputError& e) {
      throw UsageError(e.what());
    }
    inputs.push_back({arg, {}, {}});
  }
  return inputs;
}

// Audits every input; with several, one without device code is skipped (one line each,
// printed once something was audited) instead of ending the run.
std::vector<audit::FileReport> audit_files(const std::string& cuobjdump,
                                           const std::vector<AuditInput>& inputs,
                                           const audit::DumpOptions& dump,
                                           const audit::AuditOptions& options) {
  std::vector<audit::FileReport> reports;
  std::vector<std::string> skipped;
  // Many inputs (a wheel of thousands of cubins): one line every 10 s on how far the run is.
  const auto start = std::chrono::steady_clock::now();
  auto last_line = start;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& input = inputs[i];
    const auto now = std::chrono::steady_clock::now();
    if (now - last_line >= kInputsProgressEvery) {
      fmt::print(stderr, "audit: {} of {} files done ({:.0f} s)\n", i, inputs.size(),
                 std::chrono::duration<double>(now - start).count());
      last_line = now;
    }
    try {
      reports.push_back(audit_input(cuobjdump, input, dump, options));
    } catch (const audit::NoDeviceCodeError& e) {
      if (inputs.size() == 1) throw;
      skipped.push_back(e.what());
    }
  }
  const auto unmatched = std::count_if(skipped.begin(), skipped.end(), [](const std::string& why) {
    return why.ends_with(audit::kNoKernelMatches);
  });
  if (reports.empty() && unmatched > 0)
    throw audit::AuditInputError(fmt::format(
        "none of the {} inputs has a kernel that matches --kernels ({} hold no device code)",
        inputs.size(), inputs.size() - static_cast<std::size_t>(unmatched)));
  if (reports.empty())
    throw audit::AuditInputError("none of the " + std::to_string(inputs.size()) +
                                 " inputs holds device code (first: " + skipped.front() + ")");
  for (const auto& why : skipped)
    if (!why.ends_with(audit::kNoKernelMatches)) fmt::print(stderr, "audit: skipped {}\n", why);
  if (unmatched > 0)  // one line, not one per cubin of a library of thousands
    fmt::print(stderr, "audit: skipped {} file(s) without a kernel that matches --kernels\n",
               unmatched);
  return reports;
}

// A release's audit saved by `audit --json` (FILE.json) is read back, not disassembled.
bool is_saved_report(const std::string& file) { return file.ends_with(".json"); }

// The largest saved report read: NCCL's whole library is some tens of MB.
constexpr std::uintmax_t kMaxSavedReportBytes = std::uintmax_t{1} << 30;

std::vector<audit::FileReport> saved_report(const std::string& file) {
  require_readable_file("", file);
  std::string text;
  nlohmann::json json;
  std::string why = files::read_small_file(file, kMaxSavedReportBytes, text);
  if (why.empty()) why = files::parse_json(text, json);
  if (!why.empty()) throw UsageError(file + ": " + why);
  try {
    return audit::file_reports_from_json(json);
  } catch (const audit::AuditInputError& e) {
    throw UsageError(file + ": not an audit report: " + e.what());
  }
}

// cuobjdump, or the reason it is needed and how to get it.
std::string require_cuobjdump() {
  // $CUOBJDUMP names one binary: relative, it would depend on the folder the audit runs in.
  if (const char* env = std::getenv("CUOBJDUMP"); env != nullptr && *env != '\0' && *env != '/')
    throw UsageError(std::string("CUOBJDUMP=") + env + ": not an absolute path");
  const auto cuobjdump = audit::find_cuobjdump();
  if (!cuobjdump)
    throw UsageError(
        std::string(
            "cuobjdump not found ($CUOBJDUMP, PATH, /usr/local/cuda/bin); install it with: ") +
        audit::kCuobjdumpInstallHint);
  return *cuobjdump;
}

audit::DumpOptions make_dump_options(const AuditArguments& args,
                                     std::optional<audit::UserRegex> kernels) {
  audit::DumpOptions dump;
  dump.time_limit = std::chrono::milliseconds(static_cast<long long>(args.timeout_s * 1000));
  dump.archs = args.archs;
  dump.parallel = static_cast<std::size_t>(args.jobs > 0 ? args.jobs : default_jobs());
  dump.in_pieces = !args.whole_files;
  dump.kernels = std::move(kernels);
  return dump;
}

// --diff-releases: each FILE one release of the same package, oldest first: a binary or wheel
// (audited here) or the report `audit --json` saved of one (read back). Every saved report and
// every file is checked before the first is audited.
int run_release_diff(const AuditArguments& args, const audit::AuditOptions& options,
                     std::optional<audit::UserRegex> kernels) {
  std::vector<audit::Release> releases(args.files.size());
  bool any_binary = false;
  for (std::size_t i = 0; i < args.files.size(); ++i) {
    const std::filesystem::path file(args.files[i]);
    if (is_saved_report(args.files[i])) {
      releases[i] = {file.stem().string(), saved_report(args.files[i])};
      continue;
    }
    releases[i].label = file.filename().string();
    AuditArguments one = args;
    one.files = {args.files[i]};
    (void)audit_inputs(one);  // readable, and a wheel that opens
    any_binary = true;
  }
  if (any_binary) {
    const std::string cuobjdump = require_cuobjdump();
    const audit::DumpOptions dump = make_dump_options(args, std::move(kernels));
    try {
      for (std::size_t i = 0; i < args.files.size(); ++i) {
        if (is_saved_report(args.files[i])) continue;
        AuditArguments one = args;
        one.files = {args.files[i]};
        releases[i].files = audit_files(cuobjdump, audit_inputs(one), dump, options);
      }
    } catch (const audit::AuditInputError& e) {
      throw UsageError(e.what());
    }
  }
  const std::vector<audit::ReleaseStep> steps = audit::diff_releases(releases);
  if (args.as_json) fmt::print("{}\n", audit::to_json(steps).dump(2));
  else fmt::print("{}", audit::format_table(steps));
  return audit::count_findings(steps) == 0 ? kExitClean : kExitFindings;
}

int run_audit(const AuditArguments& args) {
  if (args.diff_releases) {
    if (args.files.size() < 2)
      throw UsageError("--diff-releases: give two releases or more, oldest first");
    if (!args.python.empty() || !args.baseline.empty())
      throw UsageError("--diff-releases compares the FILEs given; not with --python or --baseline");
  }
  for (const auto& arch : args.archs)
    if (!audit::is_arch_selector(arch))
      throw UsageError("--arch " + arch +
                       ": not an architecture (e.g. sm_90, sm_100a, sm_120a, sm_90+, or all)");
  const audit::AuditOptions options = make_options(args);
  std::optional<audit::UserRegex> kernels = regex_option("--kernels", args.kernels);
  if (args.diff_releases) return run_release_diff(args, options, std::move(kernels));
  // Every input first: a missing file is the user's mistake whether or not cuobjdump is here.
  const std::vector<AuditInput> inputs = audit_inputs(args);
  if (!args.baseline.empty()) require_readable_file("--baseline", args.baseline);
  const std::string cuobjdump = require_cuobjdump();
  const audit::DumpOptions dump = make_dump_options(args, std::move(kernels));
  std::vector<audit::FileReport> reports;
  try {
    reports = audit_files(cuobjdump, inputs, dump, options);
    if (!args.baseline.empty()) {
      const audit::FileReport baseline =
          audit_file(cuobjdump, args.baseline, args.baseline, dump, options);
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
         "Objects, executables, shared libraries, fatbins or cubins with device code, or Python "
         "wheels (.whl: their members with device code); folders with --recursive")
      ->type_name("FILE")
      ->default_str("");
  sub->add_option(
      "--pdl-kernels", args->pdl_kernels,
      "Regular expression (RE2 syntax, matched in time linear in the name; searched in demangled "
      "and mangled names, at most 256 characters) of kernels launched with PDL; default: none "
      "besides --pdl-all and the heuristic");
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
      "--kernels", args->kernels,
      "Regular expression (as --pdl-kernels) of the kernels to audit, e.g. "
      "'allreduce|lamport|cross_device_reduce|nccl'; the others are never disassembled (a "
      "file with none is skipped): a library of thousands of GEMM and attention cubins "
      "takes seconds; default: every kernel");
  sub->add_option(
         "--baseline", args->baseline,
         "Another build of the same kernels (e.g. the sm_90 build known to work): report the sync "
         "classes each kernel lacks against it, per source")
      ->type_name("FILE");
  sub->add_flag("--diff-releases", args->diff_releases,
                "Each FILE is one release of the same package, oldest first (a binary, a wheel, "
                "or FILE.json: the report `audit --json` saved of one): per kernel and "
                "architecture, the sync classes lost and gained from one release to the next (a "
                "lost wait, fence or acquire is a finding), and kernels gone or new");
  sub->add_flag("--json", args->as_json, "Print as JSON instead of a table");
  sub->add_flag("-r,--recursive", args->recursive,
                "Read folder arguments recursively: every ELF, fatbin or archive in them (an "
                "unpacked wheel); files without device code are skipped");
  sub->add_option("--arch", args->arch_list,
                  "Only this code: sm_N (with sm_Na and sm_Nf), sm_Na, sm_Nf, or sm_N+ (N and "
                  "newer), several separated by commas, or all. The default reads the "
                  "architectures with PDL, where the comm kernels' synchronisation forms "
                  "exist; a file without such code is skipped")
      ->type_name("ARCH[,ARCH...]|all")
      ->capture_default_str();
  sub->add_option("--jobs", args->jobs,
                  "cuobjdump runs at once (each holds one piece of the disassembly: about "
                  "300 MB at most); default: the cores, at most 4")
      ->check(CLI::Range(1, 64))
      ->default_str(std::to_string(default_jobs()));
  sub->add_flag("--whole-files", args->whole_files,
                "One cuobjdump run per file instead of one per fatbin entry and batch of "
                "functions: its memory then grows with the file's code (GBs for NCCL)");
  sub->add_option("--python", args->python,
                  "Audit what this Python has installed: the device code of the packages it can "
                  "import (sgl_kernel, vllm, flashinfer, flashinfer_jit_cache, flashinfer_cubin, "
                  "nvidia.nccl) and FlashInfer's JIT cache ($FLASHINFER_WORKSPACE_BASE or ~, "
                  ".cache/flashinfer)")
      ->type_name("PYTHON");
  sub->add_option("--timeout", args->timeout_s,
                  "Seconds each cuobjdump run may take (one piece of a file: a fatbin entry or "
                  "a batch of its functions; a file cuobjdump reads whole, an ar archive)")
      ->check(seconds_up_to(kMaxTimeout_s));
  sub->footer(
      "cuobjdump is looked for in $CUOBJDUMP, then PATH, then /usr/local/cuda/bin. Notes (e.g. "
      "pdl-trigger-only) are shown but do not set exit code 1.");
  sub->callback([args, sub, &exit_code] {
    refuse_empty_values(*sub);
    args->archs.clear();
    for (std::size_t start = 0; args->arch_list != "all" && start <= args->arch_list.size();) {
      const auto comma = std::min(args->arch_list.find(',', start), args->arch_list.size());
      args->archs.push_back(args->arch_list.substr(start, comma - start));
      start = comma + 1;
    }
    if (args->files.empty() && args->python.empty())
      throw UsageError("nothing to audit: give FILE... or --python PYTHON");
    exit_code = run_audit(*args);
  });
}

}  // namespace fusioncheck::cli
