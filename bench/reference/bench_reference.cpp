// Input bytes per second of the reference's fused call (allreduce + residual + RMSNorm),
// bf16, fp32 accumulation: tokens 1..2048 x hidden 4096/8192 x 2/4/8 ranks. Input bytes =
// (ranks + 1) * tokens * hidden * 2 (rank inputs and residual; gamma is negligible).
// Target: >= 1 GB/s per core, so the reference never limits a GPU property run.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

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
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(c.ranks + 1) * c.tokens *
                          c.hidden * 2);
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
  for (auto _ : state)
    benchmark::DoNotOptimize(norm_out_tolerance(c, out.residual_out, in.gamma).data());
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

// The CPU side of `fusioncheck gpu check` on a mix of calls drawn as its generator draws
// them at 2 ranks, tokens <= 128, hidden <= 4096 (no NVFP4: what an sm_90 run draws), split
// into the phases its progress line reports. The GPU's outputs are taken to equal the
// reference's, as in a clean run. Items = elements of one rank's tensor, over the mix.
struct MixCall {
  FusedConfig config;
  bool exact = true;
  std::uint64_t seed = 0;
};

std::vector<MixCall> suite_mix() {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<MixCall> mix;
  for (int i = 0; i < 64; ++i) {
    MixCall m;
    FusedConfig& c = m.config;
    c.ranks = 2;
    const int shape = pick(0, 9);
    c.hidden = 16 * (shape < 6 ? pick(1, 64) : shape < 9 ? 256 : pick(1, 256));
    const int size = pick(0, 9);
    c.tokens = size < 6 ? pick(1, 16) : pick(1, 128);
    c.dtype = pick(0, 1) ? DType::bf16 : DType::f16;
    c.accumulation = pick(0, 1) ? Accumulation::fp32 : Accumulation::per_step;
    c.weight_bias = static_cast<float>(pick(0, 1));
    c.eps = 1e-6f;
    const int pattern = pick(0, 3);  // allreduce, residual + RMSNorm, FP8 static, FP8 dynamic
    c.quant.fp8_static = pattern == 2;
    c.quant.fp8_dynamic = pattern == 3;
    c.quant.fp8_inv_scale = 2.0f;
    m.exact = pick(0, 3) != 0;
    m.seed = static_cast<std::uint64_t>(i) + 1;
    mix.push_back(m);
  }
  return mix;
}

FusedInputs mix_inputs(const MixCall& m) {
  return m.exact ? make_exact_inputs(m.config, m.seed, 0)
                 : make_random_inputs(m.config, SpecialsSpec{m.seed, 0});
}

std::int64_t mix_elements(const std::vector<MixCall>& mix) {
  std::int64_t n = 0;
  for (const auto& m : mix) n += static_cast<std::int64_t>(m.config.tokens) * m.config.hidden;
  return n;
}

void BM_SuiteMixInputs(benchmark::State& state) {
  const auto mix = suite_mix();
  for (auto _ : state)
    for (const auto& m : mix) benchmark::DoNotOptimize(mix_inputs(m).residual_in.data());
  state.SetItemsProcessed(state.iterations() * mix_elements(mix));
}

// The inputs one rank of an N-rank run generates on the host per call (range(0) = N): every
// input whole (range(1) = 0: a kernel whose Lamport scan needs them, after a one-shot
// checked call), or only its share of the rows of every input and of the residual, the GPU
// making its own input and the residual whole (range(1) = 1: our kernels, see
// CaseRunner::prepare_call). Rank 0's share; items as above.
void BM_SuiteMixInputsPerRank(benchmark::State& state) {
  auto mix = suite_mix();
  const int ranks = static_cast<int>(state.range(0));
  for (auto& m : mix) m.config.ranks = ranks;
  for (auto _ : state)
    for (const auto& m : mix) {
      PartialInputs partial;
      if (state.range(1) != 0) {
        partial.complete_ranks.assign(static_cast<std::size_t>(ranks), false);
        partial.rows = m.config.tokens / ranks;  // rank 0's share: rows [0, tokens / N)
        partial.residual_rows_only = true;
      }
      const FusedInputs in = m.exact
                                 ? make_exact_inputs(m.config, m.seed, 0, true, partial)
                                 : make_random_inputs(m.config, SpecialsSpec{m.seed, 0}, partial);
      benchmark::DoNotOptimize(in.residual_in.data());
    }
  state.SetItemsProcessed(state.iterations() * mix_elements(mix));
}

void BM_SuiteMixReference(benchmark::State& state) {
  const auto mix = suite_mix();
  std::vector<FusedInputs> inputs;
  for (const auto& m : mix) inputs.push_back(mix_inputs(m));
  for (auto _ : state)
    for (std::size_t i = 0; i < mix.size(); ++i)
      benchmark::DoNotOptimize(compute_fused(mix[i].config, inputs[i]).norm_out.data());
  state.SetItemsProcessed(state.iterations() * mix_elements(mix));
}

// What check_outputs does after the reference: bitwise residual, norm within its tolerance,
// the quantised codes within their intervals.
void BM_SuiteMixComparison(benchmark::State& state) {
  const auto mix = suite_mix();
  std::vector<FusedInputs> inputs;
  std::vector<FusedOutputs> outputs;
  for (const auto& m : mix) {
    inputs.push_back(mix_inputs(m));
    outputs.push_back(compute_fused(m.config, inputs.back()));
  }
  for (auto _ : state)
    for (std::size_t i = 0; i < mix.size(); ++i) {
      const FusedConfig& c = mix[i].config;
      const FusedOutputs& out = outputs[i];
      bool bad = first_bit_mismatch(out.residual_out, out.residual_out, "residual_out").has_value();
      const auto allowed = norm_out_tolerance(c, out.residual_out, inputs[i].gamma);
      bad |= first_norm_mismatch(out.norm_out, out.norm_out, allowed).has_value();
      if (c.quant.fp8_static || c.quant.fp8_dynamic) {
        QuantOutputs gpu;
        gpu.fp8_static = out.fp8_static;
        gpu.fp8_dynamic = out.fp8_dynamic;
        gpu.fp8_dynamic_scale = out.fp8_dynamic_scale;
        bad |= first_quant_mismatch(c, out.norm_out, allowed, gpu).has_value();
      }
      if (bad) state.SkipWithError("the reference's own outputs failed the check");
    }
  state.SetItemsProcessed(state.iterations() * mix_elements(mix));
}

BENCHMARK(BM_FusedBf16)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckExactInputs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckNormTolerance)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckFp8Static)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckFp8Dynamic)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FusedBf16PerStep)->Args({128, 4096, 8})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SuiteMixInputs)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SuiteMixInputsPerRank)
    ->ArgsProduct({{2, 4, 8}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SuiteMixReference)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SuiteMixComparison)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
