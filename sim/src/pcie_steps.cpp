// The PCIe model's thread steps, what a spinning thread awaits, and the invariants P1-P4 at
// quiescence (docs/protocols.md "PCIe sentinel protocol").
#include <fmt/core.h>

#include <algorithm>

#include "fusioncheck/protocol/sentinel.hpp"
#include "fusioncheck/sim/pcie_model.hpp"
#include "fusioncheck/sim/values.hpp"
#include "pcie_model_internal.hpp"

namespace fusioncheck::sim {

using namespace pcie;

namespace {
const char* region_text(int region) {
  return region == PcieModel::kPackRegion ? "pack region" : "block region";
}
bool is_rsag(CallKind kind) {
  return kind == CallKind::pcie_rsag || kind == CallKind::pcie_flat_rsag;
}
}  // namespace

std::uint32_t PcieModel::sanitised_input(int call, int src, int idx, int elem) const {
  const std::uint32_t v = input_value(call, src, idx, elem);
  // A real +0 would read as "not yet written": it travels as -0 (pcie-no-sanitise: as is).
  if (v == 0u && mutant_ != Mutant::pcie_no_sanitise) return protocol::kNegZero32;
  return v;
}

bool PcieModel::unwritten(std::uint32_t bits) const {
  // float-sentinel: the test compares floats, so the -0 of a sanitised zero is +0 too.
  if (mutant_ == Mutant::float_sentinel) return (bits & 0x7FFFFFFFu) == 0u;
  return bits == 0u;
}

std::size_t PcieModel::barrier_offset(int phase, int block, int peer) const {
  return barrier_base_ +
         static_cast<std::size_t>((phase * config_.blocks + block) * config_.ranks + peer);
}

// The vectors a thread polls: every rank's slot of its index (push; reduce-scatter on the
// owner), or the owner's slot holding the gathered sum (reduce-scatter elsewhere).
std::vector<int> PcieModel::consumed_slots(const Thread& t) const {
  if (is_rsag(kernel_of(t).spec.kind) && owner_of(t.idx) != t.rank) return {owner_of(t.idx)};
  std::vector<int> all(static_cast<std::size_t>(config_.ranks));
  for (int r = 0; r < config_.ranks; ++r) all[static_cast<std::size_t>(r)] = r;
  return all;
}

std::size_t PcieModel::consumed_offset(const Thread& t, int slot, int half) const {
  const CallSpec& spec = kernel_of(t).spec;
  return scratch_offset(region_of(spec.kind), half, slot, t.idx, spec.vectors);
}

std::vector<std::uint8_t> PcieModel::program(const Thread& t) const {
  const CallSpec& spec = kernel_of(t).spec;
  const bool first = t.tid == 0;
  std::vector<std::uint8_t> p{kWait};
  if (spec.kind == CallKind::pcie_barrier) {
    p.push_back(kPush);
    if (first) p.push_back(kSignal1);
    p.insert(p.end(), {kWait1, kReadRaw});
    if (first) p.push_back(kSignal2);
    p.push_back(kWait2);
    if (first) p.push_back(kGeneration);
  } else {
    if (mutant_ == Mutant::pcie_arrive_before_read) {
      if (first) p.push_back(kArrive);
      p.push_back(kRead);
    } else {
      p.push_back(kRead);
      if (first) p.push_back(kArrive);
    }
    p.insert(p.end(), {kPush, kPoll, kReset});
    if (is_rsag(spec.kind) && owner_of(t.idx) == t.rank) p.push_back(kPushGather);
  }
  p.insert(p.end(), {kTrigger, kDone});
  return p;
}

bool PcieModel::barrier_reached(const Thread& t, int phase) const {
  const std::uint32_t target =
      2u * static_cast<std::uint32_t>(t.half) + 1u + static_cast<std::uint32_t>(phase);
  for (int p = 0; p < config_.ranks; ++p)
    if (word(t.rank, barrier_offset(phase, t.block, p)) < target) return false;
  return true;
}

bool PcieModel::thread_enabled(const Thread& t) const {
  const Kernel& k = kernel_of(t);
  if (!k.launched) return false;
  const std::size_t b = static_cast<std::size_t>(t.block);
  switch (t.pc) {
    case kWait: return t.call == 0 || kernels_[static_cast<std::size_t>(t.kernel - 1)].complete;
    case kRead: return mutant_ != Mutant::pcie_arrive_before_read || k.block_arrived[b] != 0;
    case kArrive:
      return mutant_ == Mutant::pcie_arrive_before_read || k.block_reads[b] == k.block_present[b];
    case kPoll:
      for (int slot : consumed_slots(t)) {
        const std::size_t at = consumed_offset(t, slot, t.half);
        for (int e = 0; e < config_.elems_per_vector; ++e)
          if (unwritten(word(t.rank, at + static_cast<std::size_t>(e)))) return false;
      }
      return true;
    case kSignal1: return k.block_pushed[b] == k.block_present[b];
    case kSignal2: return k.block_read_raw[b] == k.block_present[b];
    case kWait1: return barrier_reached(t, 0);
    case kWait2: return barrier_reached(t, 1);
    case kDone: return false;
    default: return true;
  }
}

void PcieModel::advance(Thread& t) {
  const std::vector<std::uint8_t> p = program(t);
  const auto at = std::find(p.begin(), p.end(), t.pc);
  t.pc = at + 1 < p.end() ? *(at + 1) : static_cast<std::uint8_t>(kDone);
  if (t.pc != kDone) return;
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  ++k.done;
  if (k.done == k.threads && k.in_flight == 0) k.complete = true;
}

void PcieModel::step(Thread& t) {
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  const std::size_t b = static_cast<std::size_t>(t.block);
  switch (t.pc) {
    case kWait: trace(who(t) + ": grid-dependency wait passed"); break;
    case kRead: step_read(t); break;
    case kArrive: step_arrive(t); break;
    case kPush: step_push(t); break;
    case kPoll: step_consume(t); break;
    case kReset: step_reset(t); break;
    case kPushGather: step_push_gather(t); break;
    case kSignal1: step_signal(t, 0); break;
    case kSignal2: step_signal(t, 1); break;
    case kWait1:
    case kWait2: trace(who(t) + ": passed the barrier"); break;
    case kReadRaw: step_read_raw(t); break;
    case kGeneration: {
      word(t.rank, gen_base_ + b) = static_cast<std::uint32_t>(t.half) + 1u;
      trace(fmt::format("{}: block generation {}", who(t), t.half + 1));
      break;
    }
    case kTrigger:
      if (++k.triggered == k.threads && t.call + 1 < static_cast<int>(calls_.size())) {
        kernels_[static_cast<std::size_t>(t.kernel + 1)].launched = true;
        trace(fmt::format("rank {}: call {} launched (every thread of call {} triggered)", t.rank,
                          t.call + 1, t.call));
      }
      break;
    default: break;
  }
  if (!violation_) advance(t);
}

void PcieModel::step_read(Thread& t) {
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  const int region = region_of(k.spec.kind);
  if (mutant_ == Mutant::pcie_no_double_buffer) {
    t.half = 0;
  } else if (mutant_ == Mutant::pcie_per_block_epoch) {
    t.half = static_cast<int>(
        word(t.rank, parity_base_ + static_cast<std::size_t>(region * config_.blocks + t.block)) &
        1u);
  } else {
    t.half = static_cast<int>(word(t.rank, epoch_offset(region)) & 1u);
  }
  ++k.block_reads[static_cast<std::size_t>(t.block)];
  trace(fmt::format("{}: reads {}: half {}", who(t),
                    mutant_ == Mutant::pcie_per_block_epoch
                        ? fmt::format("its block's parity for the {}", region_text(region))
                        : fmt::format("the {}'s epoch", region_text(region)),
                    t.half));
}

void PcieModel::step_arrive(const Thread& t) {
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  const int region = region_of(k.spec.kind);
  std::uint32_t& epoch = word(t.rank, epoch_offset(region));
  std::uint32_t& arrival = word(t.rank, arrival_offset(region));
  const std::uint32_t before = arrival;
  if (before == static_cast<std::uint32_t>(k.grid - 1)) {
    arrival = mutant_ == Mutant::counter_not_reset ? before + 1 : 0u;
    epoch ^= 1u;
    trace(fmt::format("{}: last arrival ({} of {}): flips the {}'s epoch to {}", who(t), before + 1,
                      k.grid, region_text(region), epoch & 1u));
  } else {
    arrival = before + 1;
    trace(fmt::format("{}: arrives ({} of {})", who(t), before + 1, k.grid));
  }
  if (mutant_ == Mutant::pcie_per_block_epoch)
    word(t.rank, parity_base_ + static_cast<std::size_t>(region * config_.blocks + t.block)) ^= 1u;
  k.block_arrived[static_cast<std::size_t>(t.block)] = 1;
}

void PcieModel::step_push(const Thread& t) {
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  const int e_count = config_.elems_per_vector;
  std::vector<std::uint32_t> v(static_cast<std::size_t>(e_count));
  if (k.spec.kind == CallKind::pcie_barrier) {
    // Barrier kernels: raw payload into half 0 of the block region of every rank.
    Thread& self = threads_[static_cast<std::size_t>(&t - threads_.data())];
    self.half = static_cast<int>(word(t.rank, gen_base_ + static_cast<std::size_t>(t.block)));
    for (int e = 0; e < e_count; ++e)
      v[static_cast<std::size_t>(e)] = input_value(t.call, t.rank, t.idx, e);
    for (int d = 0; d < config_.ranks; ++d)
      issue(t, d, scratch_offset(kBlockRegion, 0, t.rank, t.idx, k.spec.vectors), v, false);
    ++k.block_pushed[static_cast<std::size_t>(t.block)];
    trace(who(t) + ": pushes its raw input to every rank");
    return;
  }
  for (int e = 0; e < e_count; ++e)
    v[static_cast<std::size_t>(e)] = sanitised_input(t.call, t.rank, t.idx, e);
  const int region = region_of(k.spec.kind);
  const std::size_t at = scratch_offset(region, t.half, t.rank, t.idx, k.spec.vectors);
  if (is_rsag(k.spec.kind)) {
    issue(t, owner_of(t.idx), at, v, false);
    trace(fmt::format("{}: pushes its input to the owner, rank {}", who(t), owner_of(t.idx)));
  } else {
    for (int d = 0; d < config_.ranks; ++d) issue(t, d, at, v, false);
    trace(who(t) + ": pushes its input to every rank");
  }
  ++k.block_pushed[static_cast<std::size_t>(t.block)];
}

void PcieModel::step_consume(Thread& t) {
  const CallSpec& spec = kernel_of(t).spec;
  const bool gathered = is_rsag(spec.kind) && owner_of(t.idx) != t.rank;
  for (int slot : consumed_slots(t)) {
    const std::size_t at = consumed_offset(t, slot, t.half);
    for (int e = 0; e < config_.elems_per_vector; ++e) {
      const std::uint32_t got = word(t.rank, at + static_cast<std::size_t>(e));
      const std::uint32_t want =
          gathered ? reduced_tag(t.call, t.idx, e) : sanitised_input(t.call, slot, t.idx, e);
      if (got != want) {
        fail(ViolationKind::wrong_value,
             fmt::format("{} read the slot of rank {} (half {} of the {}) element {}: {}, "
                         "expected {}",
                         who(t), slot, t.half, region_text(region_of(spec.kind)), e,
                         pcie_value_text(got), pcie_value_text(want)));
        return;
      }
    }
  }
  trace(fmt::format("{}: polled {} slot(s) of half {}: all written, values right", who(t),
                    consumed_slots(t).size(), t.half));
}

void PcieModel::step_reset(const Thread& t) {
  // pcie-reset-other-half: the consumed slots stay, the other half's are reset.
  const int half = mutant_ == Mutant::pcie_reset_other_half ? t.half ^ 1 : t.half;
  const std::vector<std::uint32_t> zeros(static_cast<std::size_t>(config_.elems_per_vector), 0u);
  for (int slot : consumed_slots(t)) issue(t, t.rank, consumed_offset(t, slot, half), zeros, false);
  trace(fmt::format("{}: resets the slot(s) of half {} to +0", who(t), half));
}

void PcieModel::step_push_gather(const Thread& t) {
  const CallSpec& spec = kernel_of(t).spec;
  std::vector<std::uint32_t> v(static_cast<std::size_t>(config_.elems_per_vector));
  for (int e = 0; e < config_.elems_per_vector; ++e)
    v[static_cast<std::size_t>(e)] = reduced_tag(t.call, t.idx, e);
  for (int d = 0; d < config_.ranks; ++d)
    if (d != t.rank)
      issue(t, d, scratch_offset(region_of(spec.kind), t.half, t.rank, t.idx, spec.vectors), v,
            false);
  trace(who(t) + ": pushes the sum to the other ranks");
}

void PcieModel::step_signal(const Thread& t, int phase) {
  const std::uint32_t value =
      2u * static_cast<std::uint32_t>(t.half) + 1u + static_cast<std::uint32_t>(phase);
  for (int d = 0; d < config_.ranks; ++d)
    issue(t, d, barrier_offset(phase, t.block, t.rank), {value}, true);
  trace(fmt::format("{}: barrier {}: stores {} (release) into every rank's slot", who(t), phase + 1,
                    value));
}

void PcieModel::step_read_raw(const Thread& t) {
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  for (int r = 0; r < config_.ranks; ++r) {
    const std::size_t at = scratch_offset(kBlockRegion, 0, r, t.idx, k.spec.vectors);
    for (int e = 0; e < config_.elems_per_vector; ++e) {
      const std::uint32_t got = word(t.rank, at + static_cast<std::size_t>(e));
      const std::uint32_t want = input_value(t.call, r, t.idx, e);
      if (got != want) {
        fail(ViolationKind::wrong_value,
             fmt::format("{} read rank {}'s payload element {} after the barrier: {}, expected {}",
                         who(t), r, e, pcie_value_text(got), pcie_value_text(want)));
        return;
      }
    }
  }
  ++k.block_read_raw[static_cast<std::size_t>(t.block)];
  trace(who(t) + ": reads every rank's payload");
}

std::string PcieModel::awaited(const Thread& t) const {
  const Kernel& k = kernel_of(t);
  switch (t.pc) {
    case kWait: return fmt::format("waits for call {} of its rank to complete", t.call - 1);
    case kRead:
    case kArrive:
    case kSignal1:
    case kSignal2: return "waits at __syncthreads for the rest of its block";
    case kWait1:
    case kWait2:
      return fmt::format("waits at barrier {} for generation {}", t.pc == kWait1 ? 1 : 2,
                         t.half + 1);
    case kPoll:
      for (int slot : consumed_slots(t)) {
        const std::size_t at = consumed_offset(t, slot, t.half);
        for (int e = 0; e < config_.elems_per_vector; ++e) {
          const std::uint32_t bits = word(t.rank, at + static_cast<std::size_t>(e));
          if (unwritten(bits))
            return fmt::format("polls the slot of rank {} (half {} of the {}) element {}: {}", slot,
                               t.half, region_text(region_of(k.spec.kind)), e,
                               pcie_value_text(bits));
        }
      }
      return "polls";
    default: return "spins";
  }
}

void PcieModel::check_invariants() {
  int stagings[2] = {0, 0};
  std::vector<std::uint32_t> generations(static_cast<std::size_t>(config_.blocks), 0u);
  bool barrier_calls = false;
  for (const Kernel& k : kernels_) {
    if (&k - kernels_.data() >= static_cast<std::ptrdiff_t>(calls_.size())) break;  // rank 0's
    if (k.spec.kind == CallKind::pcie_barrier) {
      barrier_calls = true;
      for (int b = 0; b < k.grid; ++b) ++generations[static_cast<std::size_t>(b)];
    } else {
      ++stagings[region_of(k.spec.kind)];
    }
  }
  for (int r = 0; r < config_.ranks; ++r) {
    for (int region : {kBlockRegion, kPackRegion}) {
      const std::uint32_t epoch = word(r, epoch_offset(region)),
                          arrival = word(r, arrival_offset(region));
      const std::uint32_t want = static_cast<std::uint32_t>(stagings[region] % 2);
      if (epoch != want)
        return fail(ViolationKind::invariant,
                    fmt::format("invariant P1: rank {}: the {}'s epoch is {} after {} call(s) "
                                "staged there, expected {}",
                                r, region_text(region), epoch, stagings[region], want));
      if (arrival != 0u)
        return fail(ViolationKind::invariant,
                    fmt::format("invariant P2: rank {}: the {}'s arrival counter is {}, not 0", r,
                                region_text(region), arrival));
    }
    for (int region : {kBlockRegion, kPackRegion}) {
      if (region == kBlockRegion && barrier_calls) continue;  // barrier payload stays
      const std::size_t words = scratch_base_[kPackRegion] - scratch_base_[kBlockRegion];
      for (std::size_t i = 0; i < words; ++i)
        if (word(r, scratch_base_[region] + i) != 0u)
          return fail(ViolationKind::invariant,
                      fmt::format("invariant P3: rank {}: word {} of the {} is {}, not +0", r, i,
                                  region_text(region),
                                  pcie_value_text(word(r, scratch_base_[region] + i))));
    }
    for (int b = 0; b < config_.blocks; ++b) {
      const std::uint32_t gen = word(r, gen_base_ + static_cast<std::size_t>(b));
      if (gen != generations[static_cast<std::size_t>(b)])
        return fail(ViolationKind::invariant,
                    fmt::format("invariant P4: rank {}: block {}'s generation is {}, expected {}",
                                r, b, gen, generations[static_cast<std::size_t>(b)]));
      for (int phase = 0; phase < 2; ++phase)
        for (int p = 0; p < config_.ranks; ++p)
          if (word(r, barrier_offset(phase, b, p)) > 2u * gen)
            return fail(ViolationKind::invariant,
                        fmt::format("invariant P4: rank {}: barrier slot ({}, {}, {}) is ahead of "
                                    "generation {}",
                                    r, phase, b, p, gen));
    }
  }
}

}  // namespace fusioncheck::sim
