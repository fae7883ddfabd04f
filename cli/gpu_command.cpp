// `fusioncheck gpu smoke|check|kill-table|bench`: the GPU jobs, one process per rank under
// mpirun. Every MPI wait is bounded; a rank that times out names what it waited for and, on
// one host, which peer process vanished, then exits non-zero.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/mpi/mpi_comm.hpp"
#include "fusioncheck/mpi/rank_watchdog.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/gpu_check.hpp"
#include "fusioncheck/gpu/gpu_report.hpp"
#include "fusioncheck/gpu/gpu_runs.hpp"
#include "fusioncheck/gpu/gpu_session.hpp"

namespace fusioncheck::cli {
namespace {

struct GpuCliOptions {
  int timeout_s = 60;  // bound on every MPI wait
  gpu::SmokeOptions smoke;
  gpu::BenchOptions bench;
  gpu::CheckOptions check;
  std::string json_out;
  std::string junit_out;
  std::string table_out;
  std::vector<std::string> mutants;  // kill table: empty = every compiled kernel mutant
};

long long host_id() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return static_cast<long long>(std::hash<std::string>{}(name) & 0x7fffffffffffffffLL);
}

// Every job runs with a watchdog: a peer process on this host that vanishes, or a main
// thread stuck in one phase past the MPI timeout (plus a margin, so that MPI timeouts report
// first), ends the rank with a diagnosis. A launcher's SIGTERM is answered the same way.
template <typename Job>
int run_on_ranks(const GpuCliOptions& options, Job job) {
  mpi::MpiComm comm(nullptr, nullptr, std::chrono::seconds(options.timeout_s));
  const auto pids = comm.all_gather_value(static_cast<long long>(getpid()), "process ids");
  const auto hosts = comm.all_gather_value(host_id(), "host ids");
  std::vector<mpi::PeerProcess> peers;  // same host only: a pid elsewhere means nothing here
  for (int r = 0; r < comm.size(); ++r)
    if (r != comm.rank() && hosts[static_cast<std::size_t>(r)] == hosts[static_cast<std::size_t>(comm.rank())])
      peers.push_back({r, pids[static_cast<std::size_t>(r)]});
  mpi::install_terminate_report(comm.rank(), peers);
  const int rank = comm.rank();
  mpi::RankWatchdog watchdog(rank, peers, std::chrono::seconds(options.timeout_s + 5),
                             [rank](const std::string& why) { mpi::RankWatchdog::exit_with_message(rank, why); });
  try {
    const int rc = job(comm);
    comm.barrier("the end of the job on every rank");  // no rank leaves while a peer still works
    watchdog.stop();
    return rc;
  } catch (const UsageError&) {
    throw;  // every rank sees the same bad input: main() prints it once per rank, exit 2
  } catch (const gpu::BadInput& e) {
    throw UsageError(e.what());
  } catch (const mpi::MpiTimeout& e) {
    const std::string gone = mpi::vanished_peers(peers);
    fmt::print(stderr, "fusioncheck gpu: rank {}: {}{}\n", comm.rank(), e.what(),
               gone.empty() ? "" : "; vanished: " + gone);
    std::fflush(stderr);
    _exit(kExitFindings);  // MPI_Finalize would wait for the missing peer
  } catch (const kernels::KernelHang& e) {
    fmt::print(stderr, "fusioncheck gpu: rank {}: kernel hang: {}\n", comm.rank(), e.what());
    comm.abort(kExitFindings);
  } catch (const kernels::InvalidLaunch& e) {
    throw UsageError(e.what());
  } catch (const std::exception& e) {
    // Any other error of one rank (CUDA, memory, a bad file): say so and leave at once;
    // unwinding into MPI_Finalize would wait for peers that are still inside a collective.
    fmt::print(stderr, "fusioncheck gpu: rank {}: {}\n", comm.rank(), e.what());
    std::fflush(stderr);
    _exit(kExitFindings);
  }
}

gpu::RunConfig run_config(const GpuCliOptions& o, int ranks, const std::string& mutant) {
  gpu::RunConfig c;
  c.binary_version = __DATE__ " " __TIME__;
  c.ranks = ranks;
  c.seed = o.check.seed;
  c.cases = o.check.cases;
  c.mutant = mutant;
  c.max_tokens = o.check.max_tokens;
  c.max_hidden = o.check.max_hidden;
  return c;
}

void validate_check_options(const gpu::CheckOptions& o) {
  if (o.max_hidden < 16 || o.max_hidden % 16) throw UsageError("--max-hidden must be a positive multiple of 16");
  if (o.max_tokens < 1 || o.max_tokens > 65536) throw UsageError("--max-tokens must be in [1, 65536]");
  if (o.max_hidden > 65536) throw UsageError("--max-hidden must be at most 65536");
  if (o.max_elems < o.max_hidden) throw UsageError("--max-elems must be at least --max-hidden (one token of the widest row)");
}

int run_check_command(mpi::MpiComm& comm, const GpuCliOptions& o) {
  validate_check_options(o.check);
  if (!protocol::is_supported_rank_count(comm.size()))
    throw UsageError(fmt::format("{} ranks: the kernels are built for 2, 4, 8 or 16 ranks", comm.size()));
  gpu::agree_on_config(comm, run_config(o, comm.size(), o.check.mutant));
  const gpu::GpuPlacement placement = gpu::place_rank_on_gpu(comm);
  if (comm.rank() == 0) fmt::print("fusioncheck gpu check: {}\n", gpu::describe(placement, comm.size()));
  const gpu::CheckResult r = gpu::run_check(comm, o.check, placement);
  if (comm.rank() == 0) {
    fmt::print("{}\n{}\n", gpu::summary_line(r, comm.size()), gpu::time_breakdown(r));
    for (const auto& f : r.findings) fmt::print("  [{}] {}\n", f.check, f.message);
    for (const auto& [why, n] : r.refusals) fmt::print("  refused {} cases: {}...\n", n, why);
    if (!r.replay_command.empty()) fmt::print("minimal case written; replay with:\n  {}\n", r.replay_command);
    if (!o.json_out.empty()) std::ofstream(o.json_out) << gpu::to_json(r).dump(1) << "\n";
    if (!o.junit_out.empty()) std::ofstream(o.junit_out) << gpu::junit_xml("fusioncheck.gpu.check", {r}, nullptr);
  }
  return r.failed ? kExitFindings : kExitClean;
}

int run_kill_table(mpi::MpiComm& comm, GpuCliOptions o) {
  validate_check_options(o.check);
  std::vector<std::string> mutants = o.mutants;
  if (mutants.empty()) {
    mutants.push_back("none");
    for (auto m : kernels::oneshot_mutants_compiled()) mutants.emplace_back(protocol::mutant_id(m));
    for (auto m : kernels::twoshot_mutants_compiled()) mutants.emplace_back(protocol::mutant_id(m));
  }
  if (comm.size() != 2)
    throw UsageError(fmt::format("{} ranks: the mutant instances are compiled for 2 ranks (bf16); run the kill "
                                 "table with mpirun -np 2", comm.size()));
  gpu::agree_on_config(comm, run_config(o, comm.size(), fmt::format("{}", fmt::join(mutants, ","))));
  const gpu::GpuPlacement placement = gpu::place_rank_on_gpu(comm);
  const std::string setup = gpu::describe(placement, comm.size());
  if (comm.rank() == 0) fmt::print("fusioncheck gpu kill-table: {}\n", setup);
  o.check.shrink = false;  // time to detect = the first failure
  const auto plan = gpu::kill_table_plan(mutants, o.check.twoshot_percent);
  std::vector<gpu::CheckResult> runs;
  for (const auto& [m, percent] : plan) {
    o.check.mutant = m;
    o.check.twoshot_percent = percent;
    o.check.replay_out = fmt::format("fusioncheck-gpu-{}-{}.json", m, percent);
    runs.push_back(gpu::run_check(comm, o.check, placement));
    if (comm.rank() == 0) fmt::print("{}\n", gpu::summary_line(runs.back(), comm.size())), std::fflush(stdout);
  }
  // The run fails on a false positive, or on a survivor that this setup can kill.
  int bad = 0;
  for (const auto& r : runs)
    bad += r.mutant == "none" ? r.failed : !r.failed && gpu::expected_survival(r.mutant, placement).empty();
  if (comm.rank() == 0) {
    const std::string table = gpu::kill_table_markdown(runs, setup, placement);
    fmt::print("\n{}", table);
    if (!o.table_out.empty()) std::ofstream(o.table_out) << table;
    if (!o.junit_out.empty()) std::ofstream(o.junit_out) << gpu::junit_xml("fusioncheck.gpu.kill_table", runs, &placement);
    if (!o.json_out.empty()) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& r : runs) j.push_back(gpu::to_json(r));
      std::ofstream(o.json_out) << j.dump(1) << "\n";
    }
  }
  return bad ? kExitFindings : kExitClean;
}

void add_check_options(CLI::App* cmd, gpu::CheckOptions& c) {
  cmd->add_option("--seed", c.seed, "RapidCheck seed (every rank must agree)");
  cmd->add_option("--cases", c.cases, "Cases to run")->check(CLI::Range(1, 100000000));
  cmd->add_option("--max-tokens", c.max_tokens, "Largest token count drawn");
  cmd->add_option("--max-hidden", c.max_hidden, "Largest hidden size drawn (multiple of 16)");
  cmd->add_option("--max-elems", c.max_elems, "Largest tokens x hidden of one call")->check(CLI::Range(16, 1 << 26));
  cmd->add_option("--max-calls", c.max_calls, "Longest call sequence per case")->check(CLI::Range(1, 16));
  cmd->add_flag("!--no-delays", c.delays, "Do not draw seeded injected delays in the kernels");
  cmd->add_option("--twoshot-percent", c.twoshot_percent,
                  "Share of two-shot calls in cases with 16-bit Lamport buffers (kill-table: mutants of the "
                  "two-shot kernel alone, and a control, run at " + std::to_string(gpu::kTwoShotMutantPercent) + ")")
      ->check(CLI::Range(0, 100));
}

}  // namespace

void add_gpu_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<GpuCliOptions>();
  auto* gpu = app.add_subcommand("gpu", "Run the real kernels on N ranks (one process per rank, under mpirun)");
  gpu->require_subcommand(1);
  gpu->add_option("--timeout", o->timeout_s, "Seconds any MPI wait may take")->check(CLI::Range(1, 3600));

  auto* smoke = gpu->add_subcommand("smoke", "Every kernel and pattern once vs the reference, invariants after every call");
  smoke->add_option("--seed", o->smoke.seed, "Input seed");
  smoke->add_option("--tokens", o->smoke.tokens, "Token counts, cycled call by call");
  smoke->add_option("--hidden", o->smoke.hidden, "Hidden sizes (multiples of 16)");
  smoke->add_option("--calls-per-case", o->smoke.calls_per_case)->check(CLI::Range(1, 16));
  smoke->add_option("--json", o->smoke.json_out, "Write per-case results (rank 0)");
  smoke->callback([o, &exit_code] {
    exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) {
      return gpu::run_smoke(c, o->smoke).failed ? kExitFindings : kExitClean;
    });
  });

  auto* check = gpu->add_subcommand("check", "The property suite: RapidCheck cases vs the reference and invariants");
  add_check_options(check, o->check);
  check->add_option("--mutant", o->check.mutant, "Run a kernel mutant (negative control)");
  check->add_option("--replay", o->check.replay_file, "Run the case in this file (written by a failing run)")
      ->check(CLI::ExistingFile);
  check->add_option("--replay-out", o->check.replay_out, "Where a failing run writes its minimal case");
  check->add_option("--json", o->json_out, "Write the result as JSON (rank 0)");
  check->add_option("--junit", o->junit_out, "Write JUnit XML (rank 0)");
  check->callback([o, &exit_code] {
    exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) { return run_check_command(c, *o); });
  });

  auto* table = gpu->add_subcommand("kill-table", "Every kernel mutant: killed? by which check? how fast?");
  add_check_options(table, o->check);
  table->add_option("--mutants", o->mutants, "Mutant ids (default: every compiled kernel mutant, plus none)");
  table->add_option("--out", o->table_out, "Write the table as Markdown (rank 0)");
  table->add_option("--json", o->json_out, "Write the results as JSON (rank 0)");
  table->add_option("--junit", o->junit_out, "Write JUnit XML (rank 0)");
  table->callback([o, &exit_code] {
    exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) { return run_kill_table(c, *o); });
  });

  auto* bench = gpu->add_subcommand("bench", "Latency: one-shot vs two-shot vs unfused, side by side");
  bench->add_option("--tokens", o->bench.tokens, "Token counts");
  bench->add_option("--hidden", o->bench.hidden, "Hidden sizes");
  bench->add_option("--warmup", o->bench.warmup)->check(CLI::Range(0, 100000));
  bench->add_option("--iters", o->bench.iters, "Timed calls per point (>= 100)")->check(CLI::Range(1, 100000));
  bench->add_option("--allreduce", o->bench.allreduce, "The unfused baseline's allreduce: auto, nccl or ours")
      ->transform(CLI::CheckedTransformer(std::map<std::string, gpu::BaselineAllreduce>{
          {"auto", gpu::BaselineAllreduce::automatic},
          {"nccl", gpu::BaselineAllreduce::nccl},
          {"ours", gpu::BaselineAllreduce::ours}}));
  bench
      ->add_option_function<std::string>(
          "--cluster",
          [o](const std::string& v) {
            o->bench.cluster = v == "cluster"      ? kernels::ClusterMode::force_cluster
                               : v == "no-cluster" ? kernels::ClusterMode::force_no_cluster
                                                   : kernels::ClusterMode::automatic;
          },
          "One-shot RMSNorm path: auto, cluster or no-cluster")
      ->check(CLI::IsMember({"auto", "cluster", "no-cluster"}));
  bench->add_flag("!--no-pdl", o->bench.use_pdl, "Launch the fused kernels without PDL");
  bench->add_option("--json", o->bench.json_out, "Write the table (rank 0)");
  bench->callback([o, &exit_code] {
    exit_code = run_on_ranks(*o, [&](mpi::MpiComm& c) {
      gpu::run_bench(c, o->bench);
      return kExitClean;
    });
  });
}

}  // namespace fusioncheck::cli
