// `fusioncheck gpu smoke`: every kernel x pattern x dtype x option once, in a fixed order.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "fusioncheck/gpu/case_runner.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_runs.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "fusioncheck/gpu/mpi_bootstrap.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;

// A case's knobs that cycle with its number `knob`: seed, hidden, weight_bias, issue mode
// (hidden sizes the kernel runs only: run_smoke refuses a list without any).
GpuCase cycled_case(const SmokeOptions& options, int ranks, int knob, k::DType dtype, bool fp32_acc,
                    const KernelTraits& traits) {
  std::vector<int> hidden;
  for (int h : options.hidden)
    if (traits.runs_hidden(h)) hidden.push_back(h);
  GpuCase c;
  c.seed = options.seed + static_cast<std::uint64_t>(knob);
  c.ranks = ranks;
  c.hidden = hidden[static_cast<std::size_t>(knob) % hidden.size()];
  c.dtype = dtype;
  c.fp32_accumulation = fp32_acc;
  c.weight_bias = knob % 2 && traits.weight_bias ? 1.0f : 0.0f;
  c.mode = static_cast<IssueMode>(knob % 3);
  if (c.mode == IssueMode::graph_replay && !traits.graph_replay) c.mode = IssueMode::back_to_back;
  c.neg_zero_inputs = traits.neg_zero_inputs;
  return c;
}

// The call within what the kernel runs: tokens, trigger, cluster path, the PDL consumer.
void fit_call(CallSpec& call, const GpuCase& c, const KernelTraits& traits) {
  if (traits.max_tokens > 0) call.tokens = std::min(call.tokens, traits.max_tokens);
  if (!c.calls.empty() && !traits.shape_changes_without_sync &&
      c.mode != IssueMode::checked_each_call)
    call.tokens = c.calls[0].tokens;
  fit_tokens_to_variant(call, c.hidden,
                        traits.max_tokens > 0 ? traits.max_tokens : call.tokens * 64, traits);
  if (!traits.early_trigger) call.trigger = k::Trigger::at_end;
  if (!traits.forced_cluster) call.cluster = k::ClusterMode::automatic;
  call.pdl_consumer =
      call.use_pdl && call.trigger == k::Trigger::at_end && traits.outputs_visible_at_trigger;
}

// A MoE kernel's knobs, cycled: which of its kernels (unless `keep_variant`), the experts (as
// models route them), the finalize kernel's scales, shared expert and routed scaling, the
// reduction kernel's sum written out.
void fit_moe(CallSpec& call, int cycle, const KernelTraits& traits, bool keep_variant) {
  if (!traits.moe) return;
  if (!keep_variant) call.variant = cycle % static_cast<int>(traits.variants.size());
  constexpr int kExperts[] = {8, 4, 2, 1, 6};
  call.moe_experts = kExperts[cycle % 5];
  const bool finalize = traits.variants.at(static_cast<std::size_t>(call.variant)).moe_finalize;
  call.moe_expert_scales = !finalize || cycle % 3 != 2;
  call.moe_shared_expert = finalize && cycle % 2 == 1;
  call.moe_routed_scaling = finalize && cycle % 4 == 1 ? 2.0f : 1.0f;
  call.moe_allreduce_out = !finalize && cycle % 4 >= 2;
}

// The block-scaled FP8 knobs of a call whose tokens are final, cycled: mxfp8's two scale
// layouts; group FP8 in groups of 128 (or the largest of 64, 32 that divides hidden), its
// scales' tokens padded to 4 or by 3 more.
void fit_block_scales(CallSpec& call, int hidden, int cycle) {
  call.scale_layout = cycle % 2 ? k::Nvfp4Layout::linear : k::Nvfp4Layout::swizzled128x4;
  for (int size : {128, 64, 32})
    if (hidden % size == 0) {
      call.group_size = size;
      break;
    }
  call.tma_aligned_mn = cycle % 2 ? 0 : call.tokens + 3;
}

// The block-scaled FP8 patterns need hidden to be a multiple of 32 (a case of another
// hidden size is left out, not refused).
bool runs_here(k::Pattern pattern, int hidden) {
  return !protocol::pattern_block_scaled_fp8(pattern) || hidden % protocol::kMxfp8BlockSize == 0;
}

// A call's knobs that cycle with (case knob + position): tokens, PDL, trigger, cluster path.
CallSpec cycled_call(const SmokeOptions& options, int cycle, k::Pattern pattern) {
  CallSpec call;
  call.pattern = pattern;
  call.tokens = options.tokens[static_cast<std::size_t>(cycle) % options.tokens.size()];
  call.use_pdl = cycle % 4 != 3;
  call.trigger = cycle % 2 ? k::Trigger::early : k::Trigger::at_end;
  call.cluster = static_cast<k::ClusterMode>(cycle % 3);
  call.pdl_consumer = call.use_pdl && call.trigger == k::Trigger::at_end;
  // Every other PDL call has its inputs written by a PDL producer right before it.
  call.pdl_producer = options.pdl_producer && call.use_pdl && cycle % 2 == 0;
  call.producer_delay_ns = call.pdl_producer ? 20'000 : 0;
  return call;
}

// The product of what selects different code, with the cheaper knobs (PDL, trigger,
// cluster path, weight_bias, hidden, issue mode) cycled so that each value is covered.
// Only what the kernel under test supports (KernelTraits): anything it refuses here is a
// failure of the build.
std::vector<GpuCase> smoke_cases(const SmokeOptions& options, int ranks,
                                 const KernelTraits& traits) {
  std::vector<GpuCase> cases;
  int knob = 0;
  for (bool fp32_lamport : {false, true})
    for (bool twoshot : {false, true}) {
      if (twoshot && fp32_lamport) continue;  // the two-shot path has no Lamport buffer
      if ((fp32_lamport && !traits.fp32_lamport) || (twoshot && !traits.twoshot)) continue;
      for (auto pattern : protocol::kAllPatterns)
        for (auto dtype : {k::DType::bf16, k::DType::f16})
          for (bool fp32_acc : {true, false}) {
            if (!traits.runs_pattern(pattern) || (fp32_acc && !traits.fp32_accumulation) ||
                (!fp32_acc && !traits.per_step_accumulation))
              continue;
            GpuCase c = cycled_case(options, ranks, knob, dtype, fp32_acc, traits);
            if (!runs_here(pattern, c.hidden)) continue;
            c.fp32_lamport = fp32_lamport;
            if (knob % 4 == 1) {  // seeded injected delays in every fourth case
              c.delay_seed = static_cast<std::uint32_t>(knob) + 1;
              c.delay_max_ns = 20'000;
            }
            for (int i = 0; i < options.calls_per_case; ++i) {
              CallSpec call = cycled_call(options, knob + i, pattern);
              call.twoshot = twoshot;
              fit_call(call, c, traits);
              if (twoshot && traits.twoshot_more_tokens_than_ranks)
                call.tokens = std::max(call.tokens, ranks + 1);
              fit_block_scales(call, c.hidden, knob + i);
              fit_moe(call, knob + i, traits, false);
              c.calls.push_back(call);
            }
            cases.push_back(c);
            ++knob;
          }
    }
  // Every launch variant of a kernel that has several: one case each, of its first pattern;
  // a fast-math build on bf16 with the norm (where its flushing shows).
  for (std::size_t v = 0; v < traits.variants.size(); ++v) {
    const bool fast = traits.variants[v].fast_math;
    const k::Pattern pattern = fast && traits.runs_pattern(k::Pattern::residual_rmsnorm)
                                   ? k::Pattern::residual_rmsnorm
                               : traits.patterns.empty() ? k::Pattern::allreduce
                                                         : traits.patterns[0];
    const k::DType dtype = v % 2 && !fast ? k::DType::f16 : k::DType::bf16;
    GpuCase c = cycled_case(options, ranks, knob, dtype, traits.fp32_accumulation, traits);
    for (int i = 0; i < options.calls_per_case; ++i) {
      CallSpec call = cycled_call(options, knob + i, pattern);
      call.variant = static_cast<int>(v);
      fit_call(call, c, traits);
      fit_moe(call, knob + i, traits, true);
      c.calls.push_back(call);
    }
    cases.push_back(c);
    ++knob;
  }
  // Every quantising pattern without norm_out, where the kernel has them.
  for (auto pattern : protocol::kAllPatterns) {
    if (!k::pattern_quantises(pattern) || !traits.quant_without_norm_out ||
        !traits.runs_pattern(pattern))
      continue;
    GpuCase c = cycled_case(options, ranks, knob, k::DType::bf16, traits.fp32_accumulation, traits);
    if (!runs_here(pattern, c.hidden)) continue;
    for (int i = 0; i < options.calls_per_case; ++i) {
      CallSpec call = cycled_call(options, knob + i, pattern);
      call.norm_out = false;
      call.pdl_consumer = false;
      fit_call(call, c, traits);
      fit_block_scales(call, c.hidden, knob + i);
      fit_moe(call, knob + i, traits, false);
      c.calls.push_back(call);
    }
    cases.push_back(c);
    ++knob;
  }
  // The unfused baseline (allreduce-only call + separate residual/RMSNorm/quant kernel).
  if (!traits.unfused) return cases;
  for (auto pattern : {k::Pattern::residual_rmsnorm, k::Pattern::fp8_static,
                       k::Pattern::fp8_dynamic, k::Pattern::nvfp4})
    for (auto dtype : {k::DType::bf16, k::DType::f16}) {
      GpuCase c = cycled_case(
          options, ranks, knob, dtype,
          (knob % 2 == 0 || !traits.per_step_accumulation) && traits.fp32_accumulation, traits);
      for (int i = 0; i < options.calls_per_case; ++i) {
        CallSpec call = cycled_call(options, knob + i, pattern);
        call.unfused = true;
        // As run on the H200: the baseline's own kernels keep their defaults.
        call.trigger = k::Trigger::at_end;
        call.cluster = k::ClusterMode::automatic;
        call.pdl_consumer = false;
        call.pdl_producer = false;
        call.producer_delay_ns = 0;
        c.calls.push_back(call);
      }
      cases.push_back(c);
      ++knob;
    }
  return cases;
}

}  // namespace

SmokeResult run_smoke(mpi::MpiComm& comm, const SmokeOptions& options) {
  require_rank_count(comm, options.kernel);
  for (int h : options.hidden)
    if (h <= 0 || h % 16 != 0)
      throw BadInput(fmt::format("--hidden {}: must be a positive multiple of 16", h));
  for (int t : options.tokens)
    if (t <= 0) throw BadInput(fmt::format("--tokens {}: must be positive", t));
  const GpuPlacement placement = place_rank_on_gpu(comm, options.kernel.share_sms);
  MpiBootstrap bootstrap(comm);
  const std::unique_ptr<KernelUnderTest> made = options.kernel.make(bootstrap, MutantId());
  KernelUnderTest& kernel = *made;
  const KernelTraits traits = kernel.traits();
  if (std::none_of(options.hidden.begin(), options.hidden.end(),
                   [&](int h) { return traits.runs_hidden(h); }))
    throw BadInput(fmt::format("--hidden: {} runs none of these hidden sizes", kernel.name()));
  if (comm.rank() == 0)
    fmt::print("fusioncheck gpu smoke: {}; {}\n", kernel.name(), describe(placement, comm.size()));
  CaseLimits limits;
  limits.max_tokens = *std::max_element(options.tokens.begin(), options.tokens.end());
  limits.max_hidden = *std::max_element(options.hidden.begin(), options.hidden.end());
  limits.max_elems = static_cast<std::int64_t>(limits.max_tokens) * limits.max_hidden;
  limits.max_calls = options.calls_per_case;
  limits.validate();
  CaseRunner runner(comm, kernel, limits);
  KnownFindingRun known(
      options.known ? entries_for(*options.known, options.kernel.name, options.kernel.release)
                    : std::vector<KnownFinding>{});
  nlohmann::json results = nlohmann::json::array();
  SmokeResult result;
  const auto cases = smoke_cases(options, comm.size(), traits);
  for (const GpuCase& c :
       cases)  // a case outside the traits is a bug of smoke_cases, not of the kernel
    if (const std::string why = outside_traits(c, traits); !why.empty())
      throw std::logic_error("gpu smoke drew a case " + kernel.name() + " does not run: " + why);
  for (const GpuCase& c : cases) {
    const int done = result.passed + result.failed + result.refused + result.known;
    if (comm.rank() == 0 && done % 20 == 0)
      fmt::print("  ... case {}/{}\n", done + 1, cases.size()), std::fflush(stdout);
    const CaseVerdict v = runner.run(c);
    std::string outcome = v.refused ? "refused" : v.failed() ? "fail" : "pass";
    if (!v.refused) known.count_trigger(c);
    // The verdict's findings are whole on rank 0, which tells every rank whether they are known.
    int entry = comm.rank() == 0 && v.failed() ? known.match(c, v.findings) : -1;
    comm.broadcast(&entry, sizeof entry, 0, "the ledger's verdict on a smoke case");
    if (v.refused) {
      // NVFP4 needs sm_100+; anything else refused is a failure of this build.
      const bool expected =
          c.calls[0].pattern == k::Pattern::nvfp4 && placement.compute_capability < 100;
      if (expected) ++result.refused;
      else {
        ++result.failed;
        outcome = "fail";
      }
      if (!expected && comm.rank() == 0)
        fmt::print(stderr, "FAIL {}: launch refused: {}\n", describe(c), v.refusal);
    } else if (entry >= 0) {
      ++result.known;
      ++known.tallies[static_cast<std::size_t>(entry)].failed_cases;
      outcome = "known " + known.entries[static_cast<std::size_t>(entry)].id;
      if (comm.rank() == 0)
        fmt::print("known {} {}: [{}] {}\n", known.entries[static_cast<std::size_t>(entry)].id,
                   describe(c), v.findings.front().check, v.findings.front().message);
    } else if (v.failed()) {
      ++result.failed;
      if (comm.rank() == 0)
        for (const auto& f : v.findings)
          fmt::print(stderr, "FAIL {}: [{}] {}\n", describe(c), f.check, f.message);
    } else {
      ++result.passed;
    }
    if (comm.rank() == 0)
      results.push_back({{"case", to_json(c)}, {"outcome", outcome}, {"refusal", v.refusal}});
    if (v.hang && entry < 0) break;  // the workspace is not reusable after an expired wait
    if (v.failed()) kernel.reset();  // state after a failure is not trusted (as in gpu check)
  }
  result.calls = runner.calls_run();
  result.tallies = known.tallies;
  result.absent = known.absent();
  if (comm.rank() == 0) {
    fmt::print(
        "fusioncheck gpu smoke: {} cases passed, {} failed, {} refused as expected (NVFP4 below "
        "sm_100); {} kernel calls on each rank\n",
        result.passed, result.failed, result.refused, result.calls);
    if (options.known) {
      const std::string line = describe_tallies(result.tallies);
      fmt::print(
          "known findings: {} cases failed with a known finding, {} new failures, {} "
          "entries absent{}{}\n",
          result.known, result.failed, result.absent, line.empty() ? "" : ": ", line);
    }
    if (!options.json_out.empty()) write_file(options.json_out, results.dump(1) + "\n");
  }
  return result;
}

}  // namespace fusioncheck::gpu
