// The copy-engine ring of FlashInfer's PCIe allreduce: its pieces rule, its variants and
// refusals, and its invariants C1-C2 over a rank's copy-engine area, each broken alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fusioncheck/adapters/flashinfer.hpp"

namespace {

namespace fa = fusioncheck::adapters;
namespace fk = fusioncheck::kernels;

// ce_pick_pieces: as many pieces as asked while each is whole packs and at least 512 KiB.
TEST(FlashInferPcieCe, PiecesFollowTheHeadersRule) {
  EXPECT_EQ(fa::flashinfer_pcie_ce_pieces(4, 4 * 8, 2), 1);          // a small call
  EXPECT_EQ(fa::flashinfer_pcie_ce_pieces(4, 4 * (1 << 19), 2), 2);  // 1 MiB shards
  EXPECT_EQ(fa::flashinfer_pcie_ce_pieces(4, 4 * (1 << 19), 4), 2);  // 256 KiB pieces: no
  EXPECT_EQ(fa::flashinfer_pcie_ce_pieces(4, 4 * (1 << 20), 4), 4);
  EXPECT_EQ(fa::flashinfer_pcie_ce_pieces(4, 4 * (1 << 20), 1), 1);  // asked for one
  EXPECT_EQ(fa::flashinfer_pcie_ce_pieces(2, 2 * 1048600, 4), 1);    // no whole packs in 2-4 pieces
  EXPECT_EQ(fa::flashinfer_pcie_ce_pieces(4, 4 * (1 << 20), 9), 2);  // out of range: 2
}

int ring_variant(int ranks, int kernel_variant, int hint) {
  const auto variants = fa::flashinfer_pcie_variants(ranks);
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (variants[i].copy_engine && variants[i].kernel_variant == kernel_variant &&
        variants[i].pieces_hint == hint)
      return static_cast<int>(i);
  return -1;
}

// A ring variant that may cut its chunks says from which call size it does (the generator draws
// calls that large): the smallest whole-pack call of that size takes two pieces, one pack-step
// smaller takes one. The memory-operations variant asks for one piece: no deeper path.
TEST(FlashInferPcieCe, TheDeepPathStartsWhereThePiecesDo) {
  for (int ranks : {2, 4, 8})
    for (const auto& v : fa::flashinfer_pcie_variants(ranks)) {
      if (!v.copy_engine) {
        EXPECT_EQ(v.info.deep_from_elems, 0u) << v.info.name;
        continue;
      }
      const auto deep = static_cast<std::int64_t>(v.info.deep_from_elems);
      if (v.pieces_hint == 1) {
        EXPECT_EQ(deep, 0) << v.info.name;
        continue;
      }
      const auto step = static_cast<std::int64_t>(v.info.elems_multiple);
      EXPECT_GE(fa::flashinfer_pcie_ce_pieces(ranks, deep, v.pieces_hint), 2) << v.info.name;
      EXPECT_EQ(fa::flashinfer_pcie_ce_pieces(ranks, deep - step, v.pieces_hint), 1) << v.info.name;
    }
}

TEST(FlashInferPcieCe, VariantsSumInShardsAndRefuseUnevenShards) {
  for (int ranks : {2, 4, 8}) {
    ASSERT_GE(ring_variant(ranks, 4, 2), 0);
    ASSERT_GE(ring_variant(ranks, 6, 1), 0);
    const auto v = fa::flashinfer_pcie_variants(ranks).at(ring_variant(ranks, 4, 4));
    EXPECT_EQ(v.info.sum_order, fusioncheck::reference::SumOrder::ring_shards);
    EXPECT_FALSE(v.info.sanitises_pos_zero);
    EXPECT_EQ(fa::flashinfer_pcie_region(ranks, v.kernel_variant), -1);
  }
  EXPECT_TRUE(fa::flashinfer_pcie_variants(4, false).size() + 3 ==
              fa::flashinfer_pcie_variants(4).size());
  fk::FusedParams p;
  p.ranks = 4;
  p.tokens = 1;
  p.hidden = 64;
  p.pattern = fk::Pattern::allreduce;
  p.fp32_accumulation = false;
  p.variant = ring_variant(4, 4, 2);
  EXPECT_EQ(fa::flashinfer_pcie_refusal(p, false), "");  // 4 shards of 16 elements
  p.hidden = 48;                                         // 4 shards of 12 elements: not whole packs
  EXPECT_NE(fa::flashinfer_pcie_refusal(p, false).find("4 shards of whole 16-byte packs"),
            std::string::npos);
}

// 4 ranks: a flag-kernel call of one piece and a memop call after it: every ring slot of one
// piece (6) waited on once, the handshake slot twice; flags and send counts alike.
fa::PcieStateAfterCalls ring_state() {
  fa::PcieStateAfterCalls s;
  s.layout.ranks = 4;
  s.layout.phases = 8;
  s.layout.block_state_word = s.layout.flag_word(fa::kPcieMaxBlocks - 1) + 1;
  s.layout.pack_state_word = s.layout.block_state_word + 2;
  const std::size_t words = static_cast<std::size_t>(s.layout.pack_state_word) + 2;
  s.before.assign(words, 0);
  s.after.assign(words, 0);
  s.variants = {ring_variant(4, 4, 2), ring_variant(4, 6, 1)};
  s.numels = {4 * 1024, 4 * 1024};
  const int slots = 2 * 3 * 4 + 2;
  s.ce_handshake_slot = 2 * 3 * 4;
  s.ce_wait_before.assign(slots, 0);
  s.ce_wait_before[s.ce_handshake_slot] = 5;  // five earlier calls
  s.ce_wait = s.ce_wait_before;
  for (int slot = 0; slot < 6; ++slot) s.ce_wait[slot] = 1;
  s.ce_wait[s.ce_handshake_slot] = 7;
  s.ce_flags = s.ce_send = s.ce_wait;
  s.ce_binary.assign(6, 0);
  return s;
}

std::string only_violation(const fa::PcieStateAfterCalls& s) {
  const auto v = fa::pcie_state_violations(s);
  return v.size() == 1 ? v[0] : std::to_string(v.size()) + " violations";
}

TEST(FlashInferPcieCe, ACleanRingStatePasses) {
  EXPECT_TRUE(fa::pcie_state_violations(ring_state()).empty());
}

TEST(FlashInferPcieCe, EachInvariantBrokenAloneIsNamed) {
  auto expect = [](const fa::PcieStateAfterCalls& s, const std::string& starts) {
    const std::string v = only_violation(s);
    EXPECT_EQ(v.rfind(starts, 0), 0u) << v;
  };
  auto s = ring_state();
  s.ce_wait[3] = s.ce_flags[3] = s.ce_send[3] = 2;  // a slot waited on twice
  expect(s, "copy-engine invariant C1: slot 3: this rank waited 2 times there, expected 1");
  s = ring_state();
  s.ce_flags[s.ce_handshake_slot] = 8;  // published once more than consumed
  expect(s, "copy-engine invariant C1: handshake slot 24: its flag holds 8");
  s = ring_state();
  s.ce_send[0] = 0;
  expect(s, "copy-engine invariant C1: slot 0: its flag holds 1 and this rank published 0 times");
  s = ring_state();
  s.ce_binary[2] = 1;
  expect(s, "copy-engine invariant C2: binary flag 2 holds 1");
}

// Without binary flags the memop variant falls back to flag kernels: its ring slots are then
// expected too.
TEST(FlashInferPcieCe, TheExpectationFollowsTheCalls) {
  auto s = ring_state();
  s.ce_binary.clear();
  const auto v = fa::pcie_state_violations(s);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(
      v[0].rfind("copy-engine invariant C1: slot 0: this rank waited 1 times there, expected 2", 0),
      0u)
      << v[0];
  s = ring_state();
  s.numels.pop_back();
  EXPECT_THROW((void)fa::pcie_state_violations(s), std::invalid_argument);
}

// How many of the waits queued on the slots stay held with `flags` written (5 per slot): a wait
// kernel adds one to its slot's count, then spins until the flag has reached it.
int queued_waits_held(const std::vector<std::uint8_t>& flags,
                      const std::vector<std::int32_t>& waits, int stride) {
  int held = 0;
  for (std::size_t slot = 0; slot < waits.size(); ++slot) {
    std::int32_t flag = 0;
    std::memcpy(&flag, &flags[slot * static_cast<std::size_t>(stride)], 4);
    for (std::uint32_t queued : {1u, 2u, 40u, 100000u, 1u << 29}) {
      const auto count =
          static_cast<std::int32_t>(static_cast<std::uint32_t>(waits[slot]) + queued);
      if (!fa::flashinfer_pcie_ce_flag_reached(flag, count)) ++held;
    }
  }
  return held;
}

const std::vector<std::int32_t> kWaits = {0, 7, 2147483600, -5};  // near the int32 wrap too
constexpr int kStride = 128;

// One release lets the stuck wait and every wait queued behind it on the slot pass; only the
// flag word of each slot is written.
TEST(FlashInferPcieCe, OneReleasePassesEveryQueuedWait) {
  const auto flags = fa::flashinfer_pcie_ce_release_flags(kWaits, kStride);
  ASSERT_EQ(flags.size(), kWaits.size() * kStride);
  EXPECT_EQ(queued_waits_held(flags, kWaits, kStride), 0);
  for (std::size_t slot = 0; slot < kWaits.size(); ++slot)
    for (std::size_t b = 4; b < kStride; ++b)
      EXPECT_EQ(flags[slot * kStride + b], 0) << "slot " << slot;
  EXPECT_THROW((void)fa::flashinfer_pcie_ce_release_flags(kWaits, 2), std::invalid_argument);
}

// Negative control: flags written at each slot's count free the stuck wait alone; the check
// above must see the next one held.
TEST(FlashInferPcieCe, ReleasingToTheCountHoldsTheNextWait) {
  std::vector<std::uint8_t> flags(kWaits.size() * kStride);
  for (std::size_t slot = 0; slot < kWaits.size(); ++slot)
    std::memcpy(&flags[slot * kStride], &kWaits[slot], 4);
  for (std::size_t slot = 0; slot < kWaits.size(); ++slot)
    EXPECT_TRUE(fa::flashinfer_pcie_ce_flag_reached(kWaits[slot], kWaits[slot]));
  EXPECT_EQ(queued_waits_held(flags, kWaits, kStride), 5 * static_cast<int>(kWaits.size()));
}

}  // namespace
