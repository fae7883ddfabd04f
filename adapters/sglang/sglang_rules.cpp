// The host-side rules of SGLang's push allreduce (sglang_push.hpp): its launch variants, what it
// refuses, the grid and slot sizes the wheel's host entry computes, and the checks of its push
// plane (docs/protocols.md, "SGLang push protocol", invariants S1 and S2) over the state a rank
// reads back. No GPU needed.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>

#include "fusioncheck/adapters/sglang_push.hpp"

namespace fusioncheck::adapters {

namespace k = kernels;

namespace {

std::uint64_t div_ceil(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// The 32-bit word at `at` (the kernels' atom: +0 there is "not yet pushed").
std::uint32_t word_at(const std::uint8_t* at) {
  std::uint32_t word = 0;
  std::memcpy(&word, at, 4);
  return word;
}

}  // namespace

std::vector<gpu::KernelVariant> sglang_push_variants() {
  // Both push their inputs through clear_pos_zero, which rewrites a 32-bit word of two +0
  // halves to the 16-bit -0 pattern as a 32-bit value: the first half becomes -0, the second
  // stays +0, and a +0 beside a non-zero half stays as it is (the two-shot owner does the same
  // to its sum). Only the sign of a zero sum depends on that: outputs are compared with the
  // sign of zeros ignored, against the reference's sum of the inputs as generated.
  gpu::KernelVariant one;
  one.name = "all_reduce_1shot_push_kernel";
  one.sum_order = reference::SumOrder::rank_order;
  one.zero_sign_free = true;
  gpu::KernelVariant two = one;
  two.name = "all_reduce_2shot_push_kernel";
  return {one, two};
}

gpu::KernelTraits sglang_push_traits() {
  gpu::KernelTraits t;
  t.fp32_lamport = false;
  t.unfused = false;
  t.forced_cluster = false;
  t.twoshot = false;        // its two kernels are drawn through CallSpec::variant
  t.early_trigger = false;  // it triggers after its last store, before the phase flip
  // A dependent may read the output only after its grid-dependency wait: the kernel's stores
  // before its trigger are not fenced.
  t.outputs_visible_at_trigger = false;
  t.patterns = {k::Pattern::allreduce};
  t.weight_bias = false;
  t.per_step_accumulation = false;  // it sums in fp32 and rounds once
  t.variants = sglang_push_variants();
  return t;
}

std::string sglang_push_refusal(const k::FusedParams& p, bool twoshot) {
  const std::string who = "SGLang's push allreduce";
  if (twoshot)
    return who + " has no two-shot path of ours (its two kernels are drawn as launch variants)";
  if (p.ranks != 2 && p.ranks != 4 && p.ranks != 6 && p.ranks != 8)
    return who + " runs on 2, 4, 6 or 8 ranks here, not " + std::to_string(p.ranks);
  if (p.dtype != k::DType::bf16 && p.dtype != k::DType::f16)
    return who + ": inputs are bf16 or f16 here";
  if (p.fp32_lamport) return who + " has no fp32 Lamport buffers";
  if (p.pattern != k::Pattern::allreduce)
    return who + " is an allreduce only, not pattern " + std::string(k::pattern_name(p.pattern));
  if (!p.fp32_accumulation) return who + " sums in fp32 and rounds once";
  if (p.trigger != k::Trigger::at_end) return who + " triggers its dependents at its end only";
  if (p.cluster != k::ClusterMode::automatic) return who + " has no cluster path";
  if (p.variant < 0 || p.variant >= static_cast<int>(sglang_push_variants().size()))
    return fmt::format("{}: variant {} outside [0, 2)", who, p.variant);
  const long long numel = static_cast<long long>(p.tokens) * p.hidden;
  if (numel % 8 != 0) return who + ": tokens x hidden must be a multiple of 8 (16-byte vectors)";
  if (numel > (1ll << 31)) return who + ": tokens x hidden beyond its 32-bit element count";
  return "";
}

int sglang_push_block_size(std::uint64_t vecs, int sm_count, bool two_shot, int ranks, int blocks) {
  int size = 1024;
  for (int candidate : {128, 256, 512})
    if (div_ceil(vecs, static_cast<std::uint64_t>(candidate)) <=
        static_cast<std::uint64_t>(sm_count)) {
      size = candidate;
      break;
    }
  if (two_shot)  // at least one warp per peer in all
    size = std::max<int>(size, 32 * static_cast<int>(div_ceil(static_cast<std::uint64_t>(ranks - 1),
                                                              static_cast<std::uint64_t>(blocks))));
  return size;
}

std::uint64_t sglang_push_slot_use(std::uint64_t vecs, bool two_shot, int ranks) {
  if (!two_shot) return vecs * kSglangVecBytes;
  return 2 * div_ceil(vecs, static_cast<std::uint64_t>(ranks)) * kSglangVecBytes;
}

PushSlotScan scan_push_slots(const std::uint8_t* slots, int ranks, std::uint64_t used,
                             int unused_slot) {
  const auto has_pos_zero = [](const std::uint8_t* v) {
    for (int w = 0; w < kSglangVecBytes; w += 4)
      if (word_at(v + w) == 0) return true;
    return false;
  };
  PushSlotScan scan;
  for (std::uint64_t v = 0; (v + 1) * kSglangVecBytes <= used; ++v) {
    int awaited = -1, held = 0;
    for (int src = 0; src < ranks; ++src) {
      if (src == unused_slot) continue;
      const bool empty = has_pos_zero(slots + src * used + v * kSglangVecBytes);
      if (empty && awaited < 0) awaited = src;
      held += empty ? 0 : 1;
    }
    if (awaited < 0 || held == 0) continue;
    if (scan.first_awaited < 0) {
      scan.first_awaited = awaited;
      scan.first_vector = v;
    }
    ++scan.vectors;
  }
  return scan;
}

std::string sglang_push_hang_text(const k::HangRecord& r, int ranks) {
  const std::string where =
      r.awaited_slot < static_cast<std::uint32_t>(ranks)
          ? fmt::format(
                "phase {} of its push plane still held +0 (not yet pushed) in the slot of "
                "peer {} at vector {} while another slot held that vector; {} such vectors",
                r.flag, r.awaited_slot, r.token, r.counter)
          : fmt::format(
                "phase {} of its push plane held no vector that one slot awaits while "
                "another holds it (nothing pushed yet, or every vector consumed)",
                r.flag);
  // What the other phase holds, and blocks that disagree with block 0 on the phase.
  const std::string other = fmt::format(
      "; phase {}: {} vectors held in one slot while another awaits them; {} blocks at phase {}",
      r.flag ^ 1u, r.detail, r.block, r.flag ^ 1u);
  return fmt::format(
      "kernel hang: rank {} call {}: still running when the host's bound expired (the kernel's "
      "polls have none), after {} cycles; {}{}",
      r.rank, r.call_index, r.cycles_waited, where, other);
}

std::vector<std::string> sglang_state_violations(const SglangStateAfterCalls& s) {
  std::vector<std::string> out;
  const std::uint32_t parity = static_cast<std::uint32_t>(s.calls & 1u);
  for (std::size_t b = 0; b < s.counters.size(); ++b)
    if (s.counters[b] != parity) {
      out.push_back(fmt::format(
          "SGLang invariant S1: block {}'s phase counter holds {} after {} calls (every call "
          "flips it once: expected {})",
          b, s.counters[b], s.calls, parity));
      break;
    }
  const std::uint64_t slot_bytes = s.used;
  for (std::size_t at = 0; at + 4 <= s.slots.size(); at += 4) {
    const std::uint32_t word = word_at(&s.slots[at]);
    if (word == 0) continue;
    const std::uint64_t slot = slot_bytes == 0 ? 0 : at / slot_bytes;
    out.push_back(fmt::format(
        "SGLang invariant S2: phase {}, the slot of rank {}, byte {} holds {:#010x}, not the +0 "
        "marker (a consumer re-arms every word it read)",
        slot / static_cast<std::uint64_t>(s.ranks), slot % static_cast<std::uint64_t>(s.ranks),
        slot_bytes == 0 ? at : at % slot_bytes, word));
    break;
  }
  if (!s.input_untouched) out.push_back("SGLang push allreduce: the kernel wrote into its input");
  if (!s.guards_intact)
    out.push_back("SGLang push allreduce: a guard word around the push plane was overwritten");
  return out;
}

}  // namespace fusioncheck::adapters
