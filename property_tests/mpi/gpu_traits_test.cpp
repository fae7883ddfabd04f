// What a kernel narrower than ours changes in the suite, on the CPU: the reference's rotated
// summation order, inputs without -0, and the case checks against KernelTraits.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"

namespace {

namespace fg = fusioncheck::gpu;
namespace fk = fusioncheck::kernels;
namespace ref = fusioncheck::reference;

// 4 ranks, bf16 rounded after every add: 1 + 2^-8 is a tie that rounds back to 1 in rank
// order (1, 2^-8, 2^-8, 0 -> 1), but from rank 1 the small terms meet first (2^-8 + 2^-8 +
// 0 + 1 = 1 + 2^-7, exact). So the order option shows in the result; fp32 accumulation sums
// all four exactly in either order.
TEST(ReferenceOrder, RotatedPerStepSumsDifferFromRankOrder) {
  ref::FusedConfig c;
  c.ranks = 4;
  c.tokens = 1;
  c.hidden = 16;
  c.dtype = fk::DType::bf16;
  c.accumulation = ref::Accumulation::per_step;
  ref::FusedInputs in = ref::make_exact_inputs(c, 1, 0, false);
  const float terms[4] = {1.0f, 0x1p-8f, 0x1p-8f, 0.0f};
  for (int r = 0; r < 4; ++r) in.rank_inputs[r].set_value(0, terms[r]);
  EXPECT_EQ(ref::compute_fused(c, in).allreduce.value_at(0), 1.0f);
  c.sum_from = 1;
  EXPECT_EQ(ref::compute_fused(c, in).allreduce.value_at(0), 1.0f + 0x1p-7f);
  c.sum_from = 3;  // 0 + 1 + 2^-8 + 2^-8: two ties that round to even, back to 1
  EXPECT_EQ(ref::compute_fused(c, in).allreduce.value_at(0), 1.0f);
  c.accumulation = ref::Accumulation::fp32;
  c.sum_from = 1;  // one rounding at the end: exact 1 + 2^-7 in either order
  EXPECT_EQ(ref::compute_fused(c, in).allreduce.value_at(0), 1.0f + 0x1p-7f);
  c.sum_from = 4;
  EXPECT_THROW((void)ref::compute_fused(c, in), std::invalid_argument);
}

std::size_t neg_zeros(const ref::FusedInputs& in) {
  std::size_t n = 0;
  for (const auto& t : in.rank_inputs)
    for (std::size_t i = 0; i < t.size(); ++i) n += t.bits_at(i) == 0x8000u;
  return n;
}

// Without -0 the inputs hold none, exact and random alike; with it (the control) they do.
TEST(InputsWithoutNegZero, NoneDrawnWhenExcluded) {
  ref::FusedConfig c;
  c.ranks = 4;
  c.tokens = 16;
  c.hidden = 1024;
  ref::SpecialsSpec specials{3, 0, 128, false};
  EXPECT_GT(neg_zeros(ref::make_exact_inputs(c, 3, 0, true)), 0u);
  EXPECT_GT(neg_zeros(ref::make_random_inputs(c, specials)), 0u);
  specials.with_neg_zero = false;
  EXPECT_EQ(neg_zeros(ref::make_exact_inputs(c, 3, 0, false)), 0u);
  EXPECT_EQ(neg_zeros(ref::make_random_inputs(c, specials)), 0u);
}

fg::KernelTraits narrow() {
  fg::KernelTraits t;
  t.twoshot = false;
  t.unfused = false;
  t.forced_cluster = false;
  t.fp32_lamport = false;
  t.outputs_visible_at_trigger = false;
  t.max_tokens = 16;
  t.hidden_sizes = {256, 1024};
  t.patterns = {fk::Pattern::residual_rmsnorm};
  t.fp32_accumulation = false;
  t.weight_bias = false;
  t.early_trigger = false;
  t.graph_replay = false;
  t.shape_changes_without_sync = false;
  t.neg_zero_inputs = false;
  return t;
}

fg::GpuCase inside() {
  fg::GpuCase c;
  c.hidden = 1024;
  c.fp32_accumulation = false;
  c.mode = fg::IssueMode::back_to_back;
  c.neg_zero_inputs = false;
  c.calls.assign(2, fg::CallSpec{});
  c.calls[0].tokens = c.calls[1].tokens = 16;
  return c;
}

// Each narrowed trait, broken alone, is named; the case inside them passes.
TEST(OutsideTraits, NamesEachNarrowedTrait) {
  EXPECT_EQ(fg::outside_traits(inside(), narrow()), "");
  EXPECT_EQ(fg::outside_traits(inside(), fg::KernelTraits{}), "");  // ours run everything
  struct Edit {
    const char* expect;
    void (*edit)(fg::GpuCase&);
  };
  const Edit edits[] = {
      {"hidden=512", [](fg::GpuCase& c) { c.hidden = 512; }},
      {"more than 16 tokens", [](fg::GpuCase& c) { c.calls[0].tokens = c.calls[1].tokens = 17; }},
      {"pattern", [](fg::GpuCase& c) { c.calls[1].pattern = fk::Pattern::fp8_static; }},
      {"fp32 accumulation", [](fg::GpuCase& c) { c.fp32_accumulation = true; }},
      {"weight_bias=1", [](fg::GpuCase& c) { c.weight_bias = 1.0f; }},
      {"graph replay", [](fg::GpuCase& c) { c.mode = fg::IssueMode::graph_replay; }},
      {"inputs with -0", [](fg::GpuCase& c) { c.neg_zero_inputs = true; }},
      {"early trigger", [](fg::GpuCase& c) { c.calls[0].trigger = fk::Trigger::early; }},
      {"two-shot", [](fg::GpuCase& c) { c.calls[0].twoshot = true; }},
      {"forced cluster",
       [](fg::GpuCase& c) { c.calls[0].cluster = fk::ClusterMode::force_cluster; }},
      {"PDL consumer", [](fg::GpuCase& c) { c.calls[0].pdl_consumer = true; }},
      {"shape change without a host sync", [](fg::GpuCase& c) { c.calls[1].tokens = 8; }},
  };
  for (const Edit& e : edits) {
    fg::GpuCase c = inside();
    e.edit(c);
    EXPECT_NE(fg::outside_traits(c, narrow()).find(e.expect), std::string::npos)
        << e.expect << " | got: " << fg::outside_traits(c, narrow());
  }
  fg::GpuCase synced = inside();  // a shape change with a host sync between the calls is fine
  synced.mode = fg::IssueMode::checked_each_call;
  synced.calls[1].tokens = 8;
  EXPECT_EQ(fg::outside_traits(synced, narrow()), "");
}

// Whether every case drawn with these settings starts blocks late: delayed with the longest
// spread, issued eagerly, one-shot calls of at least kLateBlocksMinTokens tokens.
bool every_case_starts_blocks_late(bool focus) {
  fg::DrawSettings s;
  s.focus_late_blocks = focus;
  return rc::check(std::string("late-block cases, focus ") + (focus ? "on" : "off"), [&] {
    const fg::GpuCase c = fg::draw_case(s, fg::KernelTraits{});
    RC_ASSERT(c.delay_seed != 0u);
    RC_ASSERT(c.delay_max_ns == fg::kLateBlocksDelayNs);
    RC_ASSERT(c.mode != fg::IssueMode::graph_replay);
    for (const fg::CallSpec& call : c.calls) {
      RC_ASSERT(!call.twoshot);
      RC_ASSERT(call.tokens >=
                std::min(fg::kLateBlocksMinTokens, s.limits.max_tokens_for(c.hidden)));
    }
  });
}

TEST(DrawCase, LateBlockFocusDelaysEveryCaseWithManyTokensOneShot) {
  EXPECT_TRUE(every_case_starts_blocks_late(true));
  EXPECT_FALSE(every_case_starts_blocks_late(false));  // control: the usual mix is not all that
}

// Of the cases drawn with this share of two-stream cases: how many were drawn, and how many
// are issued from two streams (each must hold two calls at least and be valid).
std::pair<int, int> two_stream_cases(int percent) {
  fg::DrawSettings s;
  s.two_streams_percent = percent;
  int two = 0, drawn = 0;
  const bool ok = rc::check("two-stream cases at " + std::to_string(percent) + " %", [&] {
    const fg::GpuCase c = fg::draw_case(s, fg::KernelTraits{});
    ++drawn;
    if (c.mode != fg::IssueMode::two_streams) return;
    ++two;
    RC_ASSERT(c.calls.size() >= 2u);
    RC_ASSERT(fg::case_problem(c).empty());
  });
  EXPECT_TRUE(ok);
  return {drawn, two};
}

TEST(DrawCase, TwoStreamCasesAreDrawnOnlyWhenAskedAndHoldTwoCallsAtLeast) {
  const auto none = two_stream_cases(0);
  EXPECT_GT(none.first, 0);
  EXPECT_EQ(none.second, 0);
  const auto all = two_stream_cases(100);
  EXPECT_GT(all.first, 0);
  EXPECT_EQ(all.second, all.first);
  const auto some = two_stream_cases(50);  // both kinds in a mixed run
  EXPECT_GT(some.second, 0);
  EXPECT_LT(some.second, some.first);
}

// Whether every case drawn with these settings holds a rank in a call that another follows,
// issued without a host sync between them.
bool every_case_holds_a_rank_behind(bool focus) {
  fg::DrawSettings s;
  s.focus_held_rank = focus;
  return rc::check(std::string("held-rank cases, focus ") + (focus ? "on" : "off"), [&] {
    const fg::GpuCase c = fg::draw_case(s, fg::KernelTraits{});
    RC_ASSERT(c.hold.active());
    RC_ASSERT(c.hold.call + 1 < static_cast<int>(c.calls.size()));
    RC_ASSERT(c.mode != fg::IssueMode::checked_each_call);
    RC_ASSERT(fg::outside_traits(c, fg::KernelTraits{}).empty());
  });
}

TEST(DrawCase, HeldRankFocusHoldsARankInACallThatAnotherFollows) {
  EXPECT_TRUE(every_case_holds_a_rank_behind(true));
  EXPECT_FALSE(every_case_holds_a_rank_behind(false));  // control: the usual mix is not all that
  // A kernel that holds nowhere but before its push, behind no PDL producer: still held.
  fg::DrawSettings s;
  s.focus_held_rank = true;
  fg::KernelTraits plain;
  plain.holds_through_params = false;
  EXPECT_TRUE(rc::check("held-rank cases of a kernel that holds before its push only", [&] {
    const fg::GpuCase c = fg::draw_case(s, plain);
    RC_ASSERT(c.hold.active());
    RC_ASSERT(!c.calls[static_cast<std::size_t>(c.hold.call)].pdl_producer);
  }));
}

TEST(GpuCase, NegZeroInputsTravelInJsonAndDefaultToTrue) {
  auto j = fg::to_json(inside());
  EXPECT_FALSE(fg::case_from_json(j).neg_zero_inputs);
  j.erase("neg_zero_inputs");  // files written before the field existed
  EXPECT_TRUE(fg::case_from_json(j).neg_zero_inputs);
}

}  // namespace

// By default the draw holds released models' hidden sizes (e.g. gpt-oss's 2880, not a multiple
// of 256) within --max-hidden, beside random multiples of 16; the fixed seeds draw several
// model sizes, one that is not a multiple of 256 among them, and none above --max-hidden.
TEST(DrawCase, ModelHiddenSizesAreDrawnWithinMaxHidden) {
  for (int max_hidden : {8192, 4096}) {
    fg::DrawSettings s;
    s.limits.max_hidden = max_hidden;
    const auto gen = rc::gen::exec([&] { return fg::draw_case(s, fg::KernelTraits{}); });
    std::set<int> models, others;
    for (std::uint64_t seed = 1; seed <= 400; ++seed) {
      const fg::GpuCase c = gen(rc::Random(seed), 50).value();
      ASSERT_LE(c.hidden, max_hidden) << "seed " << seed;
      ASSERT_EQ(c.hidden % 16, 0) << "seed " << seed;
      const bool model =
          std::find(std::begin(fg::kModelHiddenSizes), std::end(fg::kModelHiddenSizes), c.hidden) !=
          std::end(fg::kModelHiddenSizes);
      (model ? models : others).insert(c.hidden);
    }
    EXPECT_GE(models.size(), 4u) << "max_hidden " << max_hidden;
    EXPECT_TRUE(std::any_of(models.begin(), models.end(), [](int h) { return h % 256 != 0; }))
        << "max_hidden " << max_hidden;
    EXPECT_GE(others.size(), 20u) << "max_hidden " << max_hidden;  // random sizes still drawn
  }
}

// A variant with a deeper path from some size (the copy-engine ring's pieces) gets about a
// quarter of its calls at the largest size the limits allow, which reaches it for hidden sizes
// that divide the limit; the control: the same variant without that path almost never draws
// a call that large. Fixed seeds.
TEST(DrawCase, ADeepPathIsReachedByAQuarterOfTheVariantsCalls) {
  const auto share_deep = [](std::uint64_t deep_from) {
    fg::KernelTraits traits;
    fg::KernelVariant v;
    v.name = "ring";
    v.elems_multiple = 16;
    v.deep_from_elems = deep_from;
    traits.variants = {v};
    fg::DrawSettings s;
    s.hidden_sizes = {4096};  // divides the default 2^20 elements: 256 tokens
    const auto gen = rc::gen::exec([&] { return fg::draw_case(s, traits); });
    int calls = 0, deep = 0;
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
      const fg::GpuCase c = gen(rc::Random(seed), 50).value();
      EXPECT_EQ(fg::outside_traits(c, traits), "") << "seed " << seed;
      for (const fg::CallSpec& call : c.calls) {
        ++calls;
        deep += static_cast<std::uint64_t>(call.tokens) * c.hidden >= (1u << 20) ? 1 : 0;
      }
    }
    return static_cast<double>(deep) / calls;
  };
  EXPECT_GT(share_deep(1u << 20), 0.15);
  EXPECT_LT(share_deep(0), 0.05);
  // Out of the limits' reach: never claimed, whatever is drawn.
  fg::KernelTraits far;
  far.variants = {fg::KernelVariant{}};
  far.variants[0].deep_from_elems = 1u << 22;
  EXPECT_FALSE(fg::reaches_deep_path(0, 4096, 256, far));
  EXPECT_TRUE(fg::reaches_deep_path(0, 4096, 1024, far));
  EXPECT_FALSE(fg::reaches_deep_path(1, 4096, 1024, far));  // no such variant
}

// A deeper path past the default --max-elems (the ring's pieces at 4 ranks: 2^21 elements)
// raises the run's limit to it, so that its calls are drawn there; the controls: a limit given
// on the command line stays, and a path past --max-tokens x --max-hidden raises nothing.
TEST(DrawCase, ADeepPathPastTheDefaultLimitRaisesIt) {
  fg::KernelTraits traits;
  fg::KernelVariant v;
  v.name = "ring at 4 ranks";
  v.elems_multiple = 64;
  v.deep_from_elems = 1u << 21;
  traits.variants = {fg::KernelVariant{}, v};
  const fg::CaseLimits defaults;
  const auto deep_calls = [&](const fg::CaseLimits& limits) {
    fg::DrawSettings s;
    s.ranks = 4;
    s.hidden_sizes = {4096};
    s.limits = limits;
    const auto gen = rc::gen::exec([&] { return fg::draw_case(s, traits); });
    int deep = 0;
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
      const fg::GpuCase c = gen(rc::Random(seed), 50).value();
      EXPECT_EQ(limits.does_not_fit(c), "") << "seed " << seed;
      for (const fg::CallSpec& call : c.calls)
        deep += static_cast<std::uint64_t>(call.tokens) * c.hidden >= v.deep_from_elems ? 1 : 0;
    }
    return deep;
  };
  const fg::CaseLimits raised = fg::limits_reaching_deep_paths(defaults, traits);
  EXPECT_EQ(raised.max_elems, std::int64_t{1} << 21);
  EXPECT_GT(deep_calls(raised), 20);
  EXPECT_EQ(deep_calls(defaults), 0);  // what the default limit alone draws
  fg::CaseLimits chosen = defaults;
  chosen.max_elems_chosen = true;
  EXPECT_EQ(fg::limits_reaching_deep_paths(chosen, traits).max_elems, defaults.max_elems);
  fg::CaseLimits narrow = defaults;
  narrow.max_tokens = 128;  // 128 x 8192 = 2^20 elements at most
  EXPECT_EQ(fg::limits_reaching_deep_paths(narrow, traits).max_elems, defaults.max_elems);
  traits.variants[1].deep_from_elems = 1u << 19;  // within the default: left as it is
  EXPECT_EQ(fg::limits_reaching_deep_paths(defaults, traits).max_elems, defaults.max_elems);
}

// The held-rank schedule is drawn in about one case of four with delays, at every point a
// kernel that holds itself has, before the push only for any other kernel (never before a
// call behind its PDL producer); each drawn case runs and is inside the traits. Fixed seeds.
TEST(DrawCase, HeldRanksAreDrawnAtThePointsTheKernelHolds) {
  for (bool in_kernel : {true, false}) {
    fg::KernelTraits traits = in_kernel ? fg::our_traits() : fg::KernelTraits{};
    fg::DrawSettings s;
    s.ranks = 4;
    const auto gen = rc::gen::exec([&] { return fg::draw_case(s, traits); });
    std::set<fk::HoldPoint> points;
    std::set<int> ranks;
    int held = 0;
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
      const fg::GpuCase c = gen(rc::Random(seed), 50).value();
      ASSERT_EQ(fg::case_problem(c), "") << "seed " << seed;
      ASSERT_EQ(fg::outside_traits(c, traits), "") << "seed " << seed;
      if (!c.hold.active()) continue;
      ++held;
      points.insert(c.hold.point);
      ranks.insert(c.hold.rank);
    }
    EXPECT_GT(held, 30) << "in kernel " << in_kernel;
    EXPECT_LT(held, 150) << "in kernel " << in_kernel;
    EXPECT_EQ(points.size(), in_kernel ? 3u : 1u);
    EXPECT_EQ(ranks.size(), 4u);
  }
  // Negative control: without delays no rank is held.
  fg::DrawSettings quiet;
  quiet.delays = false;
  const auto gen = rc::gen::exec([&] { return fg::draw_case(quiet, fg::our_traits()); });
  for (std::uint64_t seed = 1; seed <= 100; ++seed)
    ASSERT_FALSE(gen(rc::Random(seed), 50).value().hold.active()) << "seed " << seed;
}

// The PDL producer is drawn, only on calls launched with PDL, with a delay within its bound.
// Cases come from fixed seeds so the share of producers is the same on every run: the
// generator draws one on about a third of the PDL calls, and the test fails if it draws
// none (or one on every PDL call).
TEST(DrawCase, PdlProducersAreDrawnOnPdlCallsOnly) {
  const auto gen =
      rc::gen::exec([] { return fg::draw_case(fg::DrawSettings{}, fg::KernelTraits{}); });
  int with_producer = 0, pdl_calls = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const fg::GpuCase c = gen(rc::Random(seed), 50).value();
    EXPECT_TRUE(fg::case_problem(c).empty()) << "seed " << seed;
    for (const fg::CallSpec& call : c.calls) {
      if (call.use_pdl && !call.unfused) ++pdl_calls;
      if (!call.pdl_producer) {
        EXPECT_EQ(call.producer_delay_ns, 0u) << "seed " << seed;
        continue;
      }
      ++with_producer;
      EXPECT_TRUE(call.use_pdl) << "seed " << seed;
      EXPECT_FALSE(call.unfused) << "seed " << seed;
      EXPECT_GT(call.producer_delay_ns, 0u) << "seed " << seed;
      EXPECT_LE(call.producer_delay_ns, fusioncheck::kernels::kMaxPdlProducerDelayNs)
          << "seed " << seed;
    }
  }
  ASSERT_GT(pdl_calls, 100);
  EXPECT_GT(with_producer, pdl_calls / 6) << with_producer << " of " << pdl_calls << " PDL calls";
  EXPECT_LT(with_producer, pdl_calls / 2) << with_producer << " of " << pdl_calls << " PDL calls";
}

// Quantising calls without norm_out are drawn only for a kernel that has them, never with a
// PDL consumer, and each such case is runnable and inside the traits; the fixed seeds draw
// some (the test fails if none is drawn) and a kernel without them gets none.
TEST(DrawCase, CallsWithoutNormOutOnlyForKernelsThatHaveThem) {
  fg::DrawSettings s;
  s.nvfp4_supported = true;
  fg::KernelTraits with;
  with.quant_without_norm_out = true;
  int without_norm_out = 0;
  for (const fg::KernelTraits& traits : {with, fg::KernelTraits{}}) {
    const auto gen = rc::gen::exec([&] { return fg::draw_case(s, traits); });
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
      const fg::GpuCase c = gen(rc::Random(seed), 50).value();
      EXPECT_TRUE(fg::case_problem(c).empty()) << "seed " << seed << ": " << fg::case_problem(c);
      EXPECT_EQ(fg::outside_traits(c, traits), "") << "seed " << seed;
      for (const fg::CallSpec& call : c.calls) {
        if (call.norm_out) continue;
        EXPECT_TRUE(traits.quant_without_norm_out) << "seed " << seed;
        EXPECT_TRUE(fk::pattern_quantises(call.pattern)) << "seed " << seed;
        EXPECT_FALSE(call.pdl_consumer) << "seed " << seed;
        ++without_norm_out;
      }
    }
  }
  EXPECT_GT(without_norm_out, 0);
  // Outside a kernel's traits when it has no such pattern.
  fg::GpuCase c;
  fg::CallSpec call;
  call.pattern = fk::Pattern::fp8_static;
  call.norm_out = false;
  call.pdl_consumer = false;
  c.calls.push_back(call);
  EXPECT_NE(fg::outside_traits(c, fg::KernelTraits{}).find("without norm_out"), std::string::npos);
  EXPECT_EQ(fg::outside_traits(c, with), "");
}

// The block-scaled FP8 patterns are drawn only for a kernel that runs them, with a group that
// divides hidden and scales padded to tokens or a few more; every such case is runnable and
// inside the traits. The fixed seeds draw both patterns and each group reduction path.
TEST(DrawCase, BlockScaledFp8OnlyForKernelsThatRunThem) {
  fg::DrawSettings s;
  fg::KernelTraits with;
  with.block_scaled_fp8 = true;
  with.hidden_sizes = {2880, 4096, 7168, 1040};
  std::set<int> groups;
  int mx = 0, linear = 0, padded = 0;
  for (const fg::KernelTraits& traits : {with, fg::KernelTraits{}}) {
    const auto gen = rc::gen::exec([&] { return fg::draw_case(s, traits); });
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
      const fg::GpuCase c = gen(rc::Random(seed), 50).value();
      EXPECT_TRUE(fg::case_problem(c).empty()) << "seed " << seed << ": " << fg::case_problem(c);
      EXPECT_EQ(fg::outside_traits(c, traits), "") << "seed " << seed;
      for (const fg::CallSpec& call : c.calls) {
        if (!fk::pattern_block_scaled_fp8(call.pattern)) continue;
        EXPECT_TRUE(traits.block_scaled_fp8) << "seed " << seed;
        EXPECT_EQ(c.hidden % 32, 0) << "seed " << seed;
        if (call.pattern == fk::Pattern::mxfp8) {
          ++mx;
          linear += call.scale_layout == fk::Nvfp4Layout::linear;
          continue;
        }
        EXPECT_EQ(c.hidden % call.group_size, 0) << "seed " << seed;
        groups.insert(call.group_size);
        padded += call.tma_aligned_mn != 0;
      }
    }
  }
  EXPECT_GT(mx, 0);
  EXPECT_GT(linear, 0);
  EXPECT_LT(linear, mx);
  EXPECT_GT(padded, 0);
  EXPECT_TRUE(groups.count(128) && groups.count(96) && groups.count(32)) << groups.size();
  // Outside a kernel's traits when it does not run them.
  fg::GpuCase c;
  c.hidden = 2880;
  fg::CallSpec call;
  call.pattern = fk::Pattern::mxfp8;
  c.calls.push_back(call);
  EXPECT_NE(fg::outside_traits(c, fg::KernelTraits{}).find("pattern"), std::string::npos);
  EXPECT_EQ(fg::outside_traits(c, with), "");
}
