// FlashInfer's copy of vLLM's custom allreduce: its launch variants and the kernel each picks,
// its refusals, the reference order of its calls, and the checks of its barrier protocol
// (V1-V4), each with the state that breaks it alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fusioncheck/adapters/flashinfer_vllm.hpp"
#include "fusioncheck/gpu/case_runner.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "family_mutants.hpp"

namespace {

namespace fa = fusioncheck::adapters;
namespace k = fusioncheck::kernels;
using fusioncheck::protocol::Mutant;
using fusioncheck::reference::SumOrder;

TEST(FlashInferVllmRules, TheSizeThresholdsPickTheKernelAsTheHeaderDoes) {
  const auto by_size = fa::flashinfer_vllm_variants(2).at(0);
  ASSERT_EQ(by_size.stage, 0);
  EXPECT_EQ(fa::flashinfer_vllm_two_stage_from_bytes(2), 0u);  // two ranks: always one stage
  EXPECT_EQ(fa::flashinfer_vllm_stage(2, by_size, 64u << 20), 1);
  EXPECT_EQ(fa::flashinfer_vllm_two_stage_from_bytes(4), 512u << 10);
  EXPECT_EQ(fa::flashinfer_vllm_stage(4, by_size, (512u << 10) - 16), 1);
  EXPECT_EQ(fa::flashinfer_vllm_stage(4, by_size, 512u << 10), 2);
  for (int ranks : {6, 8}) {
    EXPECT_EQ(fa::flashinfer_vllm_two_stage_from_bytes(ranks), 256u << 10);
    EXPECT_EQ(fa::flashinfer_vllm_stage(ranks, by_size, (256u << 10) - 16), 1);
    EXPECT_EQ(fa::flashinfer_vllm_stage(ranks, by_size, 256u << 10), 2);
  }
  // A kernel chosen explicitly runs at any size.
  const auto variants = fa::flashinfer_vllm_variants(8);
  ASSERT_EQ(variants.size(), 5u);
  for (const auto& v : variants)
    if (v.stage != 0) {
      EXPECT_EQ(fa::flashinfer_vllm_stage(8, v, 16), v.stage);
      EXPECT_EQ(v.info.sum_order,
                v.stage == 1 ? SumOrder::rank_order : SumOrder::part_owner_rotated);
    }
}

TEST(FlashInferVllmRules, TheGridIsAllreducesOwn) {
  EXPECT_EQ(fa::flashinfer_vllm_grid(8, 36), 1);        // one pack
  EXPECT_EQ(fa::flashinfer_vllm_grid(8 * 512, 36), 1);  // one pack per thread
  EXPECT_EQ(fa::flashinfer_vllm_grid(8 * 512 + 8, 36), 2);
  EXPECT_EQ(fa::flashinfer_vllm_grid(8 * 512 * 100, 36), 36);  // capped at the block limit
  EXPECT_EQ(fa::flashinfer_vllm_grid(8 * 512 * 100, 5), 5);
}

// The reference sums a call of the size-chosen variant as the kernel that runs it does.
TEST(FlashInferVllmRules, TheReferenceFollowsTheKernelTheSizePicks) {
  const auto traits = fa::flashinfer_vllm_traits(4);
  fusioncheck::gpu::GpuCase c;
  c.ranks = 4;
  c.hidden = 4096;
  c.dtype = k::DType::bf16;
  fusioncheck::gpu::CallSpec call;
  call.pattern = k::Pattern::allreduce;
  call.variant = 0;
  call.tokens = 63;  // 504 KiB per rank: one stage
  EXPECT_EQ(fusioncheck::gpu::reference_config(c, call, traits).sum_order, SumOrder::rank_order);
  call.tokens = 64;  // 512 KiB: two stages
  EXPECT_EQ(fusioncheck::gpu::reference_config(c, call, traits).sum_order,
            SumOrder::part_owner_rotated);
  call.variant = 1;  // one stage chosen explicitly
  EXPECT_EQ(fusioncheck::gpu::reference_config(c, call, traits).sum_order, SumOrder::rank_order);
}

// A rank is held inside the kernel (after its start barrier, before its loads) only by a copy
// with barrier hooks; else before its call, where the start barrier absorbs the pause.
TEST(FlashInferVllmRules, HoldsARankAfterItsStartBarrierOnlyWithHooks) {
  for (int hooks : {0, 2}) {
    const auto t = fa::flashinfer_vllm_traits(2, hooks);
    std::vector<k::HoldPoint> want = {k::HoldPoint::before_push};
    if (hooks > 0) want.push_back(k::HoldPoint::before_poll);
    for (k::DType d : {k::DType::bf16, k::DType::f16})
      EXPECT_EQ(t.hold_points(d), want) << hooks << " hooks";
    EXPECT_FALSE(t.holds_behind_pdl_producer(k::HoldPoint::before_poll, k::DType::bf16));
  }
}

k::FusedParams runnable() {
  k::FusedParams p;
  p.ranks = 4;
  p.tokens = 3;
  p.hidden = 2056;
  p.pattern = k::Pattern::allreduce;
  p.variant = 2;
  return p;
}

TEST(FlashInferVllmRules, RefusesWhatTheKernelCannotRunWithWhy) {
  EXPECT_EQ(fa::flashinfer_vllm_refusal(runnable(), false), "");
  auto refused = [](k::FusedParams p, bool twoshot, const std::string& part) {
    const std::string why = fa::flashinfer_vllm_refusal(p, twoshot);
    EXPECT_NE(why.find(part), std::string::npos) << why;
  };
  refused(runnable(), true, "no two-shot path");
  auto p = runnable();
  p.ranks = 3;
  refused(p, false, "2, 4, 6 or 8 ranks");
  p = runnable();
  p.pattern = k::Pattern::residual_rmsnorm;
  refused(p, false, "allreduce only");
  p = runnable();
  p.fp32_accumulation = false;
  refused(p, false, "sums in fp32");
  p = runnable();
  p.variant = 5;
  refused(p, false, "variant 5 outside [0, 5)");
  p = runnable();
  p.hidden = 2052;
  refused(p, false, "multiple of 8");
  p = runnable();
  p.trigger = k::Trigger::early;
  refused(p, false, "no PDL trigger");
}

// Two calls at 2 ranks: blocks 0-2 of the first, 0-1 of the second; every lane of a block
// counted alike and every counter holds its peer's last two counts.
fa::VllmStateAfterCalls clean_state() {
  fa::VllmStateAfterCalls s;
  s.ranks = 2;
  s.rank = 1;
  s.max_blocks = 36;
  s.self_before.assign(36 * 8, 0);
  s.self_after.assign(36 * 8, 0);
  s.peer_after.assign(2 * 36 * 8, 0);
  s.grids = {3, 2};
  for (int b = 0; b < 3; ++b) {
    const std::uint32_t count = b < 2 ? 4 : 2;
    for (int p = 0; p < 2; ++p) {
      s.self_after[b * 8 + p] = count;
      s.peer_after[(count % 2) * 36 * 8 + b * 8 + p] = count;
      s.peer_after[((count + 1) % 2) * 36 * 8 + b * 8 + p] = count - 1;
    }
  }
  s.last_stage = 2;
  s.last_packs = 9;  // rank 1 of 2: packs 4..8, five of them
  s.output.assign(9 * 16, 0);
  for (std::size_t i = 0; i < s.output.size(); ++i) s.output[i] = static_cast<std::uint8_t>(i);
  s.tmp.assign(s.output.begin() + 4 * 16, s.output.end());
  s.registered.assign(64, 7);
  s.input = s.registered;
  return s;
}

std::string only_violation(const fa::VllmStateAfterCalls& s) {
  const auto v = fa::vllm_state_violations(s);
  return v.size() == 1 ? v[0] : std::to_string(v.size()) + " violations";
}

TEST(FlashInferVllmChecks, ACleanStatePasses) {
  EXPECT_TRUE(fa::vllm_state_violations(clean_state()).empty());
}

TEST(FlashInferVllmChecks, EachInvariantBrokenAloneIsNamed) {
  auto expect = [](const fa::VllmStateAfterCalls& s, const std::string& starts) {
    const std::string v = only_violation(s);
    EXPECT_EQ(v.rfind(starts, 0), 0u) << v;
  };
  auto s = clean_state();
  s.self_after[1 * 8 + 1] = 3;               // a lane that missed a barrier
  s.peer_after[1 * 36 * 8 + 1 * 8 + 0] = 3;  // (its counters agree with lane 0)
  expect(s, "vLLM invariant V1: block 1: the barrier lane of peer 1 counted 3 barriers");
  s = clean_state();
  s.self_after[5 * 8] = s.self_after[5 * 8 + 1] = 2;  // outside every grid
  s.peer_after[5 * 8] = s.peer_after[5 * 8 + 1] = 2;
  s.peer_after[36 * 8 + 5 * 8] = s.peer_after[36 * 8 + 5 * 8 + 1] = 1;
  expect(s, "vLLM invariant V1: block 5 is outside every call's grid");
  s = clean_state();
  // One set of counters: the count before is lost (what vllm-one-counter-set leaves).
  s.peer_after[1 * 36 * 8 + 0 * 8 + 1] = 0;
  expect(s, "vLLM invariant V2: block 0 counted 4 barriers, but the counters peer 1 stores hold 4");
  s = clean_state();
  s.tmp[20] ^= 1;
  expect(s, "vLLM invariant V3: 1 of the 5 packs of my part");
  s = clean_state();
  s.registered[40] = 0;
  expect(
      s,
      "vLLM invariant V4: the registered buffer the last call read differs from my input in 1 of 4");
  s = clean_state();
  s.guards_intact = false;
  expect(s, "vLLM invariant V4: a guard word");
}

TEST(FlashInferVllmChecks, OnlyWhatTheLastCallLeftIsCompared) {
  auto s = clean_state();
  s.last_stage = 1;  // a one-stage call leaves the temporary buffer alone
  s.tmp[0] ^= 1;
  EXPECT_TRUE(fa::vllm_state_violations(s).empty());
  s = clean_state();
  s.registered.clear();  // no input evidence: V4's comparison is skipped, the guards are not
  s.input.clear();
  EXPECT_TRUE(fa::vllm_state_violations(s).empty());
}

TEST(FlashInferVllmCopies, EveryPatchIsANegativeControlTheFamilyRegisters) {
  ASSERT_EQ(fa::flashinfer_vllm_unavailable_reason(), "");
  std::vector<std::string> why_not_built;
  const auto have = fusioncheck::adapters::testing::copy_ids(
      fa::flashinfer_vllm_patches(), fa::flashinfer_vllm_patches_not_built(), &why_not_built);
  for (const std::string& why : why_not_built)
    EXPECT_NE(why.find("FUSIONCHECK_FLASHINFER_COPIES=OFF"), std::string::npos) << why;
  std::vector<std::string> expected = {"vllm-one-counter-set", "vllm-no-end-barrier",
                                       "vllm-no-fence", "vllm-graph-base-unset",
                                       "vllm-mid-barrier-unfenced"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(have, expected);
  EXPECT_EQ(fusioncheck::adapters::testing::registered_ids("flashinfer-vllm"), expected);
  // The dropped release/acquire alone may survive, and only where ranks share a GPU.
  fusioncheck::gpu::GpuPlacement shared, apart;
  shared.ranks_share_gpu = true;
  for (const auto& id : expected) {
    const fusioncheck::gpu::MutantId m(id);
    EXPECT_EQ(fa::flashinfer_vllm_mutant_may_survive(m, shared).empty(), id != "vllm-no-fence")
        << id;
    EXPECT_EQ(fa::flashinfer_vllm_mutant_may_survive(m, apart), "") << id;
  }
  // The missing end barrier shows only with a rank held while its peer runs ahead.
  for (const auto& id : expected)
    EXPECT_EQ(fa::flashinfer_vllm_mutant_needs_held_rank(fusioncheck::gpu::MutantId(id)),
              id == "vllm-no-end-barrier")
        << id;
  const auto choice = fa::flashinfer_vllm_choice();
  EXPECT_EQ(choice.mutant_ranks, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_EQ(choice.rank_counts, (std::vector<int>{2, 4, 6, 8}));
  // Its blocks spin at barriers and take an SM each: ranks sharing a GPU get a share each.
  EXPECT_TRUE(choice.share_sms);
}

}  // namespace
