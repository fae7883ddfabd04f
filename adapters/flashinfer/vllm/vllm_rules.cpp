// The host-side rules of FlashInfer's copy of vLLM's custom allreduce (flashinfer_vllm.hpp):
// its launch variants, what it refuses, and the checks of its barrier protocol (docs/protocols.md,
// "vLLM barrier protocol", invariants V1-V4) over the state a rank reads back. No GPU needed.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>

#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/adapters/flashinfer_vllm.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"

namespace fusioncheck::adapters {

namespace k = kernels;
using reference::SumOrder;

namespace {

constexpr int kPackBytes = 16;  // the kernels move 16-byte packs

gpu::KernelVariant variant_info(std::string name, SumOrder order) {
  gpu::KernelVariant v;
  v.name = std::move(name);
  v.sum_order = order;
  return v;
}

}  // namespace

std::uint64_t flashinfer_vllm_two_stage_from_bytes(int ranks) {
  if (ranks <= 2) return 0;
  return ranks <= 4 ? 512u << 10 : 256u << 10;
}

int flashinfer_vllm_stage(int ranks, const VllmVariant& variant, std::uint64_t bytes) {
  if (variant.stage != 0) return variant.stage;
  const std::uint64_t from = flashinfer_vllm_two_stage_from_bytes(ranks);
  return from != 0 && bytes >= from ? 2 : 1;
}

int flashinfer_vllm_grid(std::uint64_t numel, int block_limit) {
  const std::uint64_t packs = numel * 2 / kPackBytes;
  const std::uint64_t blocks = (packs + kVllmThreads - 1) / kVllmThreads;
  return static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(block_limit), blocks));
}

// allreduce() as FlashInfer's binding calls it (the size thresholds pick the kernel), and each
// kernel chosen explicitly, with the default grid and with a small one whose blocks loop.
std::string flashinfer_vllm_mutant_may_survive(const gpu::MutantId& m,
                                               const gpu::GpuPlacement& placement) {
  if (m == protocol::Mutant::vllm_no_fence && placement.ranks_share_gpu)
    return "seldom observable between ranks on one GPU (one coherent L2): only the order of a "
           "block's stores against its flag changes; the sim's vLLM model kills it";
  return "";
}

bool flashinfer_vllm_mutant_needs_held_rank(const gpu::MutantId& m) {
  return m == protocol::Mutant::vllm_no_end_barrier;
}

std::vector<VllmVariant> flashinfer_vllm_variants(int ranks) {
  std::vector<VllmVariant> out;
  VllmVariant by_size;
  by_size.info = variant_info("allreduce(), the kernel chosen by size", SumOrder::rank_order);
  by_size.info.large_from_bytes = flashinfer_vllm_two_stage_from_bytes(ranks);
  by_size.info.large_sum_order = SumOrder::part_owner_rotated;
  if (by_size.info.large_from_bytes != 0)
    by_size.info.name +=
        fmt::format(" (two stages from {} KiB)", by_size.info.large_from_bytes >> 10);
  out.push_back(by_size);
  for (int limit : {kVllmBlockLimit, 5}) {
    VllmVariant one;
    one.stage = 1;
    one.block_limit = limit;
    one.info = variant_info(fmt::format("cross_device_reduce_1stage, at most {} blocks", limit),
                            SumOrder::rank_order);
    out.push_back(one);
    VllmVariant two = one;
    two.stage = 2;
    two.info = variant_info(fmt::format("cross_device_reduce_2stage, at most {} blocks", limit),
                            SumOrder::part_owner_rotated);
    out.push_back(two);
  }
  return out;
}

gpu::KernelTraits flashinfer_vllm_traits(int ranks, int barrier_hooks) {
  gpu::KernelTraits t;
  t.fp32_lamport = false;
  t.unfused = false;
  t.forced_cluster = false;
  t.twoshot = false;        // its two kernels are drawn through CallSpec::variant
  t.early_trigger = false;  // no PDL: dependents start after it ends
  t.patterns = {k::Pattern::allreduce};
  t.weight_bias = false;
  t.per_step_accumulation = false;  // it sums in fp32 and rounds once
  for (const VllmVariant& v : flashinfer_vllm_variants(ranks)) t.variants.push_back(v.info);
  // A rank still reading its peers' inputs while a peer leaves the call early opens only after
  // the start barrier: a pause before the call is absorbed by that barrier.
  if (barrier_hooks > 0) t.in_kernel_holds = {k::HoldPoint::before_poll};
  return t;
}

std::string flashinfer_vllm_refusal(const k::FusedParams& p, bool twoshot) {
  const std::string who = "FlashInfer's copy of vLLM's custom allreduce";
  if (twoshot)
    return who + " has no two-shot path of ours (its kernels are drawn as launch variants)";
  if (p.ranks != 2 && p.ranks != 4 && p.ranks != 6 && p.ranks != 8)
    return who + " runs on 2, 4, 6 or 8 ranks, not " + std::to_string(p.ranks);
  if (p.dtype != k::DType::bf16 && p.dtype != k::DType::f16)
    return who + ": inputs are bf16 or f16";
  if (p.fp32_lamport) return who + " has no Lamport buffers";
  if (p.pattern != k::Pattern::allreduce)
    return who + " is an allreduce only, not pattern " + std::string(k::pattern_name(p.pattern));
  if (!p.fp32_accumulation) return who + " sums in fp32 and rounds once";
  if (p.trigger != k::Trigger::at_end)
    return who + " has no PDL trigger (dependents start after it)";
  if (p.cluster != k::ClusterMode::automatic) return who + " has no cluster path";
  const auto count = static_cast<int>(flashinfer_vllm_variants(p.ranks).size());
  if (p.variant < 0 || p.variant >= count)
    return fmt::format("{}: variant {} outside [0, {}) for {} ranks", who, p.variant, count,
                       p.ranks);
  const long long numel = static_cast<long long>(p.tokens) * p.hidden;
  if (numel % 8 != 0) return who + ": tokens x hidden must be a multiple of 8 (16-byte packs)";
  if (numel > (1ll << 30)) return who + ": tokens x hidden beyond its int size";
  return "";
}

namespace {

std::uint32_t at(const std::vector<std::uint32_t>& v, std::size_t i) {
  return i < v.size() ? v[i] : 0;
}

// V1: in each block every lane counted alike; a block outside every call's grid counted nothing.
void check_counts(const VllmStateAfterCalls& s, std::vector<std::string>& out) {
  const int widest = s.grids.empty() ? 0 : *std::max_element(s.grids.begin(), s.grids.end());
  for (int b = 0; b < s.max_blocks; ++b) {
    const std::size_t row = static_cast<std::size_t>(b) * kVllmCounterLanes;
    for (int p = 1; p < s.ranks; ++p)
      if (at(s.self_after, row + p) != at(s.self_after, row)) {
        out.push_back(fmt::format(
            "vLLM invariant V1: block {}: the barrier lane of peer {} counted {} barriers, the "
            "lane of peer 0 {}",
            b, p, at(s.self_after, row + p), at(s.self_after, row)));
        return;
      }
    if (b >= widest && at(s.self_after, row) != at(s.self_before, row)) {
      out.push_back(fmt::format(
          "vLLM invariant V1: block {} is outside every call's grid (at most {} blocks) but its "
          "count went {} -> {}",
          b, widest, at(s.self_before, row), at(s.self_after, row)));
      return;
    }
  }
}

// V2: each counter holds what its peer's last two barriers of the block stored there.
void check_peer_counters(const VllmStateAfterCalls& s, std::vector<std::string>& out) {
  const auto peer = [&](int set, int b, int p) {
    return at(s.peer_after,
              (static_cast<std::size_t>(set) * s.max_blocks + b) * kVllmCounterLanes + p);
  };
  for (int b = 0; b < s.max_blocks; ++b) {
    const std::uint32_t count = at(s.self_after, static_cast<std::size_t>(b) * kVllmCounterLanes);
    for (int p = 0; p < s.ranks; ++p) {
      const std::uint32_t last = peer(static_cast<int>(count % 2), b, p);
      const std::uint32_t before = peer(static_cast<int>((count + 1) % 2), b, p);
      const std::uint32_t want_before = count == 0 ? 0 : count - 1;
      if (last != count || before != want_before) {
        out.push_back(fmt::format(
            "vLLM invariant V2: block {} counted {} barriers, but the counters peer {} stores hold "
            "{} (set {}, expected {}) and {} (set {}, expected {})",
            b, count, p, last, count % 2, count, before, (count + 1) % 2, want_before));
        return;
      }
    }
  }
}

std::string first_differing_pack(const std::uint8_t* a, const std::uint8_t* b, std::uint64_t packs,
                                 std::uint64_t* count) {
  std::string first;
  *count = 0;
  for (std::uint64_t i = 0; i < packs; ++i)
    if (std::memcmp(a + i * kPackBytes, b + i * kPackBytes, kPackBytes) != 0 && (*count)++ == 0)
      first = std::to_string(i);
  return first;
}

}  // namespace

std::vector<std::string> vllm_state_violations(const VllmStateAfterCalls& s) {
  std::vector<std::string> out;
  check_counts(s, out);
  check_peer_counters(s, out);
  if (s.last_stage == 2 && !s.tmp.empty()) {  // V3: my part, as I summed it, is what I gathered
    const std::uint64_t part = s.last_packs / static_cast<std::uint64_t>(s.ranks);
    const std::uint64_t start = static_cast<std::uint64_t>(s.rank) * part;
    const std::uint64_t end = s.rank == s.ranks - 1 ? s.last_packs : start + part;
    std::uint64_t differing = 0;
    if (s.tmp.size() < (end - start) * kPackBytes || s.output.size() < end * kPackBytes) {
      out.push_back("vLLM invariant V3: the temporary buffer or the output was not read whole");
    } else if (const std::string first = first_differing_pack(
                   s.tmp.data(), s.output.data() + start * kPackBytes, end - start, &differing);
               differing != 0) {
      out.push_back(fmt::format(
          "vLLM invariant V3: {} of the {} packs of my part in the temporary buffer differ from "
          "the output there (packs {}..{}), first at pack {} of the part",
          differing, end - start, start, end, first));
    }
  }
  if (!s.registered.empty()) {  // V4: the kernels never write what they read
    std::uint64_t differing = 0;
    const std::uint64_t packs = std::min(s.registered.size(), s.input.size()) / kPackBytes;
    if (const std::string first =
            first_differing_pack(s.registered.data(), s.input.data(), packs, &differing);
        differing != 0 || s.registered.size() != s.input.size())
      out.push_back(fmt::format(
          "vLLM invariant V4: the registered buffer the last call read differs from my input in "
          "{} of {} packs, first at pack {}",
          differing, packs, first.empty() ? "-" : first));
  }
  if (!s.guards_intact)
    out.push_back(
        "vLLM invariant V4: a guard word around the Signal, its temporary buffer or the registered "
        "buffer was overwritten");
  return out;
}

}  // namespace fusioncheck::adapters

namespace fusioncheck::adapters {

#ifndef FUSIONCHECK_HAVE_FLASHINFER
std::string flashinfer_vllm_unavailable_reason() {
  return "this build has no FlashInfer adapter: " + flashinfer_unavailable_reason();
}
std::vector<gpu::MutantId> flashinfer_vllm_patches() { return {}; }
std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_vllm_patches_not_built() {
  return {};
}
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_vllm(kernels::Bootstrap&,
                                                           const gpu::MutantId&) {
  throw kernels::InvalidLaunch(flashinfer_vllm_unavailable_reason());
}
#endif

gpu::KernelChoice flashinfer_vllm_choice() {
  gpu::KernelChoice choice;
  choice.name = "flashinfer-vllm";
  choice.host_traits = [](int ranks) { return flashinfer_vllm_traits(ranks); };
  choice.release = flashinfer_main_release();
  choice.make = make_flashinfer_vllm;
  choice.rank_counts = {2, 4, 6, 8};
  // Its blocks wait for their peers' at every barrier and take an SM each (68 registers x 512
  // threads): 8 ranks x 36 blocks on one GPU without shares can leave a rank no SM at all.
  choice.share_sms = true;
  choice.mutant_ranks = {2, 4, 6, 8};  // a patched copy is a whole library: every rank count
  return choice;
}

}  // namespace fusioncheck::adapters
