// The model of FlashInfer's PCIe allreduce protocol: layout, launches, stores in flight and
// the scheduler's interface (pcie_model.hpp). The thread steps: pcie_steps.cpp.
#include "fusioncheck/sim/pcie_model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "fusioncheck/protocol/mutants.hpp"
#include "fusioncheck/sim/ce_ring_model.hpp"
#include "fusioncheck/sim/mnnvl_model.hpp"
#include "fusioncheck/sim/sglang_model.hpp"
#include "fusioncheck/sim/values.hpp"
#include "fusioncheck/sim/vllm_model.hpp"
#include "pcie_model_internal.hpp"

namespace fusioncheck::sim {

std::unique_ptr<ProtocolModel> make_model(const SimConfig& config, const Profile& profile,
                                          Mutant mutant) {
  switch (protocol_of(config)) {
    case SimProtocol::pcie: return std::make_unique<PcieModel>(config, profile, mutant);
    case SimProtocol::vllm: return std::make_unique<VllmModel>(config, profile, mutant);
    case SimProtocol::mnnvl: return std::make_unique<MnnvlModel>(config, profile, mutant);
    case SimProtocol::sglang: return std::make_unique<SglangModel>(config, profile, mutant);
    case SimProtocol::ce_ring: return std::make_unique<CeRingModel>(config, profile, mutant);
    case SimProtocol::lamport: break;
  }
  return std::make_unique<Model>(config, profile, mutant);
}

PcieModel::PcieModel(const SimConfig& config, const Profile& profile, Mutant mutant)
    : ThreadModel(config.ranks), config_(config), profile_(profile), mutant_(mutant) {
  require_model_input(config, profile, mutant, SimProtocol::pcie);
  calls_ = expanded_calls(config);
  max_vectors_ = max_vectors(config);
  piece_elems_ = std::max(1, profile.store_granularity_bytes / 4);
  in_flight_ = StoreQueue(profile.link_order, piece_elems_);
  const std::size_t n = static_cast<std::size_t>(config.ranks);
  const std::size_t blocks = static_cast<std::size_t>(config.blocks);
  const std::size_t region_words = 2 * n * static_cast<std::size_t>(max_vectors_) *
                                   static_cast<std::size_t>(config.elems_per_vector);
  // Signal words first, then the two scratch regions, as in compute_workspace_layout.
  barrier_base_ = 0;
  gen_base_ = barrier_base_ + 2 * blocks * n;
  state_base_ = gen_base_ + blocks;
  parity_base_ = state_base_ + 4;
  scratch_base_[kBlockRegion] = parity_base_ + 2 * blocks;
  scratch_base_[kPackRegion] = scratch_base_[kBlockRegion] + region_words;
  words_ = scratch_base_[kPackRegion] + region_words;
  reset();
}

int PcieModel::region_of(CallKind kind) const {
  switch (kind) {
    case CallKind::pcie_rsag:
    case CallKind::pcie_barrier: return kBlockRegion;
    case CallKind::pcie_flat_rsag:
      return mutant_ == Mutant::pcie_sentinel_on_barrier_region ? kBlockRegion : kPackRegion;
    default: return kPackRegion;
  }
}

std::size_t PcieModel::epoch_offset(int region) const {
  // pcie-state-in-scratch: the pack region's pair past the signal words, on the scratch.
  if (region == kPackRegion && mutant_ == Mutant::pcie_state_in_scratch)
    return scratch_base_[kPackRegion];
  return state_base_ + 2 * static_cast<std::size_t>(region);
}

std::size_t PcieModel::scratch_offset(int region, int half, int slot, int idx,
                                      int call_vectors) const {
  // pcie-tp2-half-from-payload: halves and rank slots strided by the call's size, not the
  // largest size the workspace was made for.
  const int stride = mutant_ == Mutant::pcie_tp2_half_from_payload ? call_vectors : max_vectors_;
  const std::size_t vec = static_cast<std::size_t>((half * config_.ranks + slot) * stride + idx);
  return scratch_base_[region] + vec * static_cast<std::size_t>(config_.elems_per_vector);
}

void PcieModel::reset() {
  const int n = config_.ranks;
  const int calls = static_cast<int>(calls_.size());
  memory_.assign(static_cast<std::size_t>(n), std::vector<std::uint32_t>(words_, 0u));
  kernels_.clear();
  threads_.clear();
  in_flight_.clear();
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < calls; ++c) {
      Kernel k;
      k.spec = calls_[static_cast<std::size_t>(c)];
      k.grid = (k.spec.vectors + config_.vectors_per_block - 1) / config_.vectors_per_block;
      k.block_reads.assign(static_cast<std::size_t>(k.grid), 0);
      k.block_present = k.block_arrived = k.block_pushed = k.block_read_raw = k.block_reads;
      k.launched = c == 0;
      const int kernel = kernel_index(r, c);
      for (int b = 0; b < k.grid; ++b)
        for (int tid = 0; tid < config_.vectors_per_block; ++tid) {
          const int idx = tid * k.grid + b;  // grid-stride: depends on the grid
          if (idx >= k.spec.vectors) continue;
          Thread t{kernel, r, c, b, tid, idx};
          threads_.push_back(t);
          ++k.threads;
          ++k.block_present[static_cast<std::size_t>(b)];
        }
      kernels_.push_back(std::move(k));
    }
  start_run(threads_.size());
}

int PcieModel::actor_count() const {
  return static_cast<int>(threads_.size()) + config_.ranks * config_.ranks;
}

bool PcieModel::all_done() const {
  for (const Kernel& k : kernels_)
    if (!k.complete) return false;
  return true;
}

// ---- stores in flight ----

void PcieModel::issue(const Thread& t, int dst, std::size_t offset,
                      const std::vector<std::uint32_t>& values, bool release) {
  const int pieces =
      in_flight_.issue({static_cast<int>(&t - threads_.data()), t.kernel, t.rank, dst,
                        t.kernel * config_.blocks + t.block, offset, values, release});
  kernels_[static_cast<std::size_t>(t.kernel)].in_flight += pieces;
}

void PcieModel::deliver(std::size_t index) {
  const PendingStore s = in_flight_.take(index);
  for (std::size_t i = 0; i < s.values.size(); ++i) word(s.dst, s.offset + i) = s.values[i];
  ++memory_events_;
  Kernel& k = kernels_[static_cast<std::size_t>(s.kernel)];
  --k.in_flight;
  if (k.done == k.threads && k.in_flight == 0) k.complete = true;
  if (trace_)
    trace(fmt::format("deliver rank {} -> rank {}: {} = {}", s.src, s.dst, describe_word(s.offset),
                      pcie_value_text(s.values.front())));
}

std::string PcieModel::describe_word(std::size_t offset) const {
  const std::size_t e = static_cast<std::size_t>(config_.elems_per_vector);
  const std::size_t v = static_cast<std::size_t>(max_vectors_);
  const std::size_t n = static_cast<std::size_t>(config_.ranks);
  for (int region : {kBlockRegion, kPackRegion}) {
    if (offset < scratch_base_[region] || offset >= scratch_base_[region] + 2 * n * v * e) continue;
    // Named by the layout of the largest call (pcie-tp2-half-from-payload strides otherwise).
    const std::size_t rel = offset - scratch_base_[region];
    return fmt::format("{} region half {} slot of rank {} vector {} element {}",
                       region == kPackRegion ? "pack" : "block", rel / (n * v * e),
                       rel / (v * e) % n, rel / e % v, rel % e);
  }
  if (offset < gen_base_)
    return fmt::format("barrier {} slot of block {} from rank {}",
                       offset / (static_cast<std::size_t>(config_.blocks) * n) + 1,
                       offset / n % static_cast<std::size_t>(config_.blocks), offset % n);
  return fmt::format("signal word {}", offset);
}

// ---- reporting ----

std::string PcieModel::who(const Thread& t) const {
  const CallSpec& spec = kernel_of(t).spec;
  return fmt::format("rank {} call {} ({}) block {} idx {}", t.rank, t.call, format_calls({spec}),
                     t.block, t.idx);
}

void PcieModel::finish() {
  if (violation_) return;
  if (!all_done()) {
    std::string text = "no event enabled and not every kernel completed:";
    int shown = 0;
    for (const Thread& t : threads_) {
      const Kernel& k = kernel_of(t);
      if (!k.launched || t.pc >= pcie::kDone || shown == 3) continue;
      text += " " + who(t) + " " + awaited(t) + ";";
      ++shown;
    }
    fail(ViolationKind::deadlock, text);
    return;
  }
  check_invariants();
}

}  // namespace fusioncheck::sim

namespace fusioncheck::sim {

namespace {
// In pcie::Pc's order (pcie_model_internal.hpp).
constexpr const char* kPcieStepNames[] = {
    "wait",  "read",     "arrive",  "push",  "poll",       "reset",   "push_gather", "signal1",
    "wait1", "read_raw", "signal2", "wait2", "generation", "trigger", "done"};
static_assert(std::size(kPcieStepNames) == pcie::kDone + 1);
}  // namespace

std::optional<StepSite> PcieModel::site_of(const Event& event) const {
  if (event.kind != EventKind::thread_step) return std::nullopt;
  const Thread& t = threads_[static_cast<std::size_t>(event.id)];
  return StepSite{t.rank, t.call, t.pc};
}

int PcieModel::step_codes() const { return pcie::kDone + 1; }

std::string PcieModel::step_name(int step) const {
  return step >= 0 && step < step_codes() ? kPcieStepNames[step] : "?";
}

}  // namespace fusioncheck::sim
