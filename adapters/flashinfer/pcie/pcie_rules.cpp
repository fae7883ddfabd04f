// FlashInfer's PCIe allreduce: its host-side rules (flashinfer.hpp), read from
// pcie_ipc_all_reduce.cuh (FlashInfer 0.7.4: all_reduce() and its kernels, L860-L2347) and from
// the wheel's Python (pcie_ipc_policy.py: the untuned grids; pcie_ipc_tuning.py: the grids its
// tuner tries). Plain C++, built with or without FlashInfer's headers.
#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fusioncheck/adapters/flashinfer.hpp"
#include "pcie_ce_rules.hpp"

namespace fusioncheck::adapters {
namespace {

namespace k = kernels;
using reference::SumOrder;

// Grids: 16 x 128 (the untuned choice for 2 ranks and for 8 below 32 KiB), 1 x 256 (4 ranks below
// 32 KiB), 4 x 256 (the ring above it), and two the tuner tries.
struct Grid {
  int blocks, threads;
};
constexpr Grid kGrids[] = {{16, 128}, {1, 256}, {4, 256}, {32, 512}, {8, 1024}};

// What each kernel does (its header): which sum, which zeros, whether ranks may differ in the
// sign of a zero result, whether it keeps per-block barrier generations.
struct KernelFacts {
  int kernel_variant;
  const char* name;
  SumOrder order;
  bool sanitises;  // a sentinel kernel: +0 pushed as -0
  bool sign_free;  // owner keeps its raw sum, the others receive it sanitised (or TP2's raw own)
  bool barriers;
};

constexpr KernelFacts kTwoRanks[] = {
    {0, "ipc_tp2_remote_push_kernel (unstaged)", SumOrder::rank_order, true, true, false},
    {1, "ipc_tp2_remote_push_kernel (staged)", SumOrder::rank_order, true, true, false},
};
constexpr KernelFacts kFourRanks[] = {
    {0, "push_oneshot_param_kernel<4>", SumOrder::rank_order, true, false, false},
    {1, "ipc_rsag_push_param_kernel<4>", SumOrder::rank_order, true, true, false},
    {2, "ipc_rsag_ring_push_param_kernel<4>", SumOrder::rank_order, true, true, true},
};
constexpr KernelFacts kEightRanks[] = {
    {0, "ipc_topo_rsag8_push_param_kernel", SumOrder::islands_of_4, true, true, false},
    {1, "ipc_topo_rsag8_block_param_kernel", SumOrder::pairwise_islands_of_4, false, false, true},
    {2, "ipc_topo_rsag8_ring_push_param_kernel", SumOrder::pairwise_islands_of_4, false, false,
     true},
    {3, "ipc_rsag_push_param_kernel<8>", SumOrder::rank_order, true, true, false},
};

std::vector<KernelFacts> kernels_for(int ranks) {
  if (ranks == 2) return {std::begin(kTwoRanks), std::end(kTwoRanks)};
  if (ranks == 4) return {std::begin(kFourRanks), std::end(kFourRanks)};
  if (ranks == 8) return {std::begin(kEightRanks), std::end(kEightRanks)};
  return {};
}

}  // namespace

std::vector<PcieVariant> flashinfer_pcie_variants(int ranks, bool with_copy_engine) {
  std::vector<PcieVariant> out;
  for (const KernelFacts& f : kernels_for(ranks))
    for (const Grid& g : kGrids) {
      // The 8-rank block kernel takes its chunk from blockIdx.x & 3: blocks % 4 == 0.
      if (ranks == 8 && f.kernel_variant == 1 && g.blocks % 4 != 0) continue;
      PcieVariant v;
      v.kernel_variant = f.kernel_variant;
      v.blocks = g.blocks;
      v.threads = g.threads;
      v.barriers = f.barriers;
      v.info.name =
          std::string(f.name) + " " + std::to_string(g.blocks) + "x" + std::to_string(g.threads);
      v.info.sum_order = f.order;
      v.info.sanitises_pos_zero = f.sanitises;
      v.info.zero_sign_free = f.sign_free;
      out.push_back(v);
    }
  if (with_copy_engine && !out.empty()) append_copy_engine_variants(ranks, out);
  return out;
}

int flashinfer_pcie_region(int ranks, int kernel_variant) {
  if (kernel_variant >= 4) return -1;  // the copy-engine ring: its own area
  if (ranks == 2) return 0;            // TP2 stages in the block region under either variant
  return kernel_variant == 0 || kernel_variant == 3 ? 1 : 0;
}

bool flashinfer_pcie_region_sentinel_only(int ranks, int region) {
  // At 8 ranks the block region belongs to the barrier kernels, which leave payload there.
  return !(ranks == 8 && region == 0);
}

gpu::KernelTraits flashinfer_pcie_traits(int ranks) {
  gpu::KernelTraits t;
  t.fp32_lamport = false;
  t.unfused = false;
  t.forced_cluster = false;
  t.twoshot = false;                    // its variants are drawn through CallSpec::variant instead
  t.outputs_visible_at_trigger = true;  // __syncthreads, __threadfence, then the trigger
  t.early_trigger = false;
  t.patterns = {k::Pattern::allreduce};
  t.fp32_accumulation = false;  // every add rounds to the element type (__hadd2)
  t.weight_bias = false;
  for (const PcieVariant& v : flashinfer_pcie_variants(ranks)) t.variants.push_back(v.info);
  return t;
}

std::string flashinfer_pcie_refusal(const k::FusedParams& p, bool twoshot) {
  const std::string who = "FlashInfer's PCIe allreduce";
  if (twoshot)
    return who + " has no two-shot path of ours (its kernels are drawn as launch variants)";
  if (p.ranks != 2 && p.ranks != 4 && p.ranks != 8)
    return who + " runs on 2, 4 or 8 ranks, not " + std::to_string(p.ranks);
  if (p.dtype != k::DType::bf16 && p.dtype != k::DType::f16)
    return who + ": inputs are bf16 or f16";
  if (p.fp32_lamport) return who + " has no fp32 staging";
  if (p.pattern != k::Pattern::allreduce)
    return who + " is an allreduce only, not pattern " + std::string(k::pattern_name(p.pattern));
  if (p.fp32_accumulation) return who + " rounds after every add (no fp32 accumulation)";
  if (p.trigger != k::Trigger::at_end) return who + " triggers its dependents at its end only";
  if (p.cluster != k::ClusterMode::automatic) return who + " has no cluster path";
  const auto count = static_cast<int>(flashinfer_pcie_variants(p.ranks).size());
  if (p.variant < 0 || p.variant >= count)
    return who + ": variant " + std::to_string(p.variant) + " outside [0, " +
           std::to_string(count) + ") for " + std::to_string(p.ranks) + " ranks";
  if (static_cast<long long>(p.tokens) * p.hidden % 8 != 0)
    return who + ": tokens x hidden must be a multiple of 8 (16-byte packs)";
  if (flashinfer_pcie_variants(p.ranks).at(static_cast<std::size_t>(p.variant)).copy_engine &&
      static_cast<long long>(p.tokens) * p.hidden % (8ll * p.ranks) != 0)
    return who + "'s copy-engine ring: tokens x hidden must be " + std::to_string(p.ranks) +
           " shards of whole 16-byte packs";
  return "";
}

namespace {

const char* region_name(int region) { return region == 1 ? "pack" : "block"; }

// P1, P2: each region's epoch flipped once per call staged there, its arrival counter 0.
void check_regions(const PcieStateAfterCalls& s, std::vector<std::string>& out) {
  const PcieSignalLayout& l = s.layout;
  const auto variants = flashinfer_pcie_variants(l.ranks);
  int flips[2] = {0, 0};
  for (int v : s.variants)
    if (const int region = flashinfer_pcie_region(
            l.ranks, variants.at(static_cast<std::size_t>(v)).kernel_variant);
        region >= 0)
      ++flips[region];
  for (int region : {0, 1}) {
    const int w = l.state_word(region);
    const std::int32_t was = s.before[static_cast<std::size_t>(w)];
    const std::int32_t expected = (was & 1) ^ (flips[region] & 1);
    const std::int32_t epoch = s.after[static_cast<std::size_t>(w)];
    const std::int32_t arrivals = s.after[static_cast<std::size_t>(w) + 1];
    if (epoch != expected)
      out.push_back(
          fmt::format("PCIe invariant P1: the {} region's epoch is {}, expected {} ({} "
                      "call(s) staged there flip it from {})",
                      region_name(region), epoch, expected, flips[region], was));
    if (arrivals != 0)
      out.push_back(
          fmt::format("PCIe invariant P2: the {} region's arrival counter is {} after "
                      "the calls (the last block to arrive resets it to 0)",
                      region_name(region), arrivals));
  }
}

// P3: the regions of sentinel kernels hold +0 in every byte.
void check_sentinel_regions(const PcieStateAfterCalls& s, std::vector<std::string>& out) {
  for (int region : {0, 1}) {
    const PcieStateAfterCalls::RegionScan& scan = s.regions[region];
    const std::uint64_t at = scan.first_nonzero;
    if (at >= scan.bytes) continue;
    const std::uint64_t half = scan.bytes / 2;
    out.push_back(fmt::format(
        "PCIe invariant P3: the {} region still holds data after the calls: half {}, byte {} of "
        "that half reads {:#04x}; every sentinel kernel leaves its slots +0",
        region_name(region), half == 0 ? 0 : at / half, half == 0 ? at : at % half, scan.value));
  }
}

// P4: generations advanced by the barrier calls of each block, no barrier slot ahead of them.
void check_generations(const PcieStateAfterCalls& s, std::vector<std::string>& out) {
  const PcieSignalLayout& l = s.layout;
  const auto variants = flashinfer_pcie_variants(l.ranks);
  for (int b = 0; b < kPcieMaxBlocks; ++b) {
    std::int32_t expected = s.before[static_cast<std::size_t>(l.flag_word(b))];
    for (int v : s.variants) {
      const PcieVariant& pv = variants.at(static_cast<std::size_t>(v));
      if (pv.barriers && b < pv.blocks) ++expected;
    }
    const std::int32_t g = s.after[static_cast<std::size_t>(l.flag_word(b))];
    if (g != expected) {
      out.push_back(fmt::format(
          "PCIe invariant P4: block {}'s barrier generation is {}, expected {}", b, g, expected));
      return;
    }
    for (int phase = 0; phase < l.phases; ++phase)
      for (int peer = 0; peer < l.ranks; ++peer) {
        const std::int32_t slot = s.after[static_cast<std::size_t>(l.phase_word(phase, b, peer))];
        const auto ahead = static_cast<std::int32_t>(static_cast<std::uint32_t>(slot) -
                                                     static_cast<std::uint32_t>(g));
        if (ahead > 0) {
          out.push_back(
              fmt::format("PCIe invariant P4: barrier slot (phase {}, block {}, peer {}) "
                          "holds generation {}, ahead of the block's {}",
                          phase, b, peer, slot, g));
          return;
        }
      }
  }
}

// P5: what the SM kernels never write.
void check_untouched(const PcieStateAfterCalls& s, std::vector<std::string>& out) {
  for (int w = 0; w < kPcieMaxBlocks; ++w)
    if (s.after[static_cast<std::size_t>(w)] != 0) {
      out.push_back(
          fmt::format("PCIe invariant P5: epoch slot {} (used by debug builds only) holds {}", w,
                      s.after[static_cast<std::size_t>(w)]));
      break;
    }
  if (!s.guards_intact)
    out.push_back("PCIe invariant P5: a guard word around the slab was overwritten");
}

}  // namespace

std::vector<std::string> pcie_state_violations(const PcieStateAfterCalls& state) {
  const auto words = static_cast<std::size_t>(state.layout.flag_word(kPcieMaxBlocks - 1)) + 1;
  if (state.before.size() < words || state.after.size() < words ||
      state.before.size() <= static_cast<std::size_t>(state.layout.pack_state_word) + 1 ||
      state.after.size() <= static_cast<std::size_t>(state.layout.pack_state_word) + 1)
    throw std::invalid_argument("pcie_state_violations: fewer signal words than the layout has");
  std::vector<std::string> out;
  check_regions(state, out);
  check_sentinel_regions(state, out);
  check_generations(state, out);
  check_untouched(state, out);
  check_copy_engine(state, out);  // pcie_ce_rules.cpp
  return out;
}

}  // namespace fusioncheck::adapters
