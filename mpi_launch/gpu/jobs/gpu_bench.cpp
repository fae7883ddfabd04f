// `fusioncheck gpu bench`: one-shot vs two-shot vs unfused latency, side by side in one run.
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <memory>

#include "fusioncheck/gpu/device_buffer.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/mpi/rank_watchdog.hpp"
#include "fusioncheck/kernels/baseline.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/gpu/gpu_runs.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "fusioncheck/gpu/mpi_bootstrap.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;

// BadInput when the kernel timed beside ours does not run the pattern.
void require_compared_pattern(const KernelChoice& compare, k::Pattern pattern,
                              const KernelTraits& traits) {
  if (!traits.runs_pattern(pattern))
    throw BadInput(fmt::format(
        "--compare {}: it does not run the {} pattern{}", compare.name, k::pattern_name(pattern),
        traits.runs_pattern(k::Pattern::allreduce) ? " (time it with --pattern allreduce)" : ""));
}

// oneshot_unbounded: our one-shot compiled without the time bound on its polls (benchmark
// only: a hang there spins for ever), timed beside it (graphs interleaved) to show what the bound
// costs. other_*: the same calls through another kernel under test (BenchOptions::compare), one
// column per launch variant of it.
enum class Path {
  oneshot,
  oneshot_unbounded,
  twoshot,
  automatic,
  unfused,
  other_oneshot,
  other_twoshot
};
constexpr const char* kPathName[] = {
    "one-shot", "one-shot unbounded polls", "two-shot",      "auto",
    "unfused",  "other one-shot",           "other two-shot"};
constexpr const char* kUnboundedColumn = kPathName[static_cast<int>(Path::oneshot_unbounded)];

struct Column {
  Path path;
  int other_variant = 0;  // other_*: the compared kernel's launch variant
  bool operator==(const Column&) const = default;
  bool other() const { return path == Path::other_oneshot || path == Path::other_twoshot; }
};
// Per row: our one-shot's median over the unbounded instance's (graph and eager); the cost of
// the bounded polls is this ratio minus 1.
constexpr const char* kBoundRatioKey = "bounded / unbounded";

// Graphs wait behind this spin so that the host's launch of the graph is off the timed path.
constexpr std::uint64_t kSpinNs = 50'000;

struct EventPair {
  cudaEvent_t start{}, stop{};
  EventPair() {
    cuda_check(cudaEventCreate(&start), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  double elapsed_us() const {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return ms * 1000.0;
  }
};

// Nearest-rank percentile of a non-empty sample (p in [0, 100]).
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// An instantiated CUDA graph of one variant's calls.
struct CallGraph {
  cudaGraphExec_t exec = nullptr;
  ~CallGraph() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  }
};

}  // namespace

bool baseline_uses_nccl(BaselineAllreduce choice, bool ranks_share_gpu, bool nccl_built) {
  if (choice == BaselineAllreduce::ours) return false;
  if (choice == BaselineAllreduce::automatic) return nccl_built && !ranks_share_gpu;
  if (!nccl_built)
    throw BadInput("--allreduce nccl: this build has no NCCL (FUSIONCHECK_HAVE_NCCL is off)");
  if (ranks_share_gpu)
    throw BadInput(
        "--allreduce nccl: ranks share a GPU here and NCCL refuses two ranks on one GPU; "
        "use one rank per GPU, or --allreduce ours");
  return true;
}

namespace {

const char* trigger_name(k::Trigger t) { return t == k::Trigger::early ? "early" : "end"; }

class BenchRunner {
 public:
  BenchRunner(mpi::MpiComm& comm, const BenchOptions& options, const GpuPlacement& placement)
      : comm_(comm), options_(options), placement_(placement), bootstrap_(comm) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~BenchRunner() { cudaStreamDestroy(stream_); }

  std::string allreduce_kind() const { return nccl_ ? "ncclAllReduce" : "one-shot allreduce-only"; }

  std::vector<std::string> columns() const {
    std::vector<std::string> out;
    for (const Column& c : columns_) out.push_back(column(c));
    return out;
  }

  // The compared kernel's launch variants, as its columns name them ("v0", ...); empty when it
  // has one.
  std::vector<std::string> other_variant_names() const {
    std::vector<std::string> out;
    if (other_variants_.size() > 1)
      for (const KernelVariant& v : other_variants_) out.push_back(v.name);
    return out;
  }

  void prepare() {
    const int max_tokens = *std::max_element(options_.tokens.begin(), options_.tokens.end());
    const int max_hidden = *std::max_element(options_.hidden.begin(), options_.hidden.end());
    max_elems_ = static_cast<std::size_t>(max_tokens) * max_hidden;
    k::WorkspaceConfig wc;
    wc.ranks = comm_.size();
    wc.comm_size = (static_cast<std::uint64_t>(comm_.size()) * max_elems_ * 2 + 255) / 256 * 256;
    workspace_ = std::make_unique<k::Workspace>(k::Workspace::create_ipc(bootstrap_, wc));
    // NCCL refuses two ranks on one GPU: then the unfused path's allreduce is our one-shot
    // kernel in its allreduce-only pattern, so fusion's gain is still measured.
    if (baseline_uses_nccl(options_.allreduce, placement_.ranks_share_gpu,
                           k::NcclAllReduce::available()))
      nccl_ = std::make_unique<k::NcclAllReduce>(bootstrap_);
    columns_ = {{Path::oneshot}};
    if (k::oneshot_unbounded_polls_compiled(comm_.size()))
      columns_.push_back({Path::oneshot_unbounded});
    columns_.push_back({Path::twoshot});
    columns_.push_back({Path::automatic});
    // The unfused baseline is an allreduce and a residual + RMSNorm kernel: with the allreduce
    // pattern alone there is nothing to fuse.
    if (options_.pattern != k::Pattern::allreduce) columns_.push_back({Path::unfused});
    if (options_.compare) {
      other_ = options_.compare->make(bootstrap_, MutantId());
      other_traits_ = other_->traits();
      const KernelTraits& traits = other_traits_;
      // The same on every rank, before any workspace.
      require_compared_pattern(*options_.compare, options_.pattern, traits);
      other_->prepare(max_elems_, false);
      other_variants_ = traits.variants;
      if (other_variants_.empty()) other_variants_.push_back(KernelVariant{});
      for (int i = 0; i < static_cast<int>(other_variants_.size()); ++i) {
        columns_.push_back({Path::other_oneshot, i});
        if (traits.twoshot) columns_.push_back({Path::other_twoshot, i});
      }
    }
  }

  nlohmann::json run() {
    const int max_hidden = *std::max_element(options_.hidden.begin(), options_.hidden.end());
    DeviceBuffer input(max_elems_ * 2), residual(max_elems_ * 2), gamma(max_hidden * 2),
        residual_out(max_elems_ * 2), norm_out(max_elems_ * 2), allreduced(max_elems_ * 2);
    for (DeviceBuffer* b :
         {&input, &residual, &gamma})  // small finite values: content does not change timing
      b->fill(0x3c, stream_, b->bytes());
    cuda_check(cudaStreamSynchronize(stream_), "input fill");
    nlohmann::json rows = nlohmann::json::array();
    for (int hidden : options_.hidden)
      for (int tokens : options_.tokens) {
        k::FusedParams p;
        p.ranks = comm_.size();
        p.rank = comm_.rank();
        p.tokens = tokens;
        p.hidden = hidden;
        p.dtype = k::DType::bf16;
        p.pattern = options_.pattern;
        p.cluster = options_.cluster;
        p.use_pdl = options_.use_pdl;
        p.trigger = options_.trigger;
        p.input = input.get();
        p.residual_in = residual.get();
        p.gamma = gamma.get();
        p.residual_out = residual_out.get();
        p.norm_out = norm_out.get();
        if (options_.pattern == k::Pattern::allreduce) p.allreduce_out = allreduced.get();
        nlohmann::json row{{"tokens", tokens},
                           {"hidden", hidden},
                           {"graph", nlohmann::json::object()},
                           {"eager", nlohmann::json::object()},
                           {"blocks", nlohmann::json::object()}};
        std::vector<Column> captured;
        std::vector<std::unique_ptr<CallGraph>> graphs;
        for (const Column& v : columns_) {
          const std::string name = column(v);
          try {
            warm_up(v, p, allreduced.get());
            if (v.path == Path::oneshot || v.path == Path::oneshot_unbounded ||
                v.path == Path::twoshot)
              row["blocks"][name] = last_.grid;
            if (v.path == Path::oneshot ||
                v.path == Path::oneshot_unbounded) {  // which one-shot build ran
              row["cluster_size"][name] = last_.cluster_size;
              row["cluster_free_build"][name] = last_.cluster_free;
            }
            if (v.path == Path::automatic)
              row["auto picks"] = last_.twoshot ? "two-shot" : "one-shot";
            row["eager"][name] =
                options_.eager ? nlohmann::json(time_eager(v, p, allreduced.get())) : nullptr;
            graphs.push_back(capture_graph(v, p, allreduced.get()));
            captured.push_back(v);
          } catch (const k::InvalidLaunch& e) {  // same decision on every rank
            row["graph"][name] = nullptr;  // an eager figure taken before a refused capture stays
            if (!row["eager"].contains(name)) row["eager"][name] = nullptr;
            if (comm_.rank() == 0) fmt::print("  {} refused: {}\n", name, e.what());
          }
        }
        const std::vector<nlohmann::json> timed = time_graphs_interleaved(captured, graphs);
        for (std::size_t i = 0; i < captured.size(); ++i)
          row["graph"][column(captured[i])] = timed[i];
        if (row["graph"].contains(kUnboundedColumn))
          row[kBoundRatioKey] = {{"graph", bound_ratio(row, "graph")},
                                 {"eager", bound_ratio(row, "eager")}};
        rows.push_back(row);
        if (comm_.rank() == 0) print_row(row);
      }
    return rows;
  }

 private:
  // One-shot over one-shot unbounded polls, from the medians of `timing` (graph or eager);
  // null where either was not timed.
  static nlohmann::json bound_ratio(const nlohmann::json& row, const char* timing) {
    auto med = [&](const char* c) -> double {
      const auto& t = row[timing].contains(c) ? row[timing][c] : nlohmann::json();
      if (t.is_null()) return 0.0;
      return t.is_object() ? t["median"].get<double>() : t.get<double>();
    };
    const double bounded = med("one-shot"), unbounded = med(kUnboundedColumn);
    return bounded > 0 && unbounded > 0 ? nlohmann::json(bounded / unbounded) : nlohmann::json();
  }

  // "<kernel> one-shot"; with several launch variants "<kernel> v<i> one-shot"; without a
  // two-shot path the path is left out.
  std::string column(const Column& c) const {
    if (!c.other()) return kPathName[static_cast<int>(c.path)];
    std::string name = options_.compare->name;
    if (other_variants_.size() > 1) name += " v" + std::to_string(c.other_variant);
    if (!other_traits_.twoshot) return name;
    return name + (c.path == Path::other_oneshot ? " one-shot" : " two-shot");
  }

  // Waits for the calls on the stream; the other kernel bounds its own wait (a hang there is
  // an error of the run: the bench is not a check).
  void wait_all(const Column& v) {
    if (v.other()) {
      other_->wait(stream_, WaitStart::this_rank_enqueued);
      if (other_->hang_record().valid)
        throw RunFailure("bench: " + k::describe(other_->hang_record()));
      return;
    }
    cuda_check(cudaStreamSynchronize(stream_), "bench calls");
    workspace_->throw_if_hung();
  }

  void launch(const Column& v, const k::FusedParams& p, void* allreduced) {
    if (v.other()) {
      k::FusedParams q = p;
      q.variant = v.other_variant;
      q.fp32_accumulation = other_traits_.fp32_accumulation;  // the sum it has
      other_->launch(q, v.path == Path::other_twoshot, stream_);
      return;
    }
    switch (v.path) {
      case Path::other_oneshot:
      case Path::other_twoshot: break;  // above
      case Path::oneshot: last_ = k::launch_oneshot(p, *workspace_, stream_); break;
      case Path::oneshot_unbounded:
        last_ = k::launch_oneshot_unbounded_polls(p, *workspace_, stream_);
        break;
      case Path::twoshot: last_ = k::launch_twoshot(p, *workspace_, stream_); break;
      case Path::automatic: last_ = k::launch_automatic(p, *workspace_, stream_); break;
      case Path::unfused:
        k::launch_unfused_baseline(p, *workspace_, allreduced, stream_, nccl_.get());
        break;
    }
  }

  // The first launch refuses what the kernel cannot run (InvalidLaunch), before any timing.
  void warm_up(const Column& v, const k::FusedParams& p, void* allreduced) {
    // Phases for the rank watchdog: a full launch queue blocks inside the launch call.
    for (int i = 0; i < std::max(1, options_.warmup); ++i) {
      mpi::set_phase("bench: enqueueing warm-up calls");
      launch(v, p, allreduced);
    }
    mpi::set_phase("bench: waiting for the warm-up calls");
    wait_all(v);
  }

  // A collective is as fast as its slowest rank: per sample, the largest of the ranks' values.
  std::vector<double> slowest_rank(const std::vector<double>& mine) {
    std::vector<double> all(mine.size() * static_cast<std::size_t>(comm_.size()));
    comm_.all_gather(mine.data(), all.data(), mine.size() * sizeof(double), "bench times");
    std::vector<double> out(mine);
    for (int r = 0; r < comm_.size(); ++r)
      for (std::size_t i = 0; i < mine.size(); ++i)
        out[i] = std::max(out[i], all[r * mine.size() + i]);
    return out;
  }

  // Eager: an event pair around each of `iters` back-to-back calls launched from the host, one
  // sync at the end; the slowest rank's median.
  double time_eager(const Column& v, const k::FusedParams& p, void* allreduced) {
    comm_.barrier("bench start");
    std::vector<EventPair> events(static_cast<std::size_t>(options_.iters));
    for (auto& e : events) {
      mpi::set_phase("bench: enqueueing timed calls");
      cuda_check(cudaEventRecord(e.start, stream_), "cudaEventRecord");
      launch(v, p, allreduced);
      cuda_check(cudaEventRecord(e.stop, stream_), "cudaEventRecord");
    }
    mpi::set_phase("bench: waiting for the timed calls");
    wait_all(v);
    std::vector<double> us;
    for (auto& e : events) us.push_back(e.elapsed_us());
    return slowest_rank({median(us)})[0];
  }

  // Graph: graph_calls calls captured in one CUDA graph, launched once untimed (the upload).
  std::unique_ptr<CallGraph> capture_graph(const Column& v, const k::FusedParams& p,
                                           void* allreduced) {
    auto graph = std::make_unique<CallGraph>();
    mpi::set_phase("bench: capturing a graph");
    cuda_check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed),
               "cudaStreamBeginCapture");
    cudaGraph_t captured = nullptr;
    try {
      for (int i = 0; i < options_.graph_calls; ++i) launch(v, p, allreduced);
    } catch (...) {
      (void)cudaStreamEndCapture(stream_, &captured);
      (void)cudaGetLastError();  // the invalidated capture's error is not the next call's
      if (captured != nullptr) cudaGraphDestroy(captured);
      throw;
    }
    const cudaError_t ended = cudaStreamEndCapture(stream_, &captured);
    if (ended != cudaSuccess && captured != nullptr) cudaGraphDestroy(captured);
    cuda_check(ended, "cudaStreamEndCapture");
    const cudaError_t made = cudaGraphInstantiate(&graph->exec, captured, 0);
    cudaGraphDestroy(captured);
    cuda_check(made, "cudaGraphInstantiate");
    cuda_check(cudaGraphLaunch(graph->exec, stream_), "cudaGraphLaunch");  // uploads it; untimed
    mpi::set_phase("bench: waiting for the first graph");
    wait_all(v);
    return graph;
  }

  // Every repeat times each variant's graph once, in column order on even repeats and in
  // reverse on odd ones, so that a drift of the GPU's clocks during a row (they ramp up after
  // an idle spell) falls on all columns alike instead of on whichever is timed first; a ratio
  // of two columns is then a side-by-side figure. One timing: the ranks meet at a barrier,
  // the graph waits behind a spin kernel, an event pair around it; per call = graph time /
  // calls. Per variant: median and p10/p90 over repeats of the slowest rank.
  std::vector<nlohmann::json> time_graphs_interleaved(
      const std::vector<Column>& variants, const std::vector<std::unique_ptr<CallGraph>>& graphs) {
    const std::size_t n = variants.size();
    std::vector<std::vector<double>> per_call(n);
    EventPair events;
    for (int i = 0; i < options_.repeats; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t col = interleaved_column(i, j, n);
        comm_.barrier("bench graph start");
        mpi::set_phase("bench: launching a graph");
        k::launch_spin(kSpinNs, stream_);
        cuda_check(cudaEventRecord(events.start, stream_), "cudaEventRecord");
        cuda_check(cudaGraphLaunch(graphs[col]->exec, stream_), "cudaGraphLaunch");
        cuda_check(cudaEventRecord(events.stop, stream_), "cudaEventRecord");
        mpi::set_phase("bench: waiting for a graph");
        wait_all(variants[col]);
        per_call[col].push_back(events.elapsed_us() / options_.graph_calls);
      }
    std::vector<nlohmann::json> out;
    for (std::size_t col = 0; col < n; ++col) {
      const std::vector<double> slowest = slowest_rank(per_call[col]);
      out.push_back({{"median", median(slowest)},
                     {"p10", percentile(slowest, 10)},
                     {"p90", percentile(slowest, 90)}});
    }
    return out;
  }

  void print_row(const nlohmann::json& row) const {
    auto us = [&](const std::string& key) {
      if (!row["graph"].contains(key)) return -1.0;
      const auto& g = row["graph"][key];
      return g.is_null() ? -1.0 : g["median"].get<double>();
    };
    std::string line =
        fmt::format("{:>7} {:>7}", row["tokens"].get<int>(), row["hidden"].get<int>());
    for (const Column& v : columns_) line += fmt::format(" {:>13.2f}", us(column(v)));
    if (has_unfused()) line += fmt::format(" {:>9.2f}x", us("unfused") / us("auto"));
    if (has_unbounded()) {
      const auto& ratio =
          row.contains(kBoundRatioKey) ? row[kBoundRatioKey]["graph"] : nlohmann::json();
      line += fmt::format(" {:>9.3f}", ratio.is_null() ? -1.0 : ratio.get<double>());
    }
    const auto& eager = row["eager"]["one-shot"];
    line += fmt::format(" {:>9.2f}", eager.is_null() ? -1.0 : eager.get<double>());
    fmt::print("{}\n", line);
  }

 public:
  void print_header() const {
    std::string line = fmt::format("{:>7} {:>7}", "tokens", "hidden");
    for (const Column& v : columns_) line += fmt::format(" {:>13}", column(v));
    if (has_unfused()) line += fmt::format(" {:>10}", "unf/auto");
    if (has_unbounded()) line += fmt::format(" {:>9}", "bnd/unbnd");
    line += fmt::format(" {:>9}", "eager 1s");
    fmt::print("{}\n", line);
  }

  bool has_unbounded() const {
    return std::find(columns_.begin(), columns_.end(), Column{Path::oneshot_unbounded}) !=
           columns_.end();
  }
  bool has_unfused() const {
    return std::find(columns_.begin(), columns_.end(), Column{Path::unfused}) != columns_.end();
  }

 private:
  mpi::MpiComm& comm_;
  const BenchOptions& options_;
  GpuPlacement placement_;
  MpiBootstrap bootstrap_;
  cudaStream_t stream_{};
  std::size_t max_elems_ = 0;
  std::vector<Column> columns_;
  KernelTraits other_traits_;                  // of the compared kernel
  std::vector<KernelVariant> other_variants_;  // of the compared kernel (at least one)
  std::unique_ptr<k::Workspace> workspace_;
  std::unique_ptr<k::NcclAllReduce> nccl_;
  std::unique_ptr<KernelUnderTest> other_;
  k::LaunchInfo last_;  // of the last fused launch of ours
};

// The grids behind the table: where ranks share a GPU with PDL the fused kernels take half
// their share of the SMs (co-residency), which shows at large token counts.
std::string grid_note(const nlohmann::json& rows) {
  int oneshot = 0, twoshot = 0;
  for (const auto& row : rows) {
    if (row["blocks"].contains("one-shot"))
      oneshot = std::max(oneshot, row["blocks"]["one-shot"].get<int>());
    if (row["blocks"].contains("two-shot"))
      twoshot = std::max(twoshot, row["blocks"]["two-shot"].get<int>());
  }
  return fmt::format("largest grid per rank: one-shot {} blocks, two-shot {}", oneshot, twoshot);
}

nlohmann::json other_variants_json(const BenchRunner& runner) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& name : runner.other_variant_names()) out.push_back(name);
  return out;
}

}  // namespace

BenchResult run_bench(mpi::MpiComm& comm, const BenchOptions& options) {
  require_rank_count(comm, KernelChoice{});  // ours runs in every bench
  if (options.compare) require_rank_count(comm, *options.compare);
  if (options.iters < 100)
    throw BadInput("--iters must be at least 100 (a median of >= 100 calls)");
  if (options.graph_calls < 1 || options.repeats < 5)
    throw BadInput(
        "--graph-calls must be >= 1 and --repeats >= 5 (a median and p10/p90 over repeats)");
  if (options.compare && options.compare->host_traits)  // before a GPU is assigned
    require_compared_pattern(*options.compare, options.pattern,
                             options.compare->host_traits(comm.size()));
  const GpuPlacement placement =
      place_rank_on_gpu(comm, options.compare && options.compare->share_sms);
  // Before any workspace exists: every rank on a node sees the same placement and refuses alike.
  (void)baseline_uses_nccl(options.allreduce, placement.ranks_share_gpu,
                           k::NcclAllReduce::available());
  BenchRunner runner(comm, options, placement);
  runner.prepare();
  const std::string method =
      fmt::format(
          "per call from a CUDA graph of {} calls queued behind a spin kernel, ranks released together; "
          "median of {} graph launches, slowest rank (p10/p90 in the JSON), the columns' launches interleaved; eager 1s: one-shot launched "
          "from the host, event pair per call, median of {}",
          options.graph_calls, options.repeats, options.iters) +
      (k::oneshot_unbounded_polls_compiled(comm.size())
           ? fmt::format(
                 "; {}: our one-shot built without the time bound on its polls (benchmark only), "
                 "timed beside it; bnd/unbnd: one-shot over it (graph; the JSON's \"{}\" also eager)",
                 kUnboundedColumn, kBoundRatioKey)
           : "");
  if (comm.rank() == 0) {
    fmt::print("fusioncheck gpu bench: {}\n", describe(placement, comm.size()));
    fmt::print(
        "bf16, {}; latency in microseconds; PDL {} (trigger {}), one-shot RMSNorm path {}\n{}\n",
        options.pattern == k::Pattern::allreduce ? "allreduce alone" : "residual + RMSNorm",
        options.use_pdl ? "on" : "off", trigger_name(options.trigger),
        options.cluster == k::ClusterMode::automatic       ? "auto"
        : options.cluster == k::ClusterMode::force_cluster ? "cluster"
                                                           : "no-cluster",
        method);
    const auto other_variants = runner.other_variant_names();
    for (std::size_t i = 0; i < other_variants.size(); ++i)
      fmt::print("{} v{}: {}\n", options.compare->name, i, other_variants[i]);
    runner.print_header();
  }
  const nlohmann::json rows = runner.run();
  if (comm.rank() == 0) {
    if (options.pattern == k::Pattern::allreduce) fmt::print("{}\n", grid_note(rows));
    else
      fmt::print("unfused = {} + separate residual+RMSNorm kernel; {}\n", runner.allreduce_kind(),
                 grid_note(rows));
    if (!options.json_out.empty())
      write_file(options.json_out,
                 nlohmann::json{{"setup", describe(placement, comm.size())},
                                {"ranks", comm.size()},
                                {"method", method},
                                {"pdl", options.use_pdl},
                                {"pattern", k::pattern_name(options.pattern)},
                                {"compared_variants", other_variants_json(runner)},
                                {"trigger", trigger_name(options.trigger)},
                                {"unfused_allreduce", runner.allreduce_kind()},
                                {"columns", runner.columns()},
                                {"rows", rows}}
                         .dump(1) +
                     "\n");
  }
  return BenchResult{rows, runner.allreduce_kind()};
}

}  // namespace fusioncheck::gpu
