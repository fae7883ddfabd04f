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

// What the GPU property suite computes on the CPU for one checked call besides the fused
// reference (rank 0, 2 ranks, 64 x 4096 bf16): the inputs of every rank, the norm tolerance
// and the FP8 interval checks. Items = elements of one rank's tensor.
FusedConfig check_config(bool fp8_static, bool fp8_dynamic) {
  FusedConfig c;
  c.dtype = DType::bf16;
  c.tokens = 64;
  c.hidden = 4096;
  c.ranks = 2;
  c.quant.fp8_static = fp8_static;
  c.quant.fp8_inv_scale = 2.0f;
  c.quant.fp8_dynamic = fp8_dynamic;
  return c;
}

void BM_CheckExactInputs(benchmark::State& state) {
  const FusedConfig c = check_config(false, false);
  std::uint64_t call = 0;
  for (auto _ : state) benchmark::DoNotOptimize(make_exact_inputs(c, 1, call++).residual_in.data());
  state.SetItemsProcessed(state.iterations() * c.tokens * c.hidden);
}

void BM_CheckNormTolerance(benchmark::State& state) {
  const FusedConfig c = check_config(false, false);
  const FusedInputs in = make_exact_inputs(c, 1, 0);
  const FusedOutputs out = compute_fused(c, in);
  for (auto _ : state) benchmark::DoNotOptimize(norm_out_tolerance(c, out.residual_out, in.gamma).data());
  state.SetItemsProcessed(state.iterations() * c.tokens * c.hidden);
}

// The GPU's codes equal the reference's here: every element passes, as in a clean run.
void run_fp8_check(benchmark::State& state, bool dynamic) {
  const FusedConfig c = check_config(!dynamic, dynamic);
  const FusedInputs in = make_exact_inputs(c, 1, 0);
  const FusedOutputs out = compute_fused(c, in);
  const auto allowed = norm_out_tolerance(c, out.residual_out, in.gamma);
  QuantOutputs gpu;
  gpu.fp8_static = out.fp8_static;
  gpu.fp8_dynamic = out.fp8_dynamic;
  gpu.fp8_dynamic_scale = out.fp8_dynamic_scale;
  for (auto _ : state) {
    const auto m = first_quant_mismatch(c, out.norm_out, allowed, gpu);
    if (m) state.SkipWithError("the reference's own codes failed the check");
  }
  state.SetItemsProcessed(state.iterations() * c.tokens * c.hidden);
}
void BM_CheckFp8Static(benchmark::State& state) { run_fp8_check(state, false); }
void BM_CheckFp8Dynamic(benchmark::State& state) { run_fp8_check(state, true); }

BENCHMARK(BM_FusedBf16)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckExactInputs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckNormTolerance)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckFp8Static)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckFp8Dynamic)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FusedBf16PerStep)->Args({128, 4096, 8})->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
