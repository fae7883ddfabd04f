// The `gpu smoke|check|kill-table|bench|kernels` subcommands: the GPU jobs, one process per
// rank under mpirun. The jobs themselves are the gpu library's (mpi_launch/); this file parses
// the options, chooses the kernel from the registry, runs a job under the rank watchdog and
// maps its result and errors to exit codes.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/options.hpp"
#include "fusioncheck/cli/paths.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_check.hpp"
#include "fusioncheck/gpu/gpu_report.hpp"
#include "fusioncheck/gpu/gpu_runs.hpp"
#include "fusioncheck/gpu/known_findings.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/mpi/mpi_comm.hpp"
#include "fusioncheck/mpi/rank_watchdog.hpp"
#include "gpu_cli.hpp"

namespace fusioncheck::cli {
namespace {

using Registry = std::shared_ptr<const gpu::KernelRegistry>;

struct GpuCliOptions {
  Registry registry;
  std::string program;  // "fusioncheck gpu": how users start these commands
  int timeout_s = 60;   // bound on every MPI wait
  gpu::SmokeOptions smoke;
  gpu::BenchOptions bench;
  gpu::WaitProfileOptions profile;
  bool wait_profile = false;  // gpu bench --wait-profile
  gpu::CheckOptions check;
  std::string kernel = "ours";  // a registered family's value
  std::string compare;          // gpu bench --compare: empty, or a comparable family's value
  std::string mutant = "none";
  std::vector<std::string> mutants;  // kill table: empty = every compiled kernel mutant
  std::string json_out;
  std::string junit_out;
  std::string table_out;
  std::string known_path;  // --known: a ledger of known findings
  bool strict = false;     // --strict
};

// Every job runs with a watchdog: a peer process on this host that vanishes, or a main
// thread stuck in one phase past the MPI timeout (plus a margin, so that MPI timeouts report
// first), ends the rank with a diagnosis. A launcher's SIGTERM is answered the same way.
template <typename Job> int run_on_ranks(const GpuCliOptions& options, Job job) {
  gpu::load_modules_eagerly_before_cuda();
  gpu::hardware_queues_before_cuda();
  if (options.check.kernel.share_sms || options.smoke.kernel.share_sms ||
      (options.bench.compare && options.bench.compare->share_sms) ||
      (options.profile.kernel && options.profile.kernel->share_sms))
    gpu::share_sms_before_cuda();
  mpi::MpiComm comm(nullptr, nullptr, std::chrono::seconds(options.timeout_s));
  const std::vector<mpi::PeerProcess> peers = mpi::peers_on_this_host(comm);
  mpi::install_terminate_report(comm.rank(), peers);
  const int rank = comm.rank();
  mpi::RankWatchdog watchdog(
      rank, peers, std::chrono::seconds(options.timeout_s + 5),
      [rank](const std::string& why) { mpi::RankWatchdog::exit_with_message(rank, why); });
  try {
    const int rc = job(comm);
    comm.barrier("the end of the job on every rank");  // no rank leaves while a peer still works
    watchdog.stop();
    return rc;
  } catch (const gpu::BadInput& e) {
    mpi::quiet_terminate_report(kExitBadInput);
    throw UsageError(e.what());  // every rank sees the same bad input: exit 2 on each
  } catch (const kernels::InvalidLaunch& e) {
    mpi::quiet_terminate_report(kExitBadInput);
    throw UsageError(e.what());
  } catch (const mpi::MpiTimeout& e) {
    const std::string gone = mpi::vanished_peers(peers);
    fmt::print(stderr, "{}: rank {}: {}{}\n", options.program, rank, e.what(),
               gone.empty() ? "" : "; vanished: " + gone);
    std::fflush(stderr);
    _exit(kExitFindings);  // MPI_Finalize would wait for the missing peer
  } catch (const kernels::KernelHang& e) {
    fmt::print(stderr, "{}: rank {}: kernel hang: {}\n", options.program, rank, e.what());
    comm.abort(kExitFindings);
  } catch (const gpu::RunFailure& e) {
    // A report or replay file that could not be written: the run's findings are lost.
    fmt::print(stderr, "{}: error: rank {}: {}\n", options.program, rank, e.what());
    std::fflush(stderr);
    _exit(kExitInternalError);
  } catch (const std::exception& e) {
    // Any other error of one rank (CUDA, memory, a file): say so and leave at once;
    // unwinding into MPI_Finalize would wait for peers that are still inside a collective.
    fmt::print(stderr, "{}: rank {}: {}\n", options.program, rank, e.what());
    std::fflush(stderr);
    _exit(kExitFindings);
  }
  return kExitInternalError;  // not reached: abort() does not return
}

// The kernel a job drives; one this build cannot run is bad input, with the family's reason.
gpu::KernelChoice choose_kernel(const GpuCliOptions& o, const std::string& option,
                                const std::string& value) {
  try {
    return o.registry->choose(value);
  } catch (const gpu::BadInput& e) {
    throw UsageError(option + " " + value + ": " + e.what());
  } catch (const kernels::InvalidLaunch& e) {
    throw UsageError(option + " " + value + ": " + e.what());
  }
}

// A --mutant id of the chosen family, refused before MPI starts when the family does not
// register it or this build lacks it (which of ours were compiled is checked on the GPU).
gpu::MutantId family_mutant(const GpuCliOptions& o, const std::string& id) {
  try {
    return o.registry->mutant_of(o.kernel, id);
  } catch (const gpu::BadInput& e) {
    throw UsageError("--mutant " + id + ": " + e.what());
  }
}

// --known: the ledger is read and checked before MPI starts (bad input: exit 2 on every rank).
std::shared_ptr<const gpu::KnownFindings> load_known(const GpuCliOptions& o) {
  if (o.known_path.empty()) return nullptr;
  std::vector<std::string> families;
  for (const std::string& name : o.registry->names())
    if (name.back() != '@') families.push_back(name);
  try {
    return std::make_shared<const gpu::KnownFindings>(
        gpu::read_known_findings(o.known_path, families));
  } catch (const gpu::BadInput& e) {
    throw UsageError(e.what());
  }
}

void add_known_options(CLI::App* cmd, GpuCliOptions& o) {
  auto* known = cmd->add_option(
      "--known", o.known_path,
      "A ledger of known findings (JSON; docs/usage.md): a failing case that matches an entry is "
      "reported as known and the run goes on; exit 1 only on a new finding");
  cmd->add_flag("--strict", o.strict,
                "With --known: an entry whose trigger was drawn but that never failed (fixed "
                "upstream?) fails the run too")
      ->needs(known);
}

void write_reports(const GpuCliOptions& o, const std::string& suite,
                   const std::vector<gpu::CheckResult>& runs, const gpu::GpuPlacement* kill_table) {
  if (!o.junit_out.empty()) gpu::write_file(o.junit_out, gpu::junit_xml(suite, runs, kill_table));
  if (o.json_out.empty()) return;
  if (kill_table == nullptr) {
    gpu::write_file(o.json_out, gpu::to_json(runs.front()).dump(1) + "\n");
    return;
  }
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : runs) j.push_back(gpu::to_json(r));
  gpu::write_file(o.json_out, j.dump(1) + "\n");
}

int run_check_command(mpi::MpiComm& comm, const GpuCliOptions& o) {
  const gpu::CheckJob job = gpu::run_check_job(comm, o.check);
  const gpu::CheckResult& r = job.result;
  if (comm.rank() == 0) {
    fmt::print("{}\n{}\n", gpu::summary_line(r, comm.size()), gpu::time_breakdown(r));
    if (const std::string note = gpu::wait_margin_note(r); !note.empty()) fmt::print("{}\n", note);
    for (const auto& [why, n] : r.refusals) fmt::print("  refused {} cases: {}...\n", n, why);
    if (!r.known.empty()) fmt::print("{}\n", gpu::known_findings_line(r));
    if (r.failed) fmt::print("{}", gpu::failure_report(r, job.placement, comm.size()));
    write_reports(o, "fusioncheck.gpu.check", {r}, nullptr);
  }
  return r.failed ? kExitFindings : kExitClean;
}

int run_kill_table_command(mpi::MpiComm& comm, const GpuCliOptions& o) {
  gpu::KillTableOptions options;
  options.check = o.check;
  for (const auto& id : o.mutants) options.mutants.emplace_back(id);  // checked before MPI
  const gpu::KillTableResult table = gpu::run_kill_table(comm, options);
  if (comm.rank() == 0) {
    const std::string text =
        gpu::kill_table_markdown(table.runs, table.setup, table.placement, table.not_built);
    fmt::print("\n{}", text);
    if (!o.table_out.empty()) gpu::write_file(o.table_out, text);
    write_reports(o, "fusioncheck.gpu.kill_table", table.runs, &table.placement);
  }
  // The run fails on a false positive, or on a survivor that this setup can kill.
  return table.unexpected ? kExitFindings : kExitClean;
}

// A registered family's value; the error names the families (the registry's own message).
CLI::Validator kernel_value(Registry registry) {
  return CLI::Validator(
      [registry](std::string& value) -> std::string {
        if (registry->find(value) != nullptr) return "";
        try {
          (void)registry->choose(value);
        } catch (const std::exception& e) {
          return e.what();
        }
        return "";
      },
      "");
}

std::string comparable_names(const gpu::KernelRegistry& registry) {
  std::string names;
  for (const std::string& name : registry.names())
    if (registry.find(name) != nullptr && registry.find(name)->comparable)
      names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

// A family that may be timed beside ours.
CLI::Validator comparable_value(Registry registry) {
  return CLI::Validator(
      [registry](std::string& value) -> std::string {
        const gpu::KernelFamily* family = registry->find(value);
        if (family != nullptr && family->comparable) return "";
        return "'" + value +
               "' cannot be timed beside ours (comparable kernels: " + comparable_names(*registry) +
               ")";
      },
      "");
}

// Hidden sizes: the kernels move rows in 16-element vectors. Runs after integer_in, which
// has already refused what is not an integer.
CLI::Validator multiple_of_16() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        int value = 0;
        const auto [end, error] = std::from_chars(input.data(), input.data() + input.size(), value);
        if (error != std::errc{} || value % 16 == 0) return "";
        return input + " is not a multiple of 16";
      },
      "");
}

CLI::Option* add_kernel_option(CLI::App* cmd, GpuCliOptions& o) {
  return cmd
      ->add_option("--kernel", o.kernel,
                   "The kernel under test: " + o.registry->help() + " (`" + o.program +
                       " kernels` lists them)")
      ->check(kernel_value(o.registry));
}

// Each subcommand takes the MPI timeout too, so that it shows in its help and may follow it.
void add_timeout_option(CLI::App* cmd, GpuCliOptions& o) {
  cmd->add_option("--timeout", o.timeout_s, "Seconds any MPI wait may take")
      ->check(integer_in<int>(1, 3600));
}

// Two outputs of one run in one file: the second would overwrite the first.
void refuse_shared_outputs(const std::vector<std::pair<const char*, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [a, pa] = outputs[i];
      const auto& [b, pb] = outputs[j];
      if (pa.empty() || pb.empty()) continue;
      std::error_code error;
      if (pa == pb || std::filesystem::equivalent(pa, pb, error))
        throw UsageError(
            fmt::format("{} and {} name the same file ({}): give each its own", a, b, pb));
    }
}

// Output and input paths, checked before any rank starts work.
void check_paths(const GpuCliOptions& o) {
  refuse_shared_outputs({{"--json", o.json_out},
                         {"--junit", o.junit_out},
                         {"--out", o.table_out},
                         {"--json", o.smoke.json_out},
                         {"--json", o.bench.json_out}});
  if (!o.json_out.empty()) require_output_file("--json", o.json_out);
  if (!o.junit_out.empty()) require_output_file("--junit", o.junit_out);
  if (!o.table_out.empty()) require_output_file("--out", o.table_out);
  if (!o.smoke.json_out.empty()) require_output_file("--json", o.smoke.json_out);
  if (!o.bench.json_out.empty()) require_output_file("--json", o.bench.json_out);
  if (!o.check.replay_file.empty()) require_readable_file("--replay", o.check.replay_file);
}

void add_check_options(CLI::App* cmd, GpuCliOptions& o) {
  gpu::CheckOptions& c = o.check;
  cmd->add_option("--seed", c.seed, "RapidCheck seed (every rank must agree)")->check(any_seed());
  cmd->add_option("--cases", c.cases, "Cases to run")->check(integer_in<int>(1, 100000000));
  cmd->add_option("--max-tokens", c.limits.max_tokens, "Largest token count drawn")
      ->check(integer_in<int>(1, gpu::CaseLimits::kMaxTokens));
  cmd->add_option("--max-hidden", c.limits.max_hidden,
                  "Largest hidden size drawn (a multiple of 16)")
      ->check(integer_in<int>(16, gpu::CaseLimits::kMaxHidden))
      ->check(multiple_of_16());
  cmd->add_option("--hidden", c.hidden_sizes,
                  "Draw the hidden size from these (a model's, e.g. 2880,4096,7168) instead of "
                  "random multiples of 16 up to --max-hidden")
      ->delimiter(',')
      ->check(integer_in<int>(16, gpu::CaseLimits::kMaxHidden))
      ->check(multiple_of_16());
  cmd->add_option("--max-elems", c.limits.max_elems,
                  "Largest tokens x hidden of one call (>= --max-hidden; unless given, raised to "
                  "reach a launch variant's deeper path where the kernel has one)")
      ->check(integer_in<std::int64_t>(16, gpu::CaseLimits::kMaxElems))
      ->each([&c](const std::string&) { c.limits.max_elems_chosen = true; });
  cmd->add_option("--max-calls", c.limits.max_calls, "Longest call sequence per case")
      ->check(integer_in<int>(1, gpu::kMaxCallsPerCase));
  cmd->add_flag_callback(
      "--no-delays", [&c] { c.delays = false; },
      "Do not draw seeded injected delays in the kernels, nor a held rank (one rank paused "
      "between two protocol steps of a call)");
  cmd->add_flag_callback(
      "--no-pdl-producer", [&c] { c.pdl_producer = false; },
      "Do not draw PDL producers (kernels writing a call's inputs late, right before it)");
  cmd->add_option(
         "--twoshot-percent", c.twoshot_percent,
         "Share of two-shot calls in cases with 16-bit Lamport buffers (kill-table: mutants of the "
         "two-shot kernel alone, and a control, run at " +
             std::to_string(gpu::kTwoShotMutantPercent) + ")")
      ->check(integer_in<int>(0, 100));
  cmd->add_option("--json", o.json_out, "Write the result as JSON (rank 0)");
  cmd->add_option("--junit", o.junit_out, "Write JUnit XML (rank 0)");
  add_known_options(cmd, o);
  add_timeout_option(cmd, o);
}

void add_smoke(CLI::App& gpu, std::shared_ptr<GpuCliOptions> o, int& exit_code) {
  auto* smoke = gpu.add_subcommand(
      "smoke", "Every kernel and pattern once vs the reference, invariants after every call");
  smoke->add_option("--seed", o->smoke.seed, "Input seed")->check(any_seed());
  smoke->add_option("--tokens", o->smoke.tokens, "Token counts, cycled call by call")
      ->check(integer_in<int>(1, gpu::CaseLimits::kMaxTokens));
  smoke->add_option("--hidden", o->smoke.hidden, "Hidden sizes (multiples of 16)")
      ->check(integer_in<int>(16, gpu::CaseLimits::kMaxHidden))
      ->check(multiple_of_16());
  smoke
      ->add_option("--calls-per-case", o->smoke.calls_per_case,
                   "Calls issued back to back in each case, with changing token counts")
      ->check(integer_in<int>(1, gpu::kMaxCallsPerCase));
  smoke->add_flag_callback(
      "--no-pdl-producer", [o] { o->smoke.pdl_producer = false; },
      "No PDL producers before the calls (every other PDL call has one by default)");
  smoke->add_option("--json", o->smoke.json_out, "Write per-case results (rank 0)");
  add_kernel_option(smoke, *o);
  add_known_options(smoke, *o);
  add_timeout_option(smoke, *o);
  smoke->callback([o, smoke, &exit_code] {
    refuse_empty_values(*smoke);
    check_paths(*o);
    o->smoke.kernel = choose_kernel(*o, "--kernel", o->kernel);
    o->smoke.known = load_known(*o);
    o->smoke.strict = o->strict;
    exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) {
      return gpu::run_smoke(c, o->smoke).fails(o->smoke.strict) ? kExitFindings : kExitClean;
    });
  });
}

void add_check(CLI::App& gpu, std::shared_ptr<GpuCliOptions> o, int& exit_code) {
  auto* check = gpu.add_subcommand(
      "check", "The property suite: RapidCheck cases vs the reference and invariants");
  add_check_options(check, *o);
  check->add_option(
      "--mutant", o->mutant,
      "Run a negative control of the kernel family (fusioncheck mutants --kernel NAME)");
  auto* replay =
      check->add_option("--replay", o->check.replay_file,
                        "Run the case in this file (written by a failing run); --max-* size the "
                        "buffers for it");
  check
      ->add_option("--replay-runs", o->check.replay_runs,
                   "Runs of the replayed case, stopping at the first that fails (a race may "
                   "need several)")
      ->check(integer_in<int>(1, 100000))
      ->needs(replay);
  check
      ->add_option("--replay-out", o->check.replay_out,
                   "Where a failing run writes its minimal case")
      ->excludes(replay);
  check
      ->add_option(
          "--variant", o->check.variant,
          "Draw only this launch variant of the kernel, numbered from 0 (flashinfer: 0 nvcc defaults, 1 FlashInfer's JIT flags)")
      ->check(integer_in<int>(0, gpu::kMaxVariant))
      ->excludes(replay);
  check
      ->add_flag("--shrink-known", o->check.shrink_known,
                 "With --known: shrink the first case of each known finding before its replay "
                 "is written (else it is written as drawn; the ledger's writeup holds the "
                 "minimal case)")
      ->needs("--known")
      ->excludes(replay);
  check
      ->add_option("--two-streams", o->check.two_streams_percent,
                   "Share of cases issued from two streams that nothing orders (two users of one "
                   "communicator); a failing one is a finding (default 0)")
      ->check(integer_in<int>(0, 100));
  add_kernel_option(check, *o);
  check->callback([o, check, &exit_code] {
    // The file holds the whole case: what draws cases has nothing to do (--max-* still size
    // the buffers, and the file is checked against them).
    if (!o->check.replay_file.empty())
      refuse_options(*check,
                     {"--seed", "--cases", "--no-delays", "--no-pdl-producer", "--twoshot-percent",
                      "--hidden", "--two-streams"},
                     "with --replay", "the replay file holds the whole case");
    refuse_empty_values(*check);
    check_paths(*o);
    if (!o->check.replay_file.empty()) {
      try {
        (void)gpu::read_replay_case(
            o->check.replay_file);  // a bad file is refused before MPI starts
      } catch (const gpu::BadInput& e) {
        throw UsageError(e.what());
      }
    }
    o->check.kernel = choose_kernel(*o, "--kernel", o->kernel);
    if (o->check.replay_file.empty()) {
      require_output_file("--replay-out", o->check.replay_out);
      refuse_shared_outputs({{"--replay-out", o->check.replay_out},
                             {"--json", o->json_out},
                             {"--junit", o->junit_out}});
    }
    o->check.mutant = family_mutant(*o, o->mutant);
    o->check.known = load_known(*o);
    o->check.strict = o->strict;
    exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) { return run_check_command(c, *o); });
  });
}

void add_kill_table(CLI::App& gpu, std::shared_ptr<GpuCliOptions> o, int& exit_code) {
  auto* table =
      gpu.add_subcommand("kill-table", "Every kernel mutant: killed? by which check? how fast?");
  add_check_options(table, *o);
  table->add_option(
      "--mutants", o->mutants,
      "Mutant ids of the kernel family (default: every one this build compiled, plus none)");
  table->add_option("--out", o->table_out, "Write the table as Markdown (rank 0)");
  table
      ->add_option("--variant", o->check.variant,
                   "Draw only this launch variant of the kernel in every run, numbered from 0")
      ->check(integer_in<int>(0, gpu::kMaxVariant));
  add_kernel_option(table, *o);
  table->callback([o, table, &exit_code] {
    refuse_empty_values(*table);
    check_paths(*o);
    o->check.kernel = choose_kernel(*o, "--kernel", o->kernel);
    for (const auto& id : o->mutants) family_mutant(*o, id);  // before MPI starts
    o->check.known = load_known(*o);
    o->check.strict = o->strict;
    exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) { return run_kill_table_command(c, *o); });
  });
}

// --wait-profile: one configuration, our one-shot kernel alone.
void run_wait_profile_mode(const CLI::App& bench, std::shared_ptr<GpuCliOptions> o,
                           int& exit_code) {
  refuse_options(bench,
                 {"--compare", "--graph-calls", "--repeats", "--no-eager", "--iters", "--warmup",
                  "--allreduce", "--cluster", "--no-pdl", "--trigger", "--pattern"},
                 "with --wait-profile", "it profiles the one-shot kernel at one configuration");
  if (o->bench.tokens.size() != 1 && bench.count("--tokens") > 0)
    throw UsageError("--wait-profile profiles one configuration: give one --tokens value");
  if (o->bench.hidden.size() != 1 && bench.count("--hidden") > 0)
    throw UsageError("--wait-profile profiles one configuration: give one --hidden value");
  if (bench.count("--delay-us") > 0 && bench.count("--delay-rank") == 0)
    throw UsageError("--delay-us needs --delay-rank (which rank starts late)");
  if (bench.count("--delay-rank") > 0 && bench.count("--delay-us") == 0)
    throw UsageError("--delay-rank needs --delay-us (how late)");
  if (bench.count("--tokens") > 0) o->profile.tokens = o->bench.tokens[0];
  if (bench.count("--hidden") > 0) o->profile.hidden = o->bench.hidden[0];
  o->profile.json_out = o->bench.json_out;
  if (bench.count("--kernel") > 0 && o->kernel != "ours") {
    gpu::KernelChoice choice = choose_kernel(*o, "--kernel", o->kernel);
    if (!choice.make_poll_profiled)
      throw UsageError("--kernel " + o->kernel +
                       ": it has no build that times its polls (--wait-profile profiles ours, or "
                       "a kernel that has one)");
    o->profile.kernel = std::move(choice);
    exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) {
      gpu::run_poll_profile(c, o->profile);
      return kExitClean;
    });
    return;
  }
  if (bench.count("--variant") > 0)
    throw UsageError("--variant: our kernel's profile has one build (give --kernel for another)");
  exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) {
    gpu::run_wait_profile(c, o->profile);
    return kExitClean;
  });
}

void add_bench_paths(CLI::App* bench, std::shared_ptr<GpuCliOptions> o) {
  static const std::map<std::string, gpu::BaselineAllreduce> allreduce{
      {"auto", gpu::BaselineAllreduce::automatic},
      {"nccl", gpu::BaselineAllreduce::nccl},
      {"ours", gpu::BaselineAllreduce::ours}};
  bench
      ->add_option_function<std::string>(
          "--allreduce", [o](const std::string& v) { o->bench.allreduce = allreduce.at(v); },
          "The unfused baseline's allreduce: auto (NCCL with one rank per GPU, else ours), nccl or ours")
      ->check(CLI::IsMember({"auto", "nccl", "ours"}))
      ->default_str("auto");
  static const std::map<std::string, kernels::ClusterMode> cluster{
      {"auto", kernels::ClusterMode::automatic},
      {"cluster", kernels::ClusterMode::force_cluster},
      {"no-cluster", kernels::ClusterMode::force_no_cluster}};
  bench
      ->add_option_function<std::string>(
          "--cluster", [o](const std::string& v) { o->bench.cluster = cluster.at(v); },
          "One-shot RMSNorm path: auto, cluster or no-cluster")
      ->check(CLI::IsMember({"auto", "cluster", "no-cluster"}))
      ->default_str("auto");
  static const std::map<std::string, kernels::Pattern> pattern{
      {"residual-rmsnorm", kernels::Pattern::residual_rmsnorm},
      {"allreduce", kernels::Pattern::allreduce}};
  bench
      ->add_option_function<std::string>(
          "--pattern", [o](const std::string& v) { o->bench.pattern = pattern.at(v); },
          "What every call computes: residual-rmsnorm (fused; with the unfused baseline) or "
          "allreduce (the allreduce alone, e.g. for --compare flashinfer-pcie)")
      ->check(CLI::IsMember({"residual-rmsnorm", "allreduce"}))
      ->default_str("residual-rmsnorm");
  bench->add_flag_callback(
      "--no-pdl", [o] { o->bench.use_pdl = false; }, "Launch the fused kernels without PDL");
  static const std::map<std::string, kernels::Trigger> trigger{{"end", kernels::Trigger::at_end},
                                                               {"early", kernels::Trigger::early}};
  bench
      ->add_option_function<std::string>(
          "--trigger", [o](const std::string& v) { o->bench.trigger = trigger.at(v); },
          "The fused kernels' PDL trigger: end (outputs visible at the trigger) or early (right after the "
          "grid-dependency wait; for consumers that wait before reading, as the next call does)")
      ->check(CLI::IsMember({"end", "early"}))
      ->default_str("end");
}

void add_wait_profile_options(CLI::App* bench, std::shared_ptr<GpuCliOptions> o) {
  bench->add_flag(
      "--wait-profile", o->wait_profile,
      "Profile one configuration (one --tokens, one --hidden; default 1 x 4096): per rank, block "
      "and peer, time polling vs working (bf16 one-shot, 2 or 4 ranks)");
  // Unset by default (no rank starts late): the help shows that, not the internal -1 and 0.
  bench
      ->add_option("--delay-rank", o->profile.delay_rank,
                   "--wait-profile: this rank starts every call late")
      ->check(integer_in<int>(0, 15))
      ->default_str("none");
  // Below the kernels' ~1 s poll budget, so that the peers' waits end in the profile.
  bench->add_option("--delay-us", o->profile.delay_us, "--wait-profile: how late, in microseconds")
      ->check(integer_in<int>(1, 500000))
      ->default_str("none");
  bench->add_option("--profile-calls", o->profile.calls, "--wait-profile: calls averaged")
      ->check(integer_in<int>(1, 100000));
  add_kernel_option(bench, *o)->description(
      "--wait-profile: the kernel profiled, ours or one with a build that times its "
      "polls (flashinfer-pcie)");
  bench
      ->add_option("--variant", o->profile.variant,
                   "--wait-profile --kernel: the launch variant profiled, numbered from 0")
      ->check(integer_in<int>(0, gpu::kMaxVariant));
}

void add_bench(CLI::App& gpu, std::shared_ptr<GpuCliOptions> o, int& exit_code) {
  auto* bench = gpu.add_subcommand(
      "bench",
      "Latency: one-shot, two-shot, automatic choice and unfused, side by side (graph-timed and eager); "
      "or, with --wait-profile, where one configuration's time goes");
  bench->add_option("--tokens", o->bench.tokens, "Token counts")
      ->check(integer_in<int>(1, gpu::CaseLimits::kMaxTokens));
  bench->add_option("--hidden", o->bench.hidden, "Hidden sizes (multiples of 16)")
      ->check(integer_in<int>(16, gpu::CaseLimits::kMaxHidden))
      ->check(multiple_of_16());
  bench->add_option("--warmup", o->bench.warmup, "Untimed calls before each point")
      ->check(integer_in<int>(0, 100000));
  bench
      ->add_option("--iters", o->bench.iters,
                   "Eager: timed calls per point; the median is reported")
      ->check(integer_in<int>(100, 100000));
  // At most 1000: the other kernel's host-bounded wait (2 s) covers one graph launch.
  bench
      ->add_option("--graph-calls", o->bench.graph_calls, "Graph: calls captured in one CUDA graph")
      ->check(integer_in<int>(1, 1000));
  bench
      ->add_option("--repeats", o->bench.repeats,
                   "Graph: timed launches per point (median, p10, p90)")
      ->check(integer_in<int>(5, 10000));
  bench->add_flag_callback(
      "--no-eager", [o] { o->bench.eager = false; }, "Skip the eager column");
  add_wait_profile_options(bench, o);
  add_bench_paths(bench, o);
  bench->add_option("--json", o->bench.json_out, "Write the table (rank 0)");
  // No default: without it, ours is timed alone.
  bench
      ->add_option(
          "--compare", o->compare,
          "Time another kernel beside ours in the same run: " + comparable_names(*o->registry))
      ->check(comparable_value(o->registry))
      ->default_str("");
  add_timeout_option(bench, *o);
  bench->callback([o, bench, &exit_code] {
    refuse_empty_values(*bench);
    check_paths(*o);
    if (o->wait_profile) return run_wait_profile_mode(*bench, o, exit_code);
    refuse_options(*bench, {"--delay-rank", "--delay-us", "--profile-calls"},
                   "without --wait-profile", "they set up the profile");
    refuse_options(*bench, {"--kernel", "--variant"}, "without --wait-profile",
                   "bench times ours; --compare times another kernel beside it");
    if (o->bench.pattern == kernels::Pattern::allreduce)
      refuse_options(*bench, {"--allreduce", "--cluster"}, "with --pattern allreduce",
                     "they choose the unfused baseline's allreduce and the RMSNorm path");
    if (!o->compare.empty()) o->bench.compare = choose_kernel(*o, "--compare", o->compare);
    exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) {
      gpu::run_bench(c, o->bench);
      return kExitClean;
    });
  });
}

// Lists the registered families: cheap, no MPI, no GPU.
void add_kernels(CLI::App& gpu, std::shared_ptr<GpuCliOptions> o, int& exit_code) {
  auto* kernels = gpu.add_subcommand("kernels", "List the kernels --kernel and --compare may name");
  kernels->callback([o, &exit_code] {
    for (const std::string& name : o->registry->names()) {
      const gpu::KernelFamily& family = *o->registry->find(name);
      const std::string shown = name.back() == '@' ? name + "..." : name;
      std::string missing;  // a family registered in every build, whose adapter this one lacks
      try {
        if (name.back() != '@') (void)family.choose(name);
      } catch (const gpu::BadInput& e) {
        missing = std::string(" [not in this build: ") + e.what() + "]";
      } catch (const kernels::InvalidLaunch& e) {
        missing = std::string(" [not in this build: ") + e.what() + "]";
      }
      fmt::print("{:<20} {:<14} {}{}{}\n", shown, family.protocol, family.description,
                 family.comparable ? " (bench --compare)" : "", missing);
    }
    exit_code = kExitClean;
  });
}

}  // namespace

void add_gpu_subcommands(CLI::App& gpu, std::shared_ptr<const gpu::KernelRegistry> registry,
                         const std::string& program, int& exit_code) {
  auto o = std::make_shared<GpuCliOptions>();
  o->registry = std::move(registry);
  o->program = program;
  // A registry without ours defaults to its first family that needs no suffix.
  if (o->registry->find("ours") == nullptr)
    for (const std::string& name : o->registry->names())
      if (name.back() != '@') {
        o->kernel = name;
        break;
      }
  gpu.require_subcommand(1);
  gpu.add_option("--timeout", o->timeout_s,
                 "Seconds any MPI wait may take (each subcommand takes it too)")
      ->check(integer_in<int>(1, 3600));
  add_smoke(gpu, o, exit_code);
  add_check(gpu, o, exit_code);
  add_kill_table(gpu, o, exit_code);
  add_bench(gpu, o, exit_code);
  add_kernels(gpu, o, exit_code);
}

}  // namespace fusioncheck::cli
