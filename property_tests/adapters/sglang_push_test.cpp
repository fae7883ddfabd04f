// SGLang's push allreduce: its launch variants, refusals, the grid and slot sizes of the wheel's
// host entry, the checks of its push plane (S1, S2, input, guards), each with the state that
// breaks it alone, and its place in the registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fusioncheck/adapters/sglang_push.hpp"
#include "fusioncheck/gpu/kernel_registry.hpp"

namespace {

namespace fa = fusioncheck::adapters;
namespace k = fusioncheck::kernels;
using fusioncheck::reference::SumOrder;

TEST(SglangPushRules, BothKernelsSumInRankOrderWithZeroSignsTheirOwn) {
  const auto variants = fa::sglang_push_variants();
  ASSERT_EQ(variants.size(), 2u);
  // Its remap rewrites whole 32-bit words, not elements: only zero signs depend on it.
  for (const auto& v : variants) {
    EXPECT_EQ(v.sum_order, SumOrder::rank_order) << v.name;
    EXPECT_FALSE(v.sanitises_pos_zero) << v.name;
    EXPECT_TRUE(v.zero_sign_free) << v.name;
  }
  EXPECT_NE(variants[0].name.find("1shot"), std::string::npos);
  EXPECT_NE(variants[1].name.find("2shot"), std::string::npos);
  const auto t = fa::sglang_push_traits();
  EXPECT_EQ(t.patterns, (std::vector<k::Pattern>{k::Pattern::allreduce}));
  EXPECT_FALSE(t.twoshot);
  EXPECT_FALSE(t.outputs_visible_at_trigger);
  EXPECT_TRUE(t.graph_replay);
  EXPECT_EQ(t.variants.size(), 2u);
}

k::FusedParams runnable() {
  k::FusedParams p;
  p.ranks = 6;
  p.tokens = 3;
  p.hidden = 2880;
  p.pattern = k::Pattern::allreduce;
  p.variant = 1;
  return p;
}

TEST(SglangPushRules, RefusesWhatTheKernelsCannotRunWithWhy) {
  EXPECT_EQ(fa::sglang_push_refusal(runnable(), false), "");
  auto refused = [](k::FusedParams p, bool twoshot, const std::string& part) {
    const std::string why = fa::sglang_push_refusal(p, twoshot);
    EXPECT_NE(why.find(part), std::string::npos) << why;
  };
  refused(runnable(), true, "no two-shot path of ours");
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
  p.variant = 2;
  refused(p, false, "variant 2 outside [0, 2)");
  p = runnable();
  p.hidden = 2884;
  p.tokens = 1;
  refused(p, false, "multiple of 8");
  p = runnable();
  p.trigger = k::Trigger::early;
  refused(p, false, "at its end only");
  p = runnable();
  p.fp32_lamport = true;
  refused(p, false, "no fp32 Lamport");
}

TEST(SglangPushRules, TheGridAndSlotsAreTheWheelsOwn) {
  // choose_block_size: the smallest of 128, 256, 512 whose blocks fit the SMs, else 1024.
  EXPECT_EQ(fa::sglang_push_block_size(132 * 128, 132, false, 2, 132), 128);
  EXPECT_EQ(fa::sglang_push_block_size(132 * 128 + 1, 132, false, 2, 132), 256);
  EXPECT_EQ(fa::sglang_push_block_size(132 * 512, 132, false, 2, 132), 512);
  EXPECT_EQ(fa::sglang_push_block_size(132 * 512 + 1, 132, false, 2, 132), 1024);
  // The two-shot kernel: at least one warp per peer over the whole grid.
  EXPECT_EQ(fa::sglang_push_block_size(16, 1, true, 8, 1), 224);
  EXPECT_EQ(fa::sglang_push_block_size(16, 132, true, 8, 132), 128);
  // A one-shot call pushes its whole input into each slot; a two-shot call two chunks.
  EXPECT_EQ(fa::sglang_push_slot_use(100, false, 4), 1600u);
  EXPECT_EQ(fa::sglang_push_slot_use(100, true, 4), 2u * 25 * 16);
  EXPECT_EQ(fa::sglang_push_slot_use(101, true, 4), 2u * 26 * 16);
}

// Three calls at 2 ranks: every counter flipped three times (phase 1), every slot word +0.
fa::SglangStateAfterCalls clean_state() {
  fa::SglangStateAfterCalls s;
  s.calls = 3;
  s.ranks = 2;
  s.counters = std::vector<std::uint32_t>(8, 1);
  s.used = 64;
  s.slots = std::vector<std::uint8_t>(2 * 2 * 64, 0);
  return s;
}

TEST(SglangPushChecks, ACleanStatePasses) {
  EXPECT_TRUE(fa::sglang_state_violations(clean_state()).empty());
  auto even = clean_state();
  even.calls = 4;
  even.counters.assign(8, 0);
  EXPECT_TRUE(fa::sglang_state_violations(even).empty());
}

TEST(SglangPushChecks, EachInvariantBrokenAloneIsNamed) {
  auto expect_one = [](const fa::SglangStateAfterCalls& s, const std::string& part) {
    const auto v = fa::sglang_state_violations(s);
    ASSERT_EQ(v.size(), 1u) << part;
    EXPECT_NE(v.front().find(part), std::string::npos) << v.front();
  };
  auto s = clean_state();
  s.counters[5] = 0;  // a block that did not flip its phase
  expect_one(s, "S1: block 5's phase counter holds 0 after 3 calls");
  s = clean_state();
  s.slots[(1 * 2 + 1) * 64 + 23] = 0x80;  // phase 1, rank 1's slot: a -0 word not re-armed
  expect_one(s, "S2: phase 1, the slot of rank 1, byte 20 holds 0x80000000");
  s = clean_state();
  s.input_untouched = false;
  expect_one(s, "wrote into its input");
  s = clean_state();
  s.guards_intact = false;
  expect_one(s, "guard word");
}

TEST(SglangPushChecks, AHangSaysWhichPeerIsAwaited) {
  k::HangRecord r{};
  r.rank = 1;
  r.call_index = 7;
  r.flag = 1;
  r.awaited_slot = 0;
  r.token = 40;
  r.counter = 3;
  const std::string awaited = fa::sglang_push_hang_text(r, 2);
  EXPECT_NE(awaited.find("rank 1 call 7"), std::string::npos) << awaited;
  EXPECT_NE(awaited.find("phase 1 of its push plane still held +0 (not yet pushed) in the slot of "
                         "peer 0 at vector 40"),
            std::string::npos)
      << awaited;
  r.awaited_slot = 2;  // none found
  const std::string none = fa::sglang_push_hang_text(r, 2);
  EXPECT_NE(none.find("held no vector that one slot awaits"), std::string::npos) << none;
  // The other phase and the blocks that disagree with block 0 are named too.
  r.detail = 5;
  r.block = 3;
  const std::string other = fa::sglang_push_hang_text(r, 2);
  EXPECT_NE(other.find("phase 0: 5 vectors held in one slot while another awaits them; 3 blocks "
                       "at phase 0"),
            std::string::npos)
      << other;
}

// Slots of `ranks` sources, `vectors` 16-byte vectors each, every word -0 (pushed).
std::vector<std::uint8_t> pushed_slots(int ranks, int vectors) {
  std::vector<std::uint8_t> slots(static_cast<std::size_t>(ranks * vectors * fa::kSglangVecBytes));
  for (std::size_t at = 0; at < slots.size(); at += 4) slots[at + 1] = slots[at + 3] = 0x80;
  return slots;
}

void await_vector(std::vector<std::uint8_t>& slots, int vectors, int src, int v) {
  const std::size_t at = static_cast<std::size_t>((src * vectors + v) * fa::kSglangVecBytes);
  std::fill(slots.begin() + at, slots.begin() + at + fa::kSglangVecBytes, 0);
}

TEST(SglangPushChecks, TheSlotScanNamesTheFirstAwaitedPeerAndSkipsAnUnusedSlot) {
  constexpr int kRanks = 4, kVectors = 6;
  const std::uint64_t used = kVectors * fa::kSglangVecBytes;
  auto slots = pushed_slots(kRanks, kVectors);
  EXPECT_EQ(fa::scan_push_slots(slots.data(), kRanks, used, -1).vectors, 0u);
  await_vector(slots, kVectors, 2, 3);
  await_vector(slots, kVectors, 1, 4);
  fa::PushSlotScan scan = fa::scan_push_slots(slots.data(), kRanks, used, -1);
  EXPECT_EQ(scan.first_awaited, 2);
  EXPECT_EQ(scan.first_vector, 3u);
  EXPECT_EQ(scan.vectors, 2u);
  // A vector no slot holds was consumed (or never pushed by anyone): not awaited.
  for (int src = 0; src < kRanks; ++src) await_vector(slots, kVectors, src, 5);
  EXPECT_EQ(fa::scan_push_slots(slots.data(), kRanks, used, -1).vectors, 2u);
  // A two-shot call's own slot stays +0 throughout: skipped, it is no awaited peer.
  auto two_shot = pushed_slots(kRanks, kVectors);
  for (int v = 0; v < kVectors; ++v) await_vector(two_shot, kVectors, 1, v);
  EXPECT_EQ(fa::scan_push_slots(two_shot.data(), kRanks, used, 1).vectors, 0u);
  scan = fa::scan_push_slots(two_shot.data(), kRanks, used, -1);
  EXPECT_EQ(scan.first_awaited, 1);
  EXPECT_EQ(scan.vectors, static_cast<std::uint64_t>(kVectors));
  await_vector(two_shot, kVectors, 3, 2);
  scan = fa::scan_push_slots(two_shot.data(), kRanks, used, 1);
  EXPECT_EQ(scan.first_awaited, 3);
  EXPECT_EQ(scan.first_vector, 2u);
  EXPECT_EQ(scan.vectors, 1u);
}

TEST(SglangPushFamily, IsRegisteredWithItsProtocolAndRankCounts) {
  fusioncheck::gpu::KernelRegistry registry;
  fa::add_sglang_kernels(registry);
  const auto* family = registry.find("sglang-push");
  ASSERT_NE(family, nullptr);
  EXPECT_EQ(family->protocol, "sglang-push");
  const auto choice = fa::sglang_push_choice();
  EXPECT_EQ(choice.rank_counts, (std::vector<int>{2, 4, 6, 8}));
  EXPECT_TRUE(choice.share_sms);  // its grid is the SM count and every block spins
  const std::string why = fa::sglang_push_unavailable_reason();
  if (why.empty()) {
    EXPECT_NE(fa::sglang_source().find("sglang"), std::string::npos);
    EXPECT_NO_THROW((void)registry.choose("sglang-push"));
  } else {  // a build without the wheel's sources says how to get them
    EXPECT_NE(why.find("ci/fetch_sglang.sh"), std::string::npos) << why;
    EXPECT_THROW((void)registry.choose("sglang-push"), fusioncheck::gpu::BadInput);
  }
}

TEST(SglangPushFamily, EveryPatchIsANegativeControlTheFamilyRegisters) {
  fusioncheck::gpu::KernelRegistry registry;
  fa::add_sglang_kernels(registry);
  std::vector<std::string> listed;
  for (const auto& m : registry.find("sglang-push")->mutants) {
    listed.push_back(m.id);
    EXPECT_FALSE(m.what.empty()) << m.id;  // catalogue ids: the registry fills in the words
  }
  std::sort(listed.begin(), listed.end());
  const std::vector<std::string> expected = {"sglang-no-rearm", "sglang-no-remap",
                                             "sglang-one-phase"};
  EXPECT_EQ(listed, expected);
  if (!fa::sglang_push_unavailable_reason().empty()) return;
  std::vector<std::string> built;
  for (const auto& m : fa::sglang_push_patches()) built.emplace_back(m.id());
  std::sort(built.begin(), built.end());
  EXPECT_EQ(built, expected);  // the pinned release takes every patch
  EXPECT_NO_THROW((void)registry.mutant_of("sglang-push", "sglang-one-phase"));
  EXPECT_THROW((void)registry.mutant_of("sglang-push", "two-buffers"), fusioncheck::gpu::BadInput);
}

}  // namespace
