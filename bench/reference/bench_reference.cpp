// Input bytes per second of the reference's fused call (allreduce + residual + RMSNorm),
// bf16, fp32 accumulation: tokens 1..2048 x hidden 4096/8192 x 2/4/8 ranks. Input bytes =
// (ranks + 1) * tokens * hidden * 2 (rank inputs and residual; gamma is negligible).
// Target: >= 1 GB/s per core, so the reference never limits a GPU property run.
#include <benchmark/benchmark.h>

#include "fusioncheck/reference/reference.hpp"

namespace {

using namespace fusioncheck::reference;

// One fused call of the reference, bf16; the bytes are the inputs read (N ranks + residual).
void run_fused_bf16(benchmark::State& state, Accumulation accumulation) {
  FusedConfig c;
  c.dtype = DType::bf16;
  c.accumulation = accumulation;
  c.tokens = static_cast<int>(state.range(0));
  c.hidden = static_cast<int>(state.range(1));
  c.ranks = static_cast<int>(state.range(2));
  const FusedInputs in = make_random_inputs(c, SpecialsSpec{1, 0, 0, false});
  FusedOutputs out;  // reused across calls, as a GPU harness would
  for (auto _ : state) {
    compute_fused_into(c, in, out);
    benchmark::DoNotOptimize(out.norm_out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(c.ranks + 1) * c.tokens * c.hidden * 2);
}

void BM_FusedBf16(benchmark::State& state) { run_fused_bf16(state, Accumulation::fp32); }
void BM_FusedBf16PerStep(benchmark::State& state) { run_fused_bf16(state, Accumulation::per_step); }

void shapes(benchmark::internal::Benchmark* b) {
  for (int tokens : {1, 16, 128, 2048})
    for (int hidden : {4096, 8192})
      for (int ranks : {2, 4, 8}) b->Args({tokens, hidden, ranks});
}

BENCHMARK(BM_FusedBf16)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FusedBf16PerStep)->Args({128, 4096, 8})->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
