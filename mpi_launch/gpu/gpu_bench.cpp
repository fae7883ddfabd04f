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
#include "fusioncheck/gpu/gpu_session.hpp"
#include "fusioncheck/gpu/mpi_bootstrap.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;

// other_*: the same calls through another kernel under test (BenchOptions::compare).
enum class Variant { oneshot, twoshot, unfused, other_oneshot, other_twoshot };
constexpr const char* kVariantName[] = {"one-shot", "two-shot", "unfused", "other one-shot", "other two-shot"};

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
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

bool baseline_uses_nccl(BaselineAllreduce choice, bool ranks_share_gpu, bool nccl_built) {
  if (choice == BaselineAllreduce::ours) return false;
  if (choice == BaselineAllreduce::automatic) return nccl_built && !ranks_share_gpu;
  if (!nccl_built) throw BadInput("--allreduce nccl: this build has no NCCL (FUSIONCHECK_HAVE_NCCL is off)");
  if (ranks_share_gpu)
    throw BadInput("--allreduce nccl: ranks share a GPU here and NCCL refuses two ranks on one GPU; "
                          "use one rank per GPU, or --allreduce ours");
  return true;
}

namespace {

class BenchRunner {
 public:
  BenchRunner(mpi::MpiComm& comm, const BenchOptions& options, const GpuPlacement& placement)
      : comm_(comm), options_(options), placement_(placement), bootstrap_(comm) {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~BenchRunner() { cudaStreamDestroy(stream_); }

  std::string allreduce_kind() const { return nccl_ ? "ncclAllReduce" : "one-shot allreduce-only"; }

  nlohmann::json run() {
    const int max_tokens = *std::max_element(options_.tokens.begin(), options_.tokens.end());
    const int max_hidden = *std::max_element(options_.hidden.begin(), options_.hidden.end());
    const std::size_t max_elems = static_cast<std::size_t>(max_tokens) * max_hidden;
    k::WorkspaceConfig wc;
    wc.ranks = comm_.size();
    wc.comm_size = (static_cast<std::uint64_t>(comm_.size()) * max_elems * 2 + 255) / 256 * 256;
    workspace_ = std::make_unique<k::Workspace>(k::Workspace::create_ipc(bootstrap_, wc));
    // NCCL refuses two ranks on one GPU: then the unfused path's allreduce is our one-shot
    // kernel in its allreduce-only pattern, so fusion's gain is still measured.
    if (baseline_uses_nccl(options_.allreduce, placement_.ranks_share_gpu, k::NcclAllReduce::available()))
      nccl_ = std::make_unique<k::NcclAllReduce>(bootstrap_);
    std::vector<Variant> variants{Variant::oneshot, Variant::twoshot, Variant::unfused};
    if (options_.compare) {
      other_ = options_.compare->make(bootstrap_, protocol::Mutant::none);
      other_->prepare(max_elems, false);
      variants.push_back(Variant::other_oneshot);
      variants.push_back(Variant::other_twoshot);
    }
    DeviceBuffer input(max_elems * 2), residual(max_elems * 2), gamma(max_hidden * 2),
        residual_out(max_elems * 2), norm_out(max_elems * 2), allreduced(max_elems * 2);
    for (DeviceBuffer* b : {&input, &residual, &gamma})  // small finite values: content does not change timing
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
        p.pattern = k::Pattern::residual_rmsnorm;
        p.cluster = options_.cluster;
        p.use_pdl = options_.use_pdl;
        p.input = input.get();
        p.residual_in = residual.get();
        p.gamma = gamma.get();
        p.residual_out = residual_out.get();
        p.norm_out = norm_out.get();
        nlohmann::json row{{"tokens", tokens}, {"hidden", hidden}};
        for (Variant v : variants) {
          const std::string name = column(v);
          try {
            row[name] = time_variant(v, p, allreduced.get());
            if (v == Variant::oneshot || v == Variant::twoshot) row[name + " blocks"] = last_grid_;
          } catch (const k::InvalidLaunch& e) {  // same decision on every rank
            row[name] = nullptr;
            if (comm_.rank() == 0) fmt::print("  {} refused: {}\n", name, e.what());
          }
        }
        rows.push_back(row);
        if (comm_.rank() == 0) print_row(row);
      }
    return rows;
  }

 private:
  std::string column(Variant v) const {
    if (v == Variant::other_oneshot) return options_.compare->name + " one-shot";
    if (v == Variant::other_twoshot) return options_.compare->name + " two-shot";
    return kVariantName[static_cast<int>(v)];
  }

  // Waits for the calls on the stream; the other kernel bounds its own wait (a hang there is
  // an error of the run: the bench is not a check).
  void wait_all(Variant v) {
    if (v == Variant::other_oneshot || v == Variant::other_twoshot) {
      other_->wait(stream_);
      if (other_->hang_record().valid) throw RunFailure("bench: " + k::describe(other_->hang_record()));
      return;
    }
    cuda_check(cudaStreamSynchronize(stream_), "bench calls");
    workspace_->throw_if_hung();
  }

  void launch(Variant v, const k::FusedParams& p, void* allreduced) {
    switch (v) {
      case Variant::other_oneshot: other_->launch(p, false, stream_); break;
      case Variant::other_twoshot: other_->launch(p, true, stream_); break;
      case Variant::oneshot: last_grid_ = k::launch_oneshot(p, *workspace_, stream_).grid; break;
      case Variant::twoshot: last_grid_ = k::launch_twoshot(p, *workspace_, stream_).grid; break;
      case Variant::unfused:
        k::launch_unfused_baseline(p, *workspace_, allreduced, stream_, nccl_.get());
        break;
    }
  }

  // Median over iters back-to-back calls (events between calls, one sync at the end), then
  // the slowest rank's median: a collective is as fast as its slowest rank.
  double time_variant(Variant v, const k::FusedParams& p, void* allreduced) {
    // Phases for the rank watchdog: a full launch queue blocks inside the launch call.
    for (int i = 0; i < options_.warmup; ++i) {
      mpi::set_phase("bench: enqueueing warm-up calls");
      launch(v, p, allreduced);
    }
    mpi::set_phase("bench: waiting for the warm-up calls");
    wait_all(v);
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
    for (auto& e : events) {
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, e.start, e.stop), "cudaEventElapsedTime");
      us.push_back(ms * 1000.0);
    }
    const auto mine = static_cast<long long>(median(us) * 1000.0);  // ns
    const auto all = comm_.all_gather_value(mine, "bench medians");
    return static_cast<double>(*std::max_element(all.begin(), all.end())) / 1000.0;
  }

  void print_row(const nlohmann::json& row) const {
    auto us = [&](const char* key) { return row[key].is_null() ? -1.0 : row[key].get<double>(); };
    const double one = us("one-shot"), two = us("two-shot"), unf = us("unfused");
    std::string other;
    if (options_.compare) {
      const double o1 = us(column(Variant::other_oneshot).c_str()), o2 = us(column(Variant::other_twoshot).c_str());
      other = fmt::format(" {:>11.2f} {:>11.2f} {:>13.2f}x", o1, o2, o1 / one);
    }
    fmt::print("{:>7} {:>7} {:>11.2f} {:>11.2f} {:>11.2f} {:>14.2f}x {:>12.2f}x{}\n", row["tokens"].get<int>(),
               row["hidden"].get<int>(), one, two, unf, unf / one, two / one, other);
  }

  mpi::MpiComm& comm_;
  const BenchOptions& options_;
  GpuPlacement placement_;
  MpiBootstrap bootstrap_;
  cudaStream_t stream_{};
  std::unique_ptr<k::Workspace> workspace_;
  std::unique_ptr<k::NcclAllReduce> nccl_;
  std::unique_ptr<KernelUnderTest> other_;
  int last_grid_ = 0;  // blocks per rank of the last fused launch
};

// The grids behind the table: where ranks share a GPU with PDL the fused kernels take half
// their share of the SMs (co-residency), which shows at large token counts.
std::string grid_note(const nlohmann::json& rows) {
  int oneshot = 0, twoshot = 0;
  for (const auto& row : rows) {
    if (row.contains("one-shot blocks")) oneshot = std::max(oneshot, row["one-shot blocks"].get<int>());
    if (row.contains("two-shot blocks")) twoshot = std::max(twoshot, row["two-shot blocks"].get<int>());
  }
  return fmt::format("largest grid per rank: one-shot {} blocks, two-shot {}", oneshot, twoshot);
}

}  // namespace

BenchResult run_bench(mpi::MpiComm& comm, const BenchOptions& options) {
  if (!protocol::is_supported_rank_count(comm.size()))
    throw BadInput(fmt::format("{} ranks: the kernels are built for 2, 4, 8 or 16 ranks",
                                      comm.size()));
  if (options.iters < 100) throw BadInput("--iters must be at least 100 (a median of >= 100 calls)");
  const GpuPlacement placement = place_rank_on_gpu(comm, options.compare && options.compare->share_sms);
  // Before any workspace exists: every rank on a node sees the same placement and refuses alike.
  (void)baseline_uses_nccl(options.allreduce, placement.ranks_share_gpu, k::NcclAllReduce::available());
  BenchRunner runner(comm, options, placement);
  if (comm.rank() == 0) {
    fmt::print("fusioncheck gpu bench: {}\n", describe(placement, comm.size()));
    fmt::print("bf16, residual + RMSNorm; median of {} calls after {} warm-up, slowest rank; "
               "latency in microseconds; PDL {}, one-shot RMSNorm path {}\n",
               options.iters, options.warmup, options.use_pdl ? "on" : "off",
               options.cluster == k::ClusterMode::automatic       ? "auto"
               : options.cluster == k::ClusterMode::force_cluster ? "cluster"
                                                                  : "no-cluster");
    const std::string other =
        options.compare ? fmt::format(" {:>11} {:>11} {:>14}", options.compare->name + " 1s",
                                      options.compare->name + " 2s", "other/1shot")
                        : std::string();
    fmt::print("{:>7} {:>7} {:>11} {:>11} {:>11} {:>15} {:>13}{}\n", "tokens", "hidden", "one-shot", "two-shot",
               "unfused", "unfused/1shot", "2shot/1shot", other);
  }
  const nlohmann::json rows = runner.run();
  if (comm.rank() == 0) {
    fmt::print("unfused = {} + separate residual+RMSNorm kernel; {}\n", runner.allreduce_kind(), grid_note(rows));
    if (!options.json_out.empty())
      write_file(options.json_out, nlohmann::json{{"setup", describe(placement, comm.size())},
                                                  {"unfused_allreduce", runner.allreduce_kind()},
                                                  {"rows", rows}}
                                           .dump(1) +
                                       "\n");
  }
  return BenchResult{rows, runner.allreduce_kind()};
}

}  // namespace fusioncheck::gpu
