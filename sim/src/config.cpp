// Profiles, default configurations and the validation of sizes.
#include "fusioncheck/sim/config.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <stdexcept>

#include "fusioncheck/protocol/workspace.hpp"

namespace fusioncheck::sim {

const Profile* find_profile(std::string_view name) {
  for (const auto& p : kProfiles)
    if (p.name == name) return &p;
  for (const auto& p : kRackProfiles)
    if (p.name == name) return &p;
  return nullptr;
}

std::string profile_names() {
  std::string out;
  for (const auto& p : kProfiles) out += std::string(out.empty() ? "" : ", ") + std::string(p.name);
  for (const auto& p : kRackProfiles) out += ", " + std::string(p.name);
  return out;
}

std::span<const Profile> profiles_of(SimProtocol protocol) {
  if (protocol == SimProtocol::mnnvl) return kRackProfiles;
  return kProfiles;
}

namespace {
// Each model: its name, how its rows are labelled, the catalogue bit of its mutants.
struct ProtocolInfo {
  SimProtocol protocol;
  const char* name;
  const char* label;
  std::uint16_t mutant_bit;
};
constexpr ProtocolInfo kProtocolInfo[] = {
    // in SimProtocol's order
    {SimProtocol::lamport, "lamport", "", protocol::kInSim},
    {SimProtocol::pcie, "pcie", " (PCIe)", protocol::kInSimPcie},
    {SimProtocol::vllm, "vllm", " (vLLM)", protocol::kInSimVllm},
    {SimProtocol::mnnvl, "mnnvl", " (MNNVL)", protocol::kInSimMnnvl},
    {SimProtocol::sglang, "sglang", " (SGLang)", protocol::kInSimSglang},
    {SimProtocol::ce_ring, "ce-ring", " (CE ring)", protocol::kInSimCeRing},
};
static_assert(std::size(kProtocolInfo) == std::size(kSimProtocols));
static_assert(kProtocolInfo[1].protocol == SimProtocol::pcie &&
              kProtocolInfo[2].protocol == SimProtocol::vllm &&
              kProtocolInfo[3].protocol == SimProtocol::mnnvl &&
              kProtocolInfo[4].protocol == SimProtocol::sglang &&
              kProtocolInfo[5].protocol == SimProtocol::ce_ring);
const ProtocolInfo& info_of(SimProtocol protocol) {
  return kProtocolInfo[static_cast<std::size_t>(protocol)];
}
}  // namespace

const char* protocol_name(SimProtocol protocol) { return info_of(protocol).name; }

const char* vllm_barrier_name(VllmBarrier barrier) {
  return barrier == VllmBarrier::start_end ? "start-end" : "counter-sets";
}

std::optional<VllmBarrier> parse_vllm_barrier(std::string_view name) {
  if (name == "counter-sets") return VllmBarrier::counter_sets;
  if (name == "start-end") return VllmBarrier::start_end;
  return std::nullopt;
}
const char* protocol_label(SimProtocol protocol) { return info_of(protocol).label; }

SimProtocol protocol_of_kind(CallKind kind) {
  if (is_pcie(kind)) return SimProtocol::pcie;
  if (kind == CallKind::vllm_1stage || kind == CallKind::vllm_2stage) return SimProtocol::vllm;
  if (kind == CallKind::mnnvl_oneshot || kind == CallKind::mnnvl_twoshot) return SimProtocol::mnnvl;
  if (kind == CallKind::sglang_push1 || kind == CallKind::sglang_push2 ||
      kind == CallKind::sglang_fused)
    return SimProtocol::sglang;
  if (kind == CallKind::ce_flat || kind == CallKind::ce_memop) return SimProtocol::ce_ring;
  return SimProtocol::lamport;
}

SimProtocol protocol_of(const SimConfig& config) {
  for (const auto& call : config.calls)
    if (protocol_of_kind(call.kind) != SimProtocol::lamport) return protocol_of_kind(call.kind);
  return SimProtocol::lamport;
}

SimConfig default_config(SimProtocol protocol) {
  SimConfig c;
  c.ranks = 2;
  c.blocks = 2;
  c.vectors_per_block = 2;
  c.elems_per_vector = 2;
  using K = CallKind;
  if (protocol == SimProtocol::mnnvl) {
    // 72 ranks, a token per block: one-shot and two-shot calls of changing size (the bytes to
    // clear and the stage layout change with them), every buffer used twice.
    c.ranks = 72;
    c.vectors_per_block = 1;
    c.calls = {{K::mnnvl_oneshot, 2}, {K::mnnvl_twoshot, 2}, {K::mnnvl_oneshot, 1},
               {K::mnnvl_oneshot, 2}, {K::mnnvl_twoshot, 1}, {K::mnnvl_oneshot, 1}};
    return c;
  }
  if (protocol == SimProtocol::ce_ring) {
    // Four ranks (at three, a call's last copy and the next call's first add never touch one
    // chunk), both readiness paths, chunks in one, two and four pieces back to back.
    c.ranks = 4;
    c.calls = {{K::ce_flat, 2},  {K::ce_memop, 1}, {K::ce_flat, 1},
               {K::ce_memop, 1}, {K::ce_flat, 4},  {K::ce_flat, 2}};
    return c;
  }
  if (protocol == SimProtocol::sglang) {
    // The three kernels on one plane, back to back: sizes that change between calls of one
    // kernel, fused calls of fewer tokens than there are phase counters (the bumper flips the
    // rest) with generic calls between them.
    c.calls = {{K::sglang_push1, 4}, {K::sglang_fused, 1}, {K::sglang_push1, 3},
               {K::sglang_push2, 4}, {K::sglang_fused, 2}, {K::sglang_push2, 3},
               {K::sglang_push1, 4}};
    return c;
  }
  if (protocol == SimProtocol::vllm) {
    // Both kernels, back to back, sizes that change the grid (2 vectors per block): each
    // barrier of one block reuses the counters the previous call's barriers left.
    c.calls = {{K::vllm_1stage, 4}, {K::vllm_1stage, 2}, {K::vllm_2stage, 4},
               {K::vllm_2stage, 3}, {K::vllm_1stage, 4}, {K::vllm_2stage, 4}};
    return c;
  }
  if (protocol == SimProtocol::pcie) {
    // Sizes that change the grid (2 vectors per block) between calls of one region, with
    // nothing in between to drain them, and both sentinel regions in turn.
    c.calls = {{K::pcie_push, 4}, {K::pcie_push, 2}, {K::pcie_push, 4}, {K::pcie_rsag, 4},
               {K::pcie_rsag, 2}, {K::pcie_push, 3}, {K::pcie_push, 1}};
    return c;
  }
  c.calls = {{K::one_shot, 4}, {K::one_shot, 2}, {K::two_shot, 4}, {K::one_shot, 4},
             {K::one_shot, 4}, {K::two_shot, 2}, {K::one_shot, 3}};
  return c;
}

SimConfig tiny_config(SimProtocol protocol) {
  SimConfig c;
  c.ranks = 2;
  c.blocks = 2;
  c.vectors_per_block = 1;
  c.elems_per_vector = 2;  // two elements: NVLink may split the vector, PCIe does not
  if (protocol == SimProtocol::mnnvl) {
    c.calls = {{CallKind::mnnvl_oneshot, 2},
               {CallKind::mnnvl_twoshot, 2},
               {CallKind::mnnvl_oneshot, 1},
               {CallKind::mnnvl_oneshot, 2}};
    return c;
  }
  if (protocol == SimProtocol::ce_ring) {
    c.calls = {{CallKind::ce_flat, 1}, {CallKind::ce_memop, 1}, {CallKind::ce_flat, 2}};
    return c;
  }
  if (protocol == SimProtocol::sglang) {
    c.calls = {{CallKind::sglang_push1, 2},
               {CallKind::sglang_fused, 1},
               {CallKind::sglang_push2, 2},
               {CallKind::sglang_push1, 2}};
    return c;
  }
  if (protocol == SimProtocol::vllm) {
    c.calls = {{CallKind::vllm_1stage, 2},
               {CallKind::vllm_2stage, 2},
               {CallKind::vllm_1stage, 1},
               {CallKind::vllm_2stage, 2}};
    return c;
  }
  const CallKind k = protocol == SimProtocol::pcie ? CallKind::pcie_push : CallKind::one_shot;
  c.calls = {{k, 2}, {k, 1}, {k, 2}, {k, 2}};
  return c;
}

bool in_sim(protocol::Mutant mutant, SimProtocol protocol) {
  if (mutant == protocol::Mutant::none) return true;
  const auto* info = protocol::find_mutant_info(mutant);
  return info != nullptr && (info->layers & info_of(protocol).mutant_bit) != 0;
}

void require_model_input(const SimConfig& config, const Profile& profile, protocol::Mutant mutant,
                         SimProtocol protocol) {
  if (const std::string error = validate(config, profile); !error.empty())
    throw std::invalid_argument(error);
  if (protocol_of(config) != protocol)
    throw std::invalid_argument(fmt::format("the {} model runs {} calls, not {} calls",
                                            protocol_name(protocol), protocol_name(protocol),
                                            protocol_name(protocol_of(config))));
  if (!in_sim(mutant, protocol))
    throw std::invalid_argument(fmt::format("mutant {} is not in the sim's {} model",
                                            protocol::mutant_id(mutant), protocol_name(protocol)));
}

SimProtocol mutant_protocol(protocol::Mutant mutant, SimProtocol preferred) {
  if (in_sim(mutant, preferred)) return preferred;
  for (SimProtocol p : kSimProtocols)
    if (in_sim(mutant, p)) return p;
  return SimProtocol::lamport;
}

SimConfig provoking_config(protocol::Mutant mutant, SimProtocol protocol) {
  using protocol::Mutant;
  SimConfig c = default_config(mutant_protocol(mutant, protocol));
  if (mutant == Mutant::twoshot_gather_overlap) {
    // A two-shot call of 2 vectors right before the two-shot call of 4: the larger call's
    // scatter slots reach past the smaller call's gather region.
    const auto ts4 = std::find(c.calls.begin(), c.calls.end(), CallSpec{CallKind::two_shot, 4});
    c.calls.insert(ts4, CallSpec{CallKind::two_shot, 2});
  }
  if (mutant == Mutant::pcie_sentinel_on_barrier_region) {
    // The 8-rank mix: barrier kernels in the block region, flat reduce-scatter calls beside them.
    using K = CallKind;
    c.calls = {{K::pcie_barrier, 4}, {K::pcie_flat_rsag, 4}, {K::pcie_push, 2},
               {K::pcie_barrier, 3}, {K::pcie_flat_rsag, 2}, {K::pcie_flat_rsag, 4}};
  }
  return c;
}

SimConfig provoking_tiny_config(protocol::Mutant mutant, SimProtocol protocol) {
  using protocol::Mutant;
  SimConfig c = tiny_config(mutant_protocol(mutant, protocol));
  if (mutant == Mutant::twoshot_gather_overlap) {
    // The chunk (ceil(vectors / ranks)) must grow between two two-shot calls: 3 vectors.
    // Random and PCT find it here at once; the exhaustive search within 3 deviations does
    // not (rank 1 must finish a whole call while rank 0 is parked before its gather read).
    c.blocks = 3;
    c.calls = {{CallKind::two_shot, 1}, {CallKind::two_shot, 3}};
  }
  if (mutant == Mutant::pcie_sentinel_on_barrier_region)
    c.calls = {{CallKind::pcie_barrier, 2}, {CallKind::pcie_flat_rsag, 2}};
  return c;
}

std::vector<CallSpec> expanded_calls(const SimConfig& config) {
  std::vector<CallSpec> out;
  for (int r = 0; r < config.graph_replays; ++r)
    out.insert(out.end(), config.calls.begin(), config.calls.end());
  return out;
}

int max_vectors(const SimConfig& config) {
  int m = 1;
  for (const auto& c : config.calls) m = std::max(m, c.vectors);
  return m;
}

std::uint64_t schedule_cost(const SimConfig& c) {
  const auto n = [](long long v) { return static_cast<std::uint64_t>(std::max(0LL, v)); };
  return n(c.ranks) * n(c.ranks) * n(c.blocks) * n(c.vectors_per_block) * n(c.elems_per_vector) *
         n(static_cast<long long>(c.calls.size())) * n(c.graph_replays);
}

std::string validate(const SimConfig& c, const Profile& p) {
  using protocol::kMinRanks;
  const SimProtocol protocol = protocol_of(c);
  // The MNNVL protocol reaches as many ranks as its rack; the others are single-node.
  if (protocol == SimProtocol::mnnvl && !p.multicast)
    return fmt::format("the MNNVL calls store through NVLink multicast, which {} ({}) lacks",
                       p.name, p.interconnect);
  const int max_ranks = protocol == SimProtocol::mnnvl ? p.max_ranks : protocol::kMaxRanks;
  if (c.ranks < kMinRanks || c.ranks > max_ranks)
    return fmt::format("ranks must be in [{}, {}]{}, got {}", kMinRanks, max_ranks,
                       protocol == SimProtocol::mnnvl ? fmt::format(" on {}", p.name) : "",
                       c.ranks);
  if (c.blocks < 1 || c.blocks > kMaxBlocks)
    return fmt::format("blocks must be in [1, {}], got {}", kMaxBlocks, c.blocks);
  if (c.blocks > p.sm_count)
    return fmt::format(
        "{} blocks cannot be co-resident on {} ({} SMs); the spin-wait "
        "protocol needs every block resident",
        c.blocks, p.name, p.sm_count);
  if (c.vectors_per_block < 1 || c.vectors_per_block > kMaxVectorsPerBlock)
    return fmt::format("vectors per block must be in [1, {}], got {}", kMaxVectorsPerBlock,
                       c.vectors_per_block);
  if (c.elems_per_vector < 1 || c.elems_per_vector > kMaxElemsPerVector)
    return fmt::format("elements per vector must be in [1, {}], got {}", kMaxElemsPerVector,
                       c.elems_per_vector);
  if (c.calls.empty()) return "the call sequence is empty";
  if (c.graph_replays < 1 || c.graph_replays > 64)
    return fmt::format("graph replays must be in [1, 64], got {}", c.graph_replays);
  const long total = static_cast<long>(c.calls.size()) * c.graph_replays;
  if (total > kMaxTotalCalls)
    return fmt::format("at most {} calls in all, got {}", kMaxTotalCalls, total);
  if (const std::uint64_t cost = schedule_cost(c); cost > kMaxScheduleCost)
    return fmt::format(
        "one schedule of this configuration is {:.2g} element visits ({}^2 ranks x {} blocks x {} "
        "vectors x {} elements x {} calls); the sim runs at most {:.2g} (minutes and gigabytes "
        "past it): use fewer ranks, blocks, vectors, calls or graph replays",
        static_cast<double>(cost), c.ranks, c.blocks, c.vectors_per_block, c.elems_per_vector,
        total, static_cast<double>(kMaxScheduleCost));
  const int grid_vectors = c.blocks * c.vectors_per_block;
  bool block_sentinel = false, block_barrier = false;
  for (const auto& call : c.calls) {
    if (protocol_of_kind(call.kind) != protocol)
      return fmt::format("a call sequence holds the calls of one protocol, not {} and {} calls",
                         protocol_name(protocol), protocol_name(protocol_of_kind(call.kind)));
    block_sentinel |= call.kind == CallKind::pcie_rsag;
    block_barrier |= call.kind == CallKind::pcie_barrier;
    if (call.vectors < 1)
      return fmt::format("a call must reduce at least 1 vector, got {}", call.vectors);
    if (protocol == SimProtocol::ce_ring && call.vectors > 4)
      return fmt::format("a ring call's chunks travel in 1 to 4 pieces (kCeMaxPieces), got {}",
                         call.vectors);
    if (protocol != SimProtocol::ce_ring && call.vectors > grid_vectors)
      return fmt::format("a call of {} vectors does not fit a grid of {} blocks x {} vectors",
                         call.vectors, c.blocks, c.vectors_per_block);
    if (protocol == SimProtocol::mnnvl && call.vectors > c.blocks)
      return fmt::format("an MNNVL call of {} tokens needs a block per token, the grid has {}",
                         call.vectors, c.blocks);
    // all_reduce_fusion.cuh's host check: a phase counter per token.
    if (call.kind == CallKind::sglang_fused && call.vectors > c.blocks)
      return fmt::format(
          "a fused SGLang call of {} tokens needs a phase counter per token, the "
          "plane has {} (one per block)",
          call.vectors, c.blocks);
  }
  // The header's rule: a scratch region holds one protocol family.
  if (block_sentinel && block_barrier)
    return "rs (sentinel, block region) and pb (barrier, block region) calls cannot share a "
           "sequence: a region holds one protocol family (use rf beside pb)";
  if (protocol == SimProtocol::ce_ring && total > 255)
    return fmt::format("the copy-engine ring model runs at most 255 calls, got {}", total);
  if (c.streams < 1 || c.streams > 2)
    return fmt::format("streams must be 1 or 2, got {}", c.streams);
  if (c.streams > 1 && protocol != SimProtocol::sglang)
    return "two streams apply to the SGLang model only";
  if (c.vllm_barrier != VllmBarrier::counter_sets && protocol != SimProtocol::vllm)
    return "a vLLM barrier applies to the vLLM model only";
  if (c.independent_lanes && c.vllm_barrier != VllmBarrier::start_end)
    return "independent barrier lanes apply to the start-end vLLM barrier only (its block flag)";
  if (c.late_trigger && protocol != SimProtocol::lamport)
    return "--late-trigger applies to the Lamport kernels only";
  return {};
}

namespace {
constexpr CallKind kCallKinds[] = {
    CallKind::one_shot,      CallKind::two_shot,       CallKind::pcie_push,
    CallKind::pcie_rsag,     CallKind::pcie_flat_rsag, CallKind::pcie_barrier,
    CallKind::vllm_1stage,   CallKind::vllm_2stage,    CallKind::mnnvl_oneshot,
    CallKind::mnnvl_twoshot, CallKind::sglang_push1,   CallKind::sglang_push2,
    CallKind::sglang_fused,  CallKind::ce_flat,        CallKind::ce_memop};
std::string_view call_kind_prefix(CallKind kind) {
  switch (kind) {
    case CallKind::one_shot: return "os";
    case CallKind::two_shot: return "ts";
    case CallKind::pcie_push: return "pp";
    case CallKind::pcie_rsag: return "rs";
    case CallKind::pcie_flat_rsag: return "rf";
    case CallKind::pcie_barrier: return "pb";
    case CallKind::vllm_1stage: return "vs";
    case CallKind::vllm_2stage: return "vt";
    case CallKind::mnnvl_oneshot: return "mo";
    case CallKind::mnnvl_twoshot: return "mt";
    case CallKind::sglang_push1: return "sp";
    case CallKind::sglang_push2: return "st";
    case CallKind::sglang_fused: return "sf";
    case CallKind::ce_flat: return "cf";
    case CallKind::ce_memop: return "cm";
  }
  return "?";
}
}  // namespace

std::string format_calls(const std::vector<CallSpec>& calls) {
  std::string out;
  for (const auto& c : calls) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}{}", call_kind_prefix(c.kind), c.vectors);
  }
  return out;
}

bool parse_calls(std::string_view text, std::vector<CallSpec>& out) {
  out.clear();
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return false;  // trailing comma
    if (item.size() < 3) return false;
    CallSpec spec;
    bool known = false;
    for (CallKind kind : kCallKinds)
      if (item.substr(0, 2) == call_kind_prefix(kind)) spec.kind = kind, known = true;
    if (!known) return false;
    const auto digits = item.substr(2);
    const auto [ptr, ec] =
        std::from_chars(digits.data(), digits.data() + digits.size(), spec.vectors);
    if (ec != std::errc{} || ptr != digits.data() + digits.size()) return false;
    out.push_back(spec);
  }
  return !out.empty();
}

}  // namespace fusioncheck::sim
