// Latency of the fused one-shot and two-shot kernels against the unfused baseline
// (one-shot allreduce-only + residual/RMSNorm kernel: NCCL refuses ranks sharing a GPU),
// 2 ranks in one process on one GPU, bf16, residual + RMSNorm. Each case: 20 warm-up
// calls, then 200 timed calls (CUDA events around both ranks' launches); reported time is
// the median, with p10 / p90 as counters. Prints a note and exits 0 without a GPU.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "fusioncheck/kernels/baseline.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/launch.hpp"

namespace fk = fusioncheck::kernels;

namespace {

constexpr int kRanks = 2;
constexpr int kMaxTokens = 2048;
constexpr int kMaxHidden = 8192;
constexpr int kWarmup = 20;
constexpr int kTimed = 200;

struct Bench {
  std::vector<fk::Workspace> ws;
  cudaStream_t streams[kRanks]{};
  void* bufs[kRanks][6]{};  // input, residual, gamma, allreduce/scratch, residual_out, norm
  cudaEvent_t start{}, stop{}, rank1_done{};

  Bench() {
    fk::WorkspaceConfig c;
    c.ranks = kRanks;
    c.comm_size = static_cast<std::uint64_t>(kRanks) * kMaxTokens * kMaxHidden * 2;
    ws = fk::Workspace::create_in_process(c);
    const std::size_t bytes = static_cast<std::size_t>(kMaxTokens) * kMaxHidden * 2;
    for (int r = 0; r < kRanks; ++r) {
      fk::cuda_check(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), "stream");
      for (auto& b : bufs[r]) {
        fk::cuda_check(cudaMalloc(&b, bytes), "cudaMalloc");
        fk::cuda_check(cudaMemset(b, 0x3c, bytes), "cudaMemset");  // small finite values
      }
    }
    fk::cuda_check(cudaDeviceSynchronize(), "sync");  // fills ran on the legacy stream
    fk::cuda_check(cudaEventCreate(&start), "event");
    fk::cuda_check(cudaEventCreate(&stop), "event");
    fk::cuda_check(cudaEventCreate(&rank1_done), "event");
  }

  fk::FusedParams params(int rank, int tokens, int hidden) const {
    fk::FusedParams p;
    p.ranks = kRanks;
    p.rank = rank;
    p.tokens = tokens;
    p.hidden = hidden;
    p.pattern = fk::Pattern::residual_rmsnorm;
    p.input = bufs[rank][0];
    p.residual_in = bufs[rank][1];
    p.gamma = bufs[rank][2];
    p.residual_out = bufs[rank][4];
    p.norm_out = bufs[rank][5];
    return p;
  }

  // One call on both ranks, timed from the start event on stream 0 to both ranks' end.
  float timed_call(int path, int tokens, int hidden) {
    fk::cuda_check(cudaEventRecord(start, streams[0]), "record");
    fk::cuda_check(cudaStreamWaitEvent(streams[1], start), "wait");
    for (int r = 0; r < kRanks; ++r) {
      const fk::FusedParams p = params(r, tokens, hidden);
      if (path == 0) fk::launch_oneshot(p, ws[r], streams[r]);
      else if (path == 1) fk::launch_twoshot(p, ws[r], streams[r]);
      else fk::launch_unfused_baseline(p, ws[r], bufs[r][3], streams[r]);
    }
    fk::cuda_check(cudaEventRecord(rank1_done, streams[1]), "record");
    fk::cuda_check(cudaStreamWaitEvent(streams[0], rank1_done), "wait");
    fk::cuda_check(cudaEventRecord(stop, streams[0]), "record");
    fk::cuda_check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    fk::cuda_check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    for (auto& w : ws) w.throw_if_hung();
    return ms;
  }
};

Bench& bench() {
  static Bench b;
  return b;
}

const char* kPathNames[] = {"oneshot", "twoshot", "unfused"};

void BM_Fused(benchmark::State& state) {
  const int path = static_cast<int>(state.range(0));
  const int tokens = static_cast<int>(state.range(1));
  const int hidden = static_cast<int>(state.range(2));
  Bench& b = bench();
  std::vector<float> ms;
  for (auto _ : state) {
    for (int i = 0; i < kWarmup; ++i) b.timed_call(path, tokens, hidden);
    ms.clear();
    for (int i = 0; i < kTimed; ++i) ms.push_back(b.timed_call(path, tokens, hidden));
    std::sort(ms.begin(), ms.end());
    state.SetIterationTime(ms[ms.size() / 2] / 1000.0);
  }
  state.SetLabel(kPathNames[path]);
  state.counters["median_us"] = ms[ms.size() / 2] * 1000.0;
  state.counters["p10_us"] = ms[ms.size() / 10] * 1000.0;
  state.counters["p90_us"] = ms[ms.size() * 9 / 10] * 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("bench_kernels: no CUDA device, nothing to measure\n");
    return 0;
  }
  for (int path = 0; path < 3; ++path)
    for (int hidden : {4096, 8192})
      for (int tokens : {1, 4, 16, 64, 256, 1024, 2048})
        benchmark::RegisterBenchmark((std::string("fused/") + kPathNames[path]).c_str(), BM_Fused)
            ->Args({path, tokens, hidden})
            ->ArgNames({"path", "tokens", "hidden"})
            ->Iterations(1)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
