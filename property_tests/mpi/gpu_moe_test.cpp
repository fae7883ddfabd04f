// The GPU suite's MoE calls (FlashInfer's MoE allreduce fusion), on the CPU: drawn only for a
// MoE kernel and with the options of the kernel the call's variant names, travelling in replay
// files for MoE calls only, refused where no MoE kernel runs them; the expert rows the harness
// allocates hold every call within the limits; --hidden draws from the user's shapes.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <set>
#include <string>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/gpu/moe_inputs.hpp"
#include "fusioncheck/reference/moe.hpp"

namespace {

namespace fg = fusioncheck::gpu;
namespace fk = fusioncheck::kernels;
namespace ref = fusioncheck::reference;

// What the MoE adapter declares (adapters/flashinfer/moe/moe_kernels.cpp), as far as drawing goes.
fg::KernelTraits moe_traits() {
  fg::KernelTraits t;
  t.moe = true;
  t.fp32_lamport = false;
  t.unfused = false;
  t.forced_cluster = false;
  t.twoshot = false;
  t.fp32_accumulation = false;
  t.early_trigger = false;
  t.outputs_visible_at_trigger = false;
  t.patterns = {fk::Pattern::residual_rmsnorm, fk::Pattern::nvfp4};
  fg::KernelVariant reduction;
  reduction.neg_zero_sentinel = true;
  fg::KernelVariant finalize = reduction;
  finalize.moe_finalize = true;
  t.variants = {reduction, finalize};
  return t;
}

TEST(DrawCase, MoeCallsOnlyForMoeKernelsWithTheirKernelsOptions) {
  fg::DrawSettings s;
  std::set<int> experts;
  int finalize = 0, reduction = 0, shared = 0, unscaled = 0, routed = 0, summed = 0;
  for (const fg::KernelTraits& traits : {moe_traits(), fg::KernelTraits{}}) {
    const auto gen = rc::gen::exec([&] { return fg::draw_case(s, traits); });
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
      const fg::GpuCase c = gen(rc::Random(seed), 50).value();
      ASSERT_EQ(fg::case_problem(c), "") << "seed " << seed;
      ASSERT_EQ(fg::outside_traits(c, traits), "") << "seed " << seed;
      for (const fg::CallSpec& call : c.calls) {
        if (!traits.moe) {
          EXPECT_EQ(call.moe_experts, 0) << "seed " << seed;
          continue;
        }
        experts.insert(call.moe_experts);
        const bool fin = call.variant == 1;
        (fin ? finalize : reduction)++;
        EXPECT_TRUE(fin || (call.moe_expert_scales && !call.moe_shared_expert &&
                            call.moe_routed_scaling == 1.0f))
            << "seed " << seed << ": finalize options on a reduction call";
        EXPECT_TRUE(!fin || !call.moe_allreduce_out) << "seed " << seed;
        if (call.exact_values)  // 1 or 2 keep an exact call exact (reference/moe.hpp)
          EXPECT_TRUE(call.moe_routed_scaling == 1.0f || call.moe_routed_scaling == 2.0f);
        shared += call.moe_shared_expert;
        unscaled += !call.moe_expert_scales;
        routed += call.moe_routed_scaling != 1.0f;
        summed += call.moe_allreduce_out;
      }
    }
  }
  EXPECT_GT(finalize, 50);
  EXPECT_GT(reduction, 50);
  EXPECT_GT(shared, 0);
  EXPECT_GT(unscaled, 0);
  EXPECT_GT(routed, 0);
  EXPECT_GT(summed, 0);
  EXPECT_TRUE(experts.count(8) && experts.count(1) && experts.count(4)) << experts.size();
  EXPECT_LE(*experts.rbegin(), ref::kMaxMoeExperts);
}

fg::GpuCase moe_case() {
  fg::GpuCase c;
  c.hidden = 7168;  // DeepSeek-V3
  c.fp32_accumulation = false;
  fg::CallSpec fin;
  fin.tokens = 9;
  fin.variant = 1;
  fin.moe_experts = 8;
  fin.moe_expert_scales = false;
  fin.moe_shared_expert = true;
  fin.moe_routed_scaling = 2.5f;
  fg::CallSpec red;
  red.tokens = 3;
  red.moe_experts = 2;
  red.moe_allreduce_out = true;
  c.calls = {fin, red};
  return c;
}

TEST(GpuCase, MoeFieldsTravelForMoeCallsOnly) {
  const fg::GpuCase c = moe_case();
  const auto j = fg::to_json(c);
  EXPECT_EQ(j["calls"][0]["moe_experts"], 8);
  EXPECT_EQ(j["calls"][0]["moe_routed_scaling"], 2.5);
  EXPECT_EQ(j["calls"][1]["moe_allreduce_out"], true);
  EXPECT_FALSE(
      fg::to_json(fg::GpuCase{.calls = {fg::CallSpec{}}})["calls"][0].contains("moe_experts"));
  const fg::GpuCase back = fg::case_from_json(j);
  EXPECT_EQ(fg::to_json(back), j);
  EXPECT_NE(fg::describe(back.calls[0]).find("moe(experts=8 unscaled +shared routed=2.5)"),
            std::string::npos)
      << fg::describe(back.calls[0]);
  EXPECT_NE(fg::describe(back.calls[1]).find("moe(experts=2 +allreduce_out)"), std::string::npos);
  EXPECT_EQ(fg::outside_traits(back, moe_traits()), "");
  EXPECT_NE(fg::outside_traits(back, fg::KernelTraits{}).find("a MoE call"), std::string::npos);
  fg::GpuCase plain;
  plain.fp32_accumulation = false;
  plain.calls = {fg::CallSpec{}};
  EXPECT_NE(fg::outside_traits(plain, moe_traits()).find("not a MoE call"), std::string::npos);
}

// A case edited so that it cannot run: each edit must be refused as BadInput naming `expect`.
// A MoE case edited so that it cannot run (refused when read, or named by case_problem).
struct MoeEdit {
  const char* expect;
  void (*apply)(nlohmann::json&);
};

TEST(GpuCase, MoeFieldsOutOfRangeOrWithoutExpertsAreRefused) {
  const MoeEdit edits[] = {
      {"moe_experts=17 is outside [0, 16]",
       [](nlohmann::json& j) { j["calls"][0]["moe_experts"] = 17; }},
      {"moe_experts=-1 is outside", [](nlohmann::json& j) { j["calls"][0]["moe_experts"] = -1; }},
      {"moe_routed_scaling=0 is not positive",
       [](nlohmann::json& j) { j["calls"][0]["moe_routed_scaling"] = 0.0; }},
      {"calls[0].moe_shared_expert = 1: not true or false",
       [](nlohmann::json& j) { j["calls"][0]["moe_shared_expert"] = 1; }},
      {"calls[0].moe_allreduce_out is missing",
       [](nlohmann::json& j) { j["calls"][0].erase("moe_allreduce_out"); }},
      {"calls[0].moe_expert_scales: a field of MoE calls",
       [](nlohmann::json& j) {
         for (const char* k :
              {"moe_experts", "moe_shared_expert", "moe_routed_scaling", "moe_allreduce_out"})
           j["calls"][0].erase(k);
       }},
      {"MoE options without moe_experts",
       [](nlohmann::json& j) { j["calls"][1]["moe_experts"] = 0; }},
      {"a MoE call is one-shot and fused",
       [](nlohmann::json& j) { j["calls"][0]["twoshot"] = true; }},
      {"a MoE call has pattern residual_rmsnorm or nvfp4, not fp8_static",
       [](nlohmann::json& j) { j["calls"][1]["pattern"] = "fp8_static"; }},
  };
  const fg::GpuCase base = moe_case();
  EXPECT_NO_THROW(fg::case_from_json(fg::to_json(base)));
  for (const MoeEdit& e : edits) {
    auto j = fg::to_json(base);
    e.apply(j);
    try {
      const fg::GpuCase c = fg::case_from_json(j);
      const std::string problem = fg::case_problem(c);
      EXPECT_NE(problem.find(e.expect), std::string::npos)
          << "accepted a case that should fail with: " << e.expect << " (" << problem << ")";
    } catch (const fg::BadInput& err) {
      EXPECT_NE(std::string(err.what()).find(e.expect), std::string::npos) << err.what();
    }
  }
}

TEST(MoeConfig, TheVariantNamesTheKernelAndTheCallItsOptions) {
  const fg::GpuCase c = moe_case();
  const ref::MoeConfig fin = fg::moe_config(c.calls[0], moe_traits());
  EXPECT_EQ(fin.kind, ref::MoeKind::finalize);
  EXPECT_EQ(fin.experts, 8);
  EXPECT_FALSE(fin.expert_scales);
  EXPECT_TRUE(fin.shared_expert);
  EXPECT_EQ(fin.routed_scaling, 2.5f);
  EXPECT_EQ(fg::moe_config(c.calls[1], moe_traits()).kind, ref::MoeKind::reduction);
}

// The expert rows a call holds fit the buffer the harness sizes for the limits, in the largest
// calls of either kernel at several hidden sizes.
TEST(CaseLimits, MoeRowsCapacityHoldsEveryCallsExpertRows) {
  fg::CaseLimits limits;
  limits.max_tokens = 300;
  limits.max_hidden = 7168;
  limits.max_elems = 300 * 2880;
  for (int hidden : {16, 2880, 7168})
    for (ref::MoeKind kind : {ref::MoeKind::reduction, ref::MoeKind::finalize}) {
      const int tokens = limits.max_tokens_for(hidden);
      const ref::MoeConfig moe{kind, ref::kMaxMoeExperts, true, true, 1.0f};
      const ref::MoeInputs in =
          ref::make_moe_inputs(moe, fk::DType::bf16, tokens, hidden, ref::ExactSpec{5, 0, 2, true},
                               ref::SpecialsSpec{}, true, 1);
      EXPECT_LE(in.expert_rows.size(), limits.moe_rows_capacity())
          << "hidden " << hidden << " tokens " << tokens;
    }
}

TEST(DrawCase, HiddenSizesComeFromTheUsersListWithinTheLimits) {
  fg::DrawSettings s;
  s.limits.max_hidden = 4096;
  s.hidden_sizes = {2880, 4096, 7168};  // 7168 is above --max-hidden: never drawn
  std::set<int> drawn;
  const auto gen = rc::gen::exec([&] { return fg::draw_case(s, fg::KernelTraits{}); });
  for (std::uint64_t seed = 1; seed <= 100; ++seed)
    drawn.insert(gen(rc::Random(seed), 50).value().hidden);
  EXPECT_EQ(drawn, (std::set<int>{2880, 4096}));
}

}  // namespace
