// The SGLang model's thread programs and steps (docs/protocols.md "SGLang push protocol"), after
// custom_all_reduce.cuh (all_reduce_1shot_push_kernel, all_reduce_2shot_push_kernel),
// all_reduce_fusion.cuh (moe_finalize_all_reduce_kernel) and communicator.cuh (PushEpoch,
// LamportTrait).
#include <fmt/core.h>

#include <algorithm>
#include <iterator>

#include "fusioncheck/sim/sglang_model.hpp"
#include "fusioncheck/sim/values.hpp"
#include "sglang_model_internal.hpp"

namespace fusioncheck::sim {

using namespace sglang;

namespace {
// In sglang::Pc's order.
constexpr const char* kStepNames[] = {
    "wait",       "epoch",       "push",   "scatter",      "cluster_arrive", "poll",
    "owner_poll", "gather_poll", "reduce", "owner_reduce", "gather",         "cluster_wait",
    "trigger",    "rearm",       "sync",   "flip",         "bumper_flip",    "done"};
static_assert(std::size(kStepNames) == kDone + 1);
}  // namespace

std::optional<StepSite> SglangModel::site_of(const Event& event) const {
  if (event.kind != EventKind::thread_step) return std::nullopt;
  const Thread& t = threads_[static_cast<std::size_t>(event.id)];
  return StepSite{t.rank, t.call, t.pc};
}

int SglangModel::step_codes() const { return kDone + 1; }

std::string SglangModel::step_name(int step) const {
  return step >= 0 && step < step_codes() ? kStepNames[step] : "?";
}

std::vector<std::uint8_t> SglangModel::program(const Thread& t) const {
  const CallSpec& spec = kernel_of(t).spec;
  std::vector<std::uint8_t> p;
  if (spec.kind == CallKind::sglang_fused) {
    if (t.idx < 0) {  // the bumper: its leader block flips the counters past the tokens
      p.push_back(kWait);
      if (t.cluster_rank == 0) p.insert(p.end(), {kEpoch, kBumperFlip});
      p.insert(p.end(), {kTrigger, kDone});
      return p;
    }
    const bool barrier = mutant_ != Mutant::sglang_no_cluster_barrier;
    if (mutant_ == Mutant::sglang_epoch_before_wait) p.insert(p.end(), {kEpoch, kWait});
    else p.insert(p.end(), {kWait, kEpoch});
    p.push_back(kPush);
    if (barrier) p.push_back(kClusterArrive);
    p.insert(p.end(), {kPoll, kReduce});
    if (barrier) p.push_back(kClusterWait);
    p.insert(p.end(), {kTrigger, kRearm});
    if (t.cluster_rank == 0) p.push_back(kFlip);
    p.push_back(kDone);
    return p;
  }
  p.insert(p.end(), {kWait, kEpoch});
  if (t.idx >= 0 && spec.kind == CallKind::sglang_push1) {
    p.insert(p.end(), {kPush, kPoll, kReduce, kRearm});
  } else if (t.idx >= 0) {
    if (t.idx / chunk_of(spec) == t.rank) p.insert(p.end(), {kOwnerPoll, kOwnerReduce, kRearm});
    else p.insert(p.end(), {kScatter, kGatherPoll, kGather, kRearm});
  }
  p.insert(p.end(), {kTrigger, kSync});
  if (t.tid == 0) p.push_back(kFlip);
  p.push_back(kDone);
  return p;
}

bool SglangModel::thread_enabled(const Thread& t) const {
  if (t.pc == kDone) return false;
  const Kernel& k = kernel_of(t);
  // The call before it on its stream (config_.streams: calls alternate over the streams).
  const Kernel* before = t.call >= config_.streams
                             ? &kernels_[static_cast<std::size_t>(t.kernel - config_.streams)]
                             : nullptr;
  if (!t.waited && t.pc != kWait)  // runs once PDL launched it: every thread triggered
    return before == nullptr || before->triggered == before->threads;
  switch (t.pc) {
    case kWait: return before == nullptr || before->complete;  // the previous kernel completed
    case kPoll:
    case kOwnerPoll:
    case kGatherPoll: return polled_arrived(t);
    case kSync:
      return k.synced[static_cast<std::size_t>(t.block)] ==
             k.block_threads[static_cast<std::size_t>(t.block)];
    case kClusterWait: return k.cluster_arrived[static_cast<std::size_t>(t.row)] == 2;
    default: return true;
  }
}

void SglangModel::advance(Thread& t) {
  const std::vector<std::uint8_t> p = program(t);
  const auto at = std::find(p.begin(), p.end(), t.pc);
  t.pc = at + 1 < p.end() ? *(at + 1) : static_cast<std::uint8_t>(kDone);
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  if (t.pc == kSync) ++k.synced[static_cast<std::size_t>(t.block)];
  if (t.pc != kDone) return;
  ++k.done;
  complete_if_done(t.kernel);
}

void SglangModel::step(Thread& t) {
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  switch (t.pc) {
    case kWait:
      t.waited = true;
      trace(who(t) + ": past its grid-dependency wait");
      break;
    case kEpoch: step_epoch(t); break;
    case kPush:
    case kScatter: step_push(t); break;
    case kClusterArrive:
      ++k.cluster_arrived[static_cast<std::size_t>(t.row)];
      trace(who(t) + ": arrived at the cluster barrier");
      break;
    case kPoll:
    case kOwnerPoll:
    case kGatherPoll: trace(who(t) + ": saw every awaited slot written"); break;
    case kReduce: step_reduce(t); break;
    case kOwnerReduce: step_owner_reduce(t); break;
    case kGather: step_gather(t); break;
    case kClusterWait: trace(who(t) + ": past the cluster barrier"); break;
    case kTrigger:
      ++k.triggered;
      trace(who(t) + ": triggers its dependents");
      break;
    case kRearm: step_rearm(t); break;
    case kSync: trace(who(t) + ": passed __syncthreads"); break;
    case kFlip:
    case kBumperFlip: step_flip(t); break;
    default: break;
  }
  if (!violation_) advance(t);
}

// The generic kernels' counter is their block's; the fused kernel's its token row's (the
// bumper reads the one at its own row, the token count).
int SglangModel::counter_of(const Thread& t) const {
  return kernel_of(t).spec.kind == CallKind::sglang_fused ? t.row : t.block;
}

void SglangModel::step_epoch(Thread& t) {
  t.epoch = counters_[static_cast<std::size_t>(t.rank)][static_cast<std::size_t>(counter_of(t))];
  t.phase = static_cast<int>(t.epoch & 1u);
  if (mutant_ == Mutant::sglang_one_phase) t.phase = 0;
  trace(who(t) +
        fmt::format(": phase counter {} holds {}: phase {}", counter_of(t), t.epoch, t.phase));
}

// LamportTrait::clear_pos_zero: a +0 payload word goes out as -0, so +0 means "empty".
std::uint32_t SglangModel::pushed(std::uint32_t value) const {
  return value == 0 && mutant_ != Mutant::sglang_no_remap ? kSentinel : value;
}

// One-shot: the vector to the rank's slot of every rank. Two-shot scatter: to the owner of
// its chunk, at the vector's place in the chunk.
void SglangModel::step_push(const Thread& t) {
  const CallSpec& spec = kernel_of(t).spec;
  std::vector<std::uint32_t> values;
  for (int e = 0; e < config_.elems_per_vector; ++e)
    values.push_back(pushed(input_value(t.call, t.rank, t.idx, e)));
  if (t.pc == kScatter) {
    const int owner = t.idx / chunk_of(spec);
    issue(t, owner, slot_offset(t.phase, t.rank, t.idx % chunk_of(spec)), std::move(values));
    trace(who(t) + fmt::format(": scatters vector {} to rank {}", t.idx, owner));
    return;
  }
  for (int dst = 0; dst < config_.ranks; ++dst)
    issue(t, dst, slot_offset(t.phase, t.rank, t.idx), values);
  trace(who(t) + fmt::format(": pushes vector {} to every rank, phase {}", t.idx, t.phase));
}

// What thread t reads of its rank's plane: its own store still in flight, else memory.
std::uint32_t SglangModel::read(const Thread& t, std::size_t offset) const {
  const int self = static_cast<int>(&t - threads_.data());
  for (auto it = in_flight_.pieces().rbegin(); it != in_flight_.pieces().rend(); ++it)
    if (it->thread == self && it->dst == t.rank && offset >= it->offset &&
        offset < it->offset + it->values.size())
      return it->values[offset - it->offset];
  return word(t.rank, offset);
}

// The poll: no +0 left in any word it awaits (LamportTrait::has_pos_zero over the vectors).
bool SglangModel::polled_arrived(const Thread& t) const {
  const CallSpec& spec = kernel_of(t).spec;
  const int chunk = spec.kind == CallKind::sglang_push2 ? chunk_of(spec) : 0;
  const auto arrived = [&](int src, int v) {
    for (int e = 0; e < config_.elems_per_vector; ++e)
      if (read(t, slot_offset(t.phase, src, v) + static_cast<std::size_t>(e)) == 0) return false;
    return true;
  };
  if (t.pc == kGatherPoll) return arrived(t.idx / chunk, chunk + t.idx % chunk);
  for (int src = 0; src < config_.ranks; ++src) {
    if (t.pc == kOwnerPoll && src == t.rank) continue;  // the owner's own partial is its input
    if (!arrived(src, t.pc == kOwnerPoll ? t.idx % chunk : t.idx)) return false;
  }
  return true;
}

std::string SglangModel::awaited(const Thread& t) const {
  if (is_poll(t.pc)) {
    const CallSpec& spec = kernel_of(t).spec;
    const int chunk = spec.kind == CallKind::sglang_push2 ? chunk_of(spec) : 0;
    for (int src = 0; src < config_.ranks; ++src) {
      if ((t.pc == kOwnerPoll && src == t.rank) ||
          (t.pc == kGatherPoll && src != t.idx / std::max(1, chunk)))
        continue;
      const int v = t.pc == kPoll        ? t.idx
                    : t.pc == kOwnerPoll ? t.idx % chunk
                                         : chunk + t.idx % chunk;
      for (int e = 0; e < config_.elems_per_vector; ++e) {
        const std::size_t offset = slot_offset(t.phase, src, v) + static_cast<std::size_t>(e);
        if (read(t, offset) == 0)
          return fmt::format("polls its {} (still +0, phase {})", describe_word(offset), t.phase);
      }
    }
  }
  if (t.pc == kWait) return "waits for its rank's previous kernel to complete";
  if (t.pc == kSync) return "waits at __syncthreads";
  if (t.pc == kClusterWait) return "waits at the cluster barrier";
  return "waits to be launched";
}

bool SglangModel::check_read(const Thread& t, const std::string& what, std::size_t offset,
                             std::uint32_t expected) {
  const std::uint32_t got = read(t, offset);
  if (got == expected) return true;
  fail(ViolationKind::wrong_value,
       fmt::format("{} read {} ({}): {} instead of {}", who(t), what, describe_word(offset),
                   got == 0 ? "+0 (empty)" : describe_value(got), describe_value(expected)));
  return false;
}

void SglangModel::output(const Thread& t, int idx) {
  ++kernels_[static_cast<std::size_t>(t.kernel)].outputs[static_cast<std::size_t>(idx)];
}

// One-shot: every rank's payload of the vector, summed; the output.
void SglangModel::step_reduce(const Thread& t) {
  for (int src = 0; src < config_.ranks; ++src)
    for (int e = 0; e < config_.elems_per_vector; ++e)
      if (!check_read(t, fmt::format("rank {}'s payload", src),
                      slot_offset(t.phase, src, t.idx) + static_cast<std::size_t>(e),
                      pushed(input_value(t.call, src, t.idx, e))))
        return;
  output(t, t.idx);
  trace(who(t) + fmt::format(": reduced vector {}", t.idx));
}

// Two-shot owner: the peers' partials and its own input, summed; the sum to every other rank.
void SglangModel::step_owner_reduce(const Thread& t) {
  const int chunk = chunk_of(kernel_of(t).spec);
  const int j = t.idx % chunk;
  std::vector<std::uint32_t> sum;
  for (int e = 0; e < config_.elems_per_vector; ++e) {
    for (int src = 0; src < config_.ranks; ++src)
      if (src != t.rank && !check_read(t, fmt::format("rank {}'s partial", src),
                                       slot_offset(t.phase, src, j) + static_cast<std::size_t>(e),
                                       pushed(input_value(t.call, src, t.idx, e))))
        return;
    sum.push_back(pushed(reduced_tag(t.call, t.idx, e)));
  }
  for (int dst = 0; dst < config_.ranks; ++dst)
    if (dst != t.rank) issue(t, dst, slot_offset(t.phase, t.rank, chunk + j), sum);
  output(t, t.idx);
  trace(who(t) + fmt::format(": reduced vector {}, pushes the sum to every other rank", t.idx));
}

// Two-shot, any rank but the owner: the owner's sum.
void SglangModel::step_gather(const Thread& t) {
  const int chunk = chunk_of(kernel_of(t).spec);
  const int owner = t.idx / chunk;
  for (int e = 0; e < config_.elems_per_vector; ++e)
    if (!check_read(
            t, fmt::format("rank {}'s sum", owner),
            slot_offset(t.phase, owner, chunk + t.idx % chunk) + static_cast<std::size_t>(e),
            pushed(reduced_tag(t.call, t.idx, e))))
      return;
  output(t, t.idx);
  trace(who(t) + fmt::format(": gathered the sum of vector {}", t.idx));
}

// The +0 markers back into every slot word the thread read (a store to its own memory).
void SglangModel::step_rearm(const Thread& t) {
  if (mutant_ == Mutant::sglang_no_rearm) return trace(who(t) + ": leaves its slots as they are");
  const CallSpec& spec = kernel_of(t).spec;
  const std::vector<std::uint32_t> zeros(static_cast<std::size_t>(config_.elems_per_vector), 0u);
  if (spec.kind == CallKind::sglang_push2) {
    const int chunk = chunk_of(spec);
    const int owner = t.idx / chunk;
    if (owner != t.rank) {
      issue(t, t.rank, slot_offset(t.phase, owner, chunk + t.idx % chunk), zeros);
    } else {
      for (int src = 0; src < config_.ranks; ++src)
        if (src != t.rank) issue(t, t.rank, slot_offset(t.phase, src, t.idx % chunk), zeros);
    }
  } else {
    for (int src = 0; src < config_.ranks; ++src)
      issue(t, t.rank, slot_offset(t.phase, src, t.idx), zeros);
  }
  trace(who(t) + fmt::format(": re-arms its slots of vector {}", t.idx));
}

// PushEpoch::flip sets the counter to the value it read XOR 1; the bumper sets every counter
// from its row on (unsafe_flip_range) from the one it read.
void SglangModel::step_flip(const Thread& t) {
  auto& counters = counters_[static_cast<std::size_t>(t.rank)];
  const std::uint32_t next = t.epoch ^ 1u;
  if (t.pc == kBumperFlip) {
    for (int c = t.row; c < config_.blocks; ++c) counters[static_cast<std::size_t>(c)] = next;
    return trace(who(t) + fmt::format(": sets phase counters {}..{} to {}", t.row,
                                      config_.blocks - 1, next));
  }
  counters[static_cast<std::size_t>(counter_of(t))] = next;
  trace(who(t) + fmt::format(": sets phase counter {} to {}", counter_of(t), next));
}

}  // namespace fusioncheck::sim
