// The copy-engine ring of FlashInfer's PCIe allreduce (pcie_ipc_ce_ring.cuh, 0.7.4:
// ce_ring_all_reduce_flat, ce_pick_pieces): its launch variants, its pieces per chunk, the flags a
// release writes, and its invariants C1-C2 (docs/protocols.md, "Copy-engine ring") over the area a
// rank reads back. Plain C++, built with or without FlashInfer's headers.
#include <fmt/core.h>

#include <cstring>
#include <stdexcept>

#include "pcie_ce_rules.hpp"

namespace fusioncheck::adapters {

namespace {

constexpr int kCeMaxPieces = 4;     // the header's
constexpr int kPackElems = 8;       // 16-bit elements per 16-byte pack
constexpr int kCeAddThreads = 256;  // the header's add kernel block
// How far past its wait count a released flag is set: fewer than 2^30 queued waits all pass,
// and the flag stays ahead of each in a wrap-safe comparison.
constexpr std::uint32_t kReleaseAhead = 1u << 30;

}  // namespace

bool flashinfer_pcie_ce_flag_reached(std::int32_t flag, std::int32_t count) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(flag) -
                                   static_cast<std::uint32_t>(count)) >= 0;
}

std::vector<std::uint8_t> flashinfer_pcie_ce_release_flags(const std::vector<std::int32_t>& waits,
                                                           int flag_stride) {
  if (flag_stride < 4) throw std::invalid_argument("a copy-engine flag slot holds 4 bytes");
  const auto stride = static_cast<std::size_t>(flag_stride);
  std::vector<std::uint8_t> flags(waits.size() * stride);
  for (std::size_t slot = 0; slot < waits.size(); ++slot) {
    const std::uint32_t ahead = static_cast<std::uint32_t>(waits[slot]) + kReleaseAhead;
    std::memcpy(&flags[slot * stride], &ahead, 4);
  }
  return flags;
}

int flashinfer_pcie_ce_pieces(int ranks, std::int64_t numel, int pieces_hint) {
  const std::int64_t shard = numel / ranks;
  const auto shard_bytes = static_cast<std::uint64_t>(shard) * 2;
  const int want = pieces_hint >= 1 && pieces_hint <= kCeMaxPieces ? pieces_hint : 2;
  for (int pieces = want; pieces > 1; --pieces)
    if (shard % (static_cast<std::int64_t>(pieces) * kPackElems) == 0 &&
        shard_bytes / static_cast<std::uint64_t>(pieces) >= (512u << 10))
      return pieces;
  return 1;
}

void append_copy_engine_variants(int ranks, std::vector<PcieVariant>& out) {
  struct Ring {
    int kernel_variant, pieces_hint;
    const char* name;
  };
  for (const Ring& r : {Ring{4, 2, "ce_ring_all_reduce_flat (flag kernels, pieces asked: 2)"},
                        Ring{4, 4, "ce_ring_all_reduce_flat (flag kernels, pieces asked: 4)"},
                        Ring{6, 1, "ce_ring_all_reduce_flat (stream memory operations)"}}) {
    PcieVariant v;
    v.kernel_variant = r.kernel_variant;
    v.threads = kCeAddThreads;
    v.copy_engine = true;
    v.pieces_hint = r.pieces_hint;
    v.info.name = r.name;
    v.info.sum_order = reference::SumOrder::ring_shards;  // a rounding per hop, no sentinel
    v.info.elems_multiple =
        static_cast<std::uint64_t>(kPackElems) * static_cast<std::uint64_t>(ranks);
    // Two pieces once a piece of a shard still holds 512 KiB: shards of 2^19 16-bit elements.
    if (r.pieces_hint > 1) v.info.deep_from_elems = static_cast<std::uint64_t>(ranks) << 19;
    out.push_back(v);
  }
}

void check_copy_engine(const PcieStateAfterCalls& s, std::vector<std::string>& out) {
  if (s.ce_flags.empty()) return;
  const int n = s.layout.ranks;
  const std::size_t slots = s.ce_flags.size();
  if (s.ce_send.size() != slots || s.ce_wait.size() != slots || s.ce_wait_before.size() != slots ||
      s.numels.size() != s.variants.size() || s.ce_handshake_slot < 0 ||
      static_cast<std::size_t>(s.ce_handshake_slot) >= slots)
    throw std::invalid_argument("check_copy_engine: the copy-engine area read back is incomplete");
  // The waits each slot takes from the group's ring calls: a flag-kernel call waits once on
  // every ring slot of its pieces; every call once on the handshake slot.
  std::vector<std::int32_t> expected = s.ce_wait_before;
  const auto variants = flashinfer_pcie_variants(n);
  for (std::size_t i = 0; i < s.variants.size(); ++i) {
    const PcieVariant& v = variants.at(static_cast<std::size_t>(s.variants[i]));
    if (!v.copy_engine) continue;
    const int pieces = flashinfer_pcie_ce_pieces(n, s.numels[i], v.pieces_hint);
    const bool memop = v.kernel_variant == 6 && pieces == 1 && !s.ce_binary.empty();
    if (!memop)
      for (int slot = 0; slot < 2 * (n - 1) * pieces; ++slot)
        ++expected[static_cast<std::size_t>(slot)];
    ++expected[static_cast<std::size_t>(s.ce_handshake_slot)];
  }
  for (std::size_t slot = 0; slot < slots; ++slot) {
    const char* what = static_cast<int>(slot) == s.ce_handshake_slot ? "handshake slot" : "slot";
    if (s.ce_wait[slot] != expected[slot]) {
      out.push_back(fmt::format(
          "copy-engine invariant C1: {} {}: this rank waited {} times there, expected {} ({} "
          "before the calls)",
          what, slot, s.ce_wait[slot], expected[slot], s.ce_wait_before[slot]));
      return;
    }
    if (s.ce_flags[slot] != s.ce_wait[slot] || s.ce_send[slot] != s.ce_wait[slot]) {
      out.push_back(fmt::format(
          "copy-engine invariant C1: {} {}: its flag holds {} and this rank published {} times, "
          "but it consumed {} publications (every rank runs the same calls)",
          what, slot, s.ce_flags[slot], s.ce_send[slot], s.ce_wait[slot]));
      return;
    }
  }
  for (std::size_t i = 0; i < s.ce_binary.size(); ++i)
    if (s.ce_binary[i] != 0) {
      out.push_back(fmt::format(
          "copy-engine invariant C2: binary flag {} holds {} after the calls: a readiness written "
          "and never consumed",
          i, s.ce_binary[i]));
      return;
    }
}

}  // namespace fusioncheck::adapters
