// The vLLM model's thread programs and steps (docs/protocols.md "vLLM barrier protocol"), after
// vllm_custom_all_reduce.cuh: multi_gpu_barrier, cross_device_reduce_1stage / _2stage.
#include <fmt/core.h>

#include <algorithm>
#include <iterator>

#include "fusioncheck/sim/values.hpp"
#include "fusioncheck/sim/vllm_model.hpp"
#include "vllm_model_internal.hpp"

namespace fusioncheck::sim {

using namespace vllm;

namespace {
// In vllm::Pc's order.
constexpr const char* kStepNames[] = {"wait",        "start_count", "start_poll",    "sync1",
                                      "reduce",      "scatter",     "sync2",         "end_count",
                                      "end_poll",    "mid_count",   "mid_poll",      "sync3",
                                      "gather",      "start_read",  "start_publish", "end_read",
                                      "end_publish", "mid_read",    "mid_publish",   "done"};
static_assert(std::size(kStepNames) == kDone + 1);
}  // namespace

std::optional<StepSite> VllmModel::site_of(const Event& event) const {
  if (event.kind != EventKind::thread_step) return std::nullopt;
  const Thread& t = threads_[static_cast<std::size_t>(event.id)];
  return StepSite{t.rank, t.call, t.pc};
}

int VllmModel::step_codes() const { return kDone + 1; }

std::string VllmModel::step_name(int step) const {
  return step >= 0 && step < step_codes() ? kStepNames[step] : "?";
}

// The start barrier has no fence; the two-stage middle barrier stores with st.release (the
// loads are ld.acquire); the one-stage end barrier is volatile.
bool VllmModel::fenced(int pc) const { return pc == kMidCount && mutant_ != Mutant::vllm_no_fence; }

// Two alternating sets: a peer at the next barrier writes the other set. With the start-end
// barrier, set 0 is the start array (the odd flags: a call's start barrier), set 1 the end one.
int VllmModel::counter_set(std::uint32_t count) const {
  if (mutant_ == Mutant::vllm_one_counter_set) return 0;
  return start_end() ? static_cast<int>(1 - count % 2) : static_cast<int>(count % 2);
}

std::vector<std::uint8_t> VllmModel::program(const Thread& t) const {
  const bool lane = t.lane >= 0;
  if (start_end()) return start_end_program(t);
  std::vector<std::uint8_t> p{kWait};
  if (lane) p.insert(p.end(), {kStartCount, kStartPoll});
  p.push_back(kSync1);
  if (kernel_of(t).spec.kind == CallKind::vllm_1stage) {
    if (!lane) p.push_back(kReduce);
    if (mutant_ != Mutant::vllm_no_end_barrier) {
      p.push_back(kSync2);
      if (lane) p.insert(p.end(), {kEndCount, kEndPoll});
    }
  } else {
    if (!lane) p.push_back(kScatter);
    p.push_back(kSync2);
    if (lane) p.insert(p.end(), {kMidCount, kMidPoll});
    p.push_back(kSync3);
    if (!lane) p.push_back(kGather);
  }
  p.push_back(kDone);
  return p;
}

// vLLM's own header: barrier_at_start reads the flag, stores and polls, __syncthreads, then
// thread 0 publishes; barrier_at_end<final> runs __syncthreads first and, final (the one-stage
// end), publishes right after its poll with no __syncthreads between.
std::vector<std::uint8_t> VllmModel::start_end_program(const Thread& t) const {
  const bool lane = t.lane >= 0;
  const bool thread0 = t.lane == 0;
  std::vector<std::uint8_t> p{kWait};
  if (lane) p.insert(p.end(), {kStartRead, kStartCount, kStartPoll});
  p.push_back(kSync1);
  if (thread0) p.push_back(kStartPublish);
  if (kernel_of(t).spec.kind == CallKind::vllm_1stage) {
    if (!lane) p.push_back(kReduce);
    if (mutant_ != Mutant::vllm_no_end_barrier) {
      p.push_back(kSync2);
      if (lane) p.insert(p.end(), {kEndRead, kEndCount, kEndPoll});
      if (thread0) p.push_back(kEndPublish);
    }
  } else {
    if (!lane) p.push_back(kScatter);
    p.push_back(kSync2);
    if (lane) p.insert(p.end(), {kMidRead, kMidCount, kMidPoll});
    p.push_back(kSync3);
    if (thread0) p.push_back(kMidPublish);
    if (!lane) p.push_back(kGather);
  }
  p.push_back(kDone);
  return p;
}

bool VllmModel::thread_enabled(const Thread& t) const {
  const Kernel& k = kernel_of(t);
  if (t.pc == kDone) return false;
  if (t.pc == kWait)
    return t.call == 0 || kernels_[static_cast<std::size_t>(t.kernel - 1)].complete;
  if (is_poll(t.pc)) return word(t.rank, counter_offset(t.set, t.block, t.lane)) == t.awaited;
  if (const int s = sync_index(t.pc); s >= 0) {
    const auto b = static_cast<std::size_t>(t.block);
    return k.synced[b][static_cast<std::size_t>(s)] == k.block_threads[b];
  }
  return true;
}

void VllmModel::advance(Thread& t) {
  const std::vector<std::uint8_t> p = program(t);
  const auto at = std::find(p.begin(), p.end(), t.pc);
  t.pc = at + 1 < p.end() ? *(at + 1) : static_cast<std::uint8_t>(kDone);
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  if (const int s = sync_index(t.pc); s >= 0)
    ++k.synced[static_cast<std::size_t>(t.block)][static_cast<std::size_t>(s)];
  if (t.pc != kDone) return;
  ++k.done;
  complete_if_done(t.kernel);
}

void VllmModel::step(Thread& t) {
  switch (t.pc) {
    case kWait: trace(who(t) + ": starts"); break;
    case kStartCount:
    case kEndCount:
    case kMidCount: step_count(t); break;
    case kStartPoll:
    case kEndPoll:
    case kMidPoll:
      trace(who(t) + fmt::format(": saw count {} from rank {}", t.awaited, t.lane));
      break;
    case kStartRead:
    case kEndRead:
    case kMidRead: step_read_flag(t); break;
    case kStartPublish:
    case kEndPublish:
    case kMidPublish: step_publish(t); break;
    case kReduce: step_reduce(t); break;
    case kScatter: step_scatter(t); break;
    case kGather: step_gather(t); break;
    default: trace(who(t) + fmt::format(": passed __syncthreads {}", sync_index(t.pc) + 1)); break;
  }
  if (!violation_) advance(t);
}

// The block's flag + 1, the count this lane's barrier stores and awaits: read by each lane at
// its own step (independent lanes), or once for the block's lanes, as warp 0 loads it.
void VllmModel::step_read_flag(Thread& t) {
  const std::uint32_t flag =
      block_flag_[static_cast<std::size_t>(t.rank)][static_cast<std::size_t>(t.block)];
  std::uint32_t seen = flag;
  if (!config_.independent_lanes) {
    auto& slot = flag_seen_[static_cast<std::size_t>(t.kernel)]
                           [static_cast<std::size_t>(t.block * 2 + (t.pc == kStartRead ? 0 : 1))];
    if (!slot) slot = flag;
    seen = *slot;
  }
  t.awaited = seen + 1;
  trace(who(t) + fmt::format(": reads the block's flag: {}", seen));
}

// Thread 0 publishes the flag its barrier used.
void VllmModel::step_publish(const Thread& t) {
  block_flag_[static_cast<std::size_t>(t.rank)][static_cast<std::size_t>(t.block)] = t.awaited;
  trace(who(t) + fmt::format(": publishes the block's flag {}", t.awaited));
}

// self_counter += 1 (start-end: the flag read), then the count into peer `lane`'s counter of
// this rank, in its set (start-end: the start or the end array).
void VllmModel::step_count(Thread& t) {
  const int n = config_.ranks;
  std::uint32_t& own =
      own_count_[static_cast<std::size_t>(t.rank)][static_cast<std::size_t>(t.block * n + t.lane)];
  if (start_end()) {
    own = t.awaited;
    t.set = mutant_ == Mutant::vllm_one_counter_set || t.pc == kStartCount ? 0 : 1;
  } else {
    t.awaited = ++own;
    t.set = counter_set(t.awaited);
  }
  issue(t, t.lane, counter_offset(t.set, t.block, t.rank), {t.awaited}, fenced(t.pc));
  trace(who(t) + fmt::format(": count {} -> rank {}{}", t.awaited, t.lane,
                             fenced(t.pc) ? " (release)" : ""));
}

// What thread t reads at (rank, offset): its own store still in flight, else memory.
std::uint32_t VllmModel::read(const Thread& t, int rank, std::size_t offset) const {
  const int self = static_cast<int>(&t - threads_.data());
  for (auto it = in_flight_.pieces().rbegin(); it != in_flight_.pieces().rend(); ++it)
    if (it->thread == self && it->dst == rank && offset >= it->offset &&
        offset < it->offset + it->values.size())
      return it->values[offset - it->offset];
  return word(rank, offset);
}

bool VllmModel::check_read(const Thread& t, const char* what, int src, std::size_t offset,
                           std::uint32_t expected) {
  const std::uint32_t got = read(t, src, offset);
  if (got == expected) return true;
  fail(ViolationKind::wrong_value,
       fmt::format("{} read rank {}'s {}: {} instead of {}", who(t), src, what, describe_value(got),
                   describe_value(expected)));
  return false;
}

// One stage: every rank's input of the thread's vector, summed in rank order.
void VllmModel::step_reduce(const Thread& t) {
  const int idx = t.slot;
  if (idx >= kernel_of(t).spec.vectors) return;
  for (int src = 0; src < config_.ranks; ++src)
    for (int e = 0; e < config_.elems_per_vector; ++e)
      if (!check_read(t, fmt::format("input vector {}", idx).c_str(), src,
                      input_offset(idx) + static_cast<std::size_t>(e),
                      data_tag(t.call, src, idx, e)))
        return;
  trace(who(t) + fmt::format(": reduced vector {}", idx));
}

// Two stages, first: the sum of the rank's part into its temporary buffer (a store of its
// own memory, which its peers read after the middle barrier).
void VllmModel::step_scatter(const Thread& t) {
  const int vectors = kernel_of(t).spec.vectors;
  const int start = part_start(t.rank, vectors);
  const int idx = start + t.slot;
  if (idx >= part_end(t.rank, vectors)) return;
  std::vector<std::uint32_t> sum;
  for (int e = 0; e < config_.elems_per_vector; ++e) {
    for (int src = 0; src < config_.ranks; ++src)
      if (!check_read(t, fmt::format("input vector {}", idx).c_str(), src,
                      input_offset(idx) + static_cast<std::size_t>(e),
                      data_tag(t.call, src, idx, e)))
        return;
    sum.push_back(reduced_tag(t.call, idx, e));
  }
  issue(t, t.rank, tmp_offset(t.slot), std::move(sum), false);
  trace(who(t) +
        fmt::format(": stored the sum of vector {} in its temporary vector {}", idx, t.slot));
}

// Two stages, second: vector `slot` of every rank's part from that rank's temporary buffer.
void VllmModel::step_gather(const Thread& t) {
  const int n = config_.ranks;
  const int vectors = kernel_of(t).spec.vectors;
  const int part = vectors / n;
  if (t.slot >= part + vectors % n) return;
  for (int i = 0; i < n; ++i) {
    const int from = (t.rank + i) % n;
    if (from != n - 1 && t.slot >= part) continue;
    const int idx = from * part + t.slot;
    for (int e = 0; e < config_.elems_per_vector; ++e)
      if (!check_read(t, fmt::format("temporary vector {}", t.slot).c_str(), from,
                      tmp_offset(t.slot) + static_cast<std::size_t>(e),
                      reduced_tag(t.call, idx, e)))
        return;
  }
  trace(who(t) + fmt::format(": gathered vector {} of every part", t.slot));
}

}  // namespace fusioncheck::sim
