// The MNNVL model's thread programs and steps (docs/protocols.md "MNNVL Lamport protocol"), after
// trtllm_mnnvl_allreduce.cuh: oneshotAllreduceFusionKernel, twoshotAllreduceKernel and
// LamportFlags (ctaArrive, clearDirtyLamportBuf, waitAndUpdate).
#include <fmt/core.h>

#include <algorithm>
#include <iterator>

#include "fusioncheck/sim/mnnvl_model.hpp"
#include "fusioncheck/sim/values.hpp"
#include "mnnvl_model_internal.hpp"

namespace fusioncheck::sim {

using namespace mnnvl;

namespace {
// In mnnvl::Pc's order.
constexpr const char* kStepNames[] = {
    "wait",  "flags",         "push",   "scatter",   "arrive",
    "clear", "clear_scatter", "reduce", "broadcast", "clear_broadcast",
    "poll",  "poll_result",   "update", "done"};
static_assert(std::size(kStepNames) == kDone + 1);
}  // namespace

std::optional<StepSite> MnnvlModel::site_of(const Event& event) const {
  if (event.kind != EventKind::thread_step) return std::nullopt;
  const Thread& t = threads_[static_cast<std::size_t>(event.id)];
  return StepSite{t.rank, t.call, pc(t)};
}

int MnnvlModel::step_codes() const { return kDone + 1; }

std::string MnnvlModel::step_name(int step) const {
  return step >= 0 && step < step_codes() ? kStepNames[step] : "?";
}

// Programs by (two-shot, owner of its token, the grid's first thread): index 4k + 2o + f.
void MnnvlModel::build_programs() {
  programs_.clear();
  const bool early_flags = mutant_ == Mutant::mnnvl_flags_before_wait;
  for (int index = 0; index < 8; ++index) {
    const bool two_shot = index >= 4, owner = (index & 2) != 0, first = (index & 1) != 0;
    std::vector<std::uint8_t> p;
    if (early_flags) p.insert(p.end(), {kFlags, kWait});
    else p.insert(p.end(), {kWait, kFlags});
    if (!two_shot) {
      p.insert(p.end(), {kPush, kArrive, kClear, kPoll});
    } else {
      p.insert(p.end(), {kScatter, kClearScatter});
      if (owner) p.insert(p.end(), {kReducePoll, kBroadcast});
      p.insert(p.end(), {kClearBroadcast, kArrive, kPollResult});
    }
    if (first) p.push_back(kUpdate);
    p.push_back(kDone);
    programs_.push_back(std::move(p));
  }
}

bool MnnvlModel::thread_enabled(const Thread& t) const {
  const Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  const int c = pc(t);
  switch (c) {
    case kDone: return false;
    case kWait:  // cudaGridDependencySynchronize: the rank's previous kernel completed
      return t.call == 0 || kernels_[static_cast<std::size_t>(t.kernel - 1)].complete;
    case kFlags:
      // Read before the wait, the kernel runs once PDL launched it: every thread of the
      // previous kernel passed its trigger.
      if (mutant_ != Mutant::mnnvl_flags_before_wait || t.call == 0) return true;
      {
        const Kernel& before = kernels_[static_cast<std::size_t>(t.kernel - 1)];
        return before.triggered == before.threads;
      }
    case kArrive: return k.arrived[static_cast<std::size_t>(t.token)] == config_.vectors_per_block;
    case kUpdate:
      return mutant_ == Mutant::mnnvl_no_arrival_wait ||
             flags_[static_cast<std::size_t>(t.rank)].arrivals >=
                 static_cast<std::uint32_t>(k.spec.vectors);
    default: return is_poll(c) ? t.ready == t.need : true;
  }
}

void MnnvlModel::advance(int id) {
  Thread& t = threads_[static_cast<std::size_t>(id)];
  Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  const int left = pc(t);
  // The PDL trigger: after the one-shot reduction, right after the two-shot scatter.
  if (left == kPoll || left == kScatter) {
    ++k.triggered;
    const int calls = static_cast<int>(calls_.size());
    if (k.triggered == k.threads && t.call + 1 < calls) refresh_kernel(t.kernel + 1);
  }
  if (is_poll(left)) {
    auto& list = pollers_[static_cast<std::size_t>(t.rank)];
    list.erase(std::find(list.begin(), list.end(), id));
  }
  ++t.ip;
  const int next = pc(t);
  if (next == kArrive &&
      ++k.arrived[static_cast<std::size_t>(t.token)] == config_.vectors_per_block)
    for (int i = 0; i < k.threads; ++i) {
      const Thread& other = threads_[static_cast<std::size_t>(k.first_thread + i)];
      if (other.token == t.token && i + k.first_thread != id) refresh(k.first_thread + i);
    }
  if (is_poll(next)) start_poll(t);
  refresh(id);
  if (next != kDone) return;
  ++k.done;
  complete_if_done(t.kernel);
}

void MnnvlModel::step(int id) {
  Thread& t = threads_[static_cast<std::size_t>(id)];
  switch (pc(t)) {
    case kWait: trace(who(t) + ": past its grid-dependency wait"); break;
    case kFlags: read_flags(t); break;
    case kPush: push(t, false); break;
    case kScatter: push(t, true); break;
    case kArrive: arrive(t); break;
    case kClear: clear_dirty(t, -1); break;
    case kClearScatter: clear_dirty(t, 0); break;
    case kClearBroadcast: clear_dirty(t, 1); break;
    case kReducePoll:
    case kPoll:
    case kPollResult: consume(t); break;
    case kBroadcast: broadcast(t); break;
    case kUpdate: update_flags(t); break;
    default: break;
  }
  if (!violation_) advance(id);
}

void MnnvlModel::read_flags(Thread& t) {
  t.seen = flags_[static_cast<std::size_t>(t.rank)];
  ++memory_events_;
  trace(who(t) + fmt::format(": reads the flags: current buffer {}, dirty buffer {}",
                             t.seen.current, t.seen.dirty));
}

std::uint32_t MnnvlModel::sanitized(std::uint32_t value) const {
  return value == kSentinel && mutant_ != Mutant::mnnvl_no_sanitize ? 0u : value;
}

// One-shot: the token's vector into slot token * ranks + rank of every rank's current buffer,
// through the multicast object. Two-shot: into the owner's scatter stage, slot
// (token / ranks) * ranks + rank.
void MnnvlModel::push(Thread& t, bool two_shot_scatter) {
  const int n = config_.ranks, vpb = config_.vectors_per_block;
  const int stages = two_shot_scatter ? 2 : 1;
  const int slot = two_shot_scatter ? t.token / n * n + t.rank : t.token * n + t.rank;
  for (int e = 0; e < config_.elems_per_vector; ++e) {
    const std::size_t offset =
        word_offset(static_cast<int>(t.seen.current), 0, stages, slot * vpb + t.vec, e);
    const std::uint32_t value = sanitized(payload_value(t.call, n, t.rank, t.token, t.vec, e));
    if (two_shot_scatter) store(t, t.token % n, offset, value);
    else multicast(t, offset, value);
  }
  trace(who(t) + (two_shot_scatter
                      ? fmt::format(": stores its payload to rank {} (buffer {})", t.token % n,
                                    t.seen.current)
                      : fmt::format(": multicasts its payload (buffer {})", t.seen.current)));
}

// The owner's sum, through the multicast object into every rank's broadcast stage.
void MnnvlModel::broadcast(Thread& t) {
  const int vpb = config_.vectors_per_block;
  for (int e = 0; e < config_.elems_per_vector; ++e)
    multicast(t, word_offset(static_cast<int>(t.seen.current), 1, 2, t.token * vpb + t.vec, e),
              sanitized(sum_value(t.call, t.token, t.vec, e)));
  trace(who(t) + fmt::format(": multicasts the sum of token {}", t.token));
}

// After the block's barrier, its first thread adds one to the rank's arrival counter.
void MnnvlModel::arrive(Thread& t) {
  if (t.vec != 0) return;
  Flags& f = flags_[static_cast<std::size_t>(t.rank)];
  ++f.arrivals;
  ++memory_events_;
  trace(who(t) + fmt::format(": block arrives ({} of {})", f.arrivals,
                             kernels_[static_cast<std::size_t>(t.kernel)].spec.vectors));
  const Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  refresh(k.first_thread);  // the grid's first thread may be waiting in update
}

// clearDirtyLamportBuf: the grid's threads, rasterised, write -0 over the dirty buffer's
// stage `stage` (-1: every stage it has) with the sizes the flags carry.
void MnnvlModel::clear_dirty(Thread& t, int stage) {
  const Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  const int vpb = config_.vectors_per_block, n = config_.ranks;
  int stages = static_cast<int>(t.seen.dirty_stages);
  std::array<std::uint32_t, 2> sizes = t.seen.clear_vectors;
  int buffer = static_cast<int>(t.seen.dirty);
  if (mutant_ == Mutant::mnnvl_clear_size_current) {
    stages = stages_of(k.spec);
    const auto tokens = static_cast<std::uint32_t>(k.spec.vectors);
    const auto rounded = static_cast<std::uint32_t>((k.spec.vectors + n - 1) / n * n);
    sizes = stages == 1 ? std::array<std::uint32_t, 2>{tokens * n * vpb, 0}
                        : std::array<std::uint32_t, 2>{rounded * vpb, tokens * vpb};
  }
  if (mutant_ == Mutant::mnnvl_clear_current) buffer = static_cast<int>(t.seen.current);
  const int first = stage < 0 ? 0 : stage;
  const int end = stage < 0 ? stages : std::min(stage + 1, stages);
  const int me = t.token * vpb + t.vec, threads = k.spec.vectors * vpb;
  int cleared = 0;
  for (int s = first; s < end; ++s)
    for (int v = me; v < static_cast<int>(sizes[static_cast<std::size_t>(s)]); v += threads)
      for (int e = 0; e < config_.elems_per_vector; ++e) {
        const std::size_t offset = word_offset(buffer, s, stages, v, e);
        if (mutant_ == Mutant::mnnvl_clear_through_multicast) multicast(t, offset, kSentinel);
        else write(t.rank, offset, kSentinel);
        ++cleared;
      }
  if (cleared > 0)
    trace(who(t) + fmt::format(": clears {} words of buffer {}{}", cleared, buffer,
                               mutant_ == Mutant::mnnvl_clear_through_multicast
                                   ? " on every rank (multicast)"
                                   : ""));
}

// Enters a poll: which words it awaits, and how many hold data already.
void MnnvlModel::start_poll(Thread& t) {
  const int n = config_.ranks, c = pc(t);
  const int current = static_cast<int>(t.seen.current);
  if (c == kPoll) {
    t.poll_base = word_offset(current, 0, 1, 0, 0);
    t.first_slot = t.token * n, t.group = n;
  } else if (c == kReducePoll) {
    t.poll_base = word_offset(current, 0, 2, 0, 0);
    t.first_slot = t.token / n * n, t.group = n;
  } else {
    t.poll_base = word_offset(current, 1, 2, 0, 0);
    t.first_slot = t.token, t.group = 1;
  }
  const int words = mutant_ == Mutant::mnnvl_sentinel_first_word ? 1 : config_.elems_per_vector;
  t.need = t.group * words;
  t.ready = 0;
  for (int i = 0; i < t.group; ++i)
    for (int k = 0; k < words; ++k) t.ready += word(t.rank, poll_word(t, i, k)) != kSentinel;
  pollers_[static_cast<std::size_t>(t.rank)].push_back(static_cast<int>(&t - threads_.data()));
}

std::uint32_t MnnvlModel::expected(const Thread& t, int i, int e) const {
  if (pc(t) == kPollResult) return sanitized(sum_value(t.call, t.token, t.vec, e));
  return sanitized(payload_value(t.call, config_.ranks, i, t.token, t.vec, e));
}

// The poll saw no sentinel: the thread reads every word it polled (slot i holds rank i's
// payload, or the sum) and reduces in a fixed rank order.
void MnnvlModel::consume(Thread& t) {
  for (int i = 0; i < t.group; ++i)
    for (int k = 0; k < config_.elems_per_vector; ++k) {
      const std::size_t offset = poll_word(t, i, k);
      const std::uint32_t got = word(t.rank, offset), want = expected(t, i, k);
      ++memory_events_;
      if (got == want) continue;
      return fail(ViolationKind::wrong_value,
                  fmt::format("{} read {} in {}: {} instead of {}", who(t),
                              pc(t) == kPollResult
                                  ? fmt::format("the sum from rank {}", t.token % config_.ranks)
                                  : fmt::format("rank {}'s payload", i),
                              describe_word(offset), describe(got), describe(want)));
    }
  trace(who(t) + (pc(t) == kPoll         ? ": read every rank's payload"
                  : pc(t) == kReducePoll ? ": read every rank's payload of its token"
                                         : ": read the sum"));
}

// waitAndUpdate: current becomes dirty, the next buffer current, the sizes of this call the
// ones to clear, the counter 0.
void MnnvlModel::update_flags(Thread& t) {
  const Kernel& k = kernels_[static_cast<std::size_t>(t.kernel)];
  const auto n = static_cast<std::uint32_t>(config_.ranks);
  const auto vpb = static_cast<std::uint32_t>(config_.vectors_per_block);
  const auto tokens = static_cast<std::uint32_t>(k.spec.vectors);
  Flags& f = flags_[static_cast<std::size_t>(t.rank)];
  f.current = (t.seen.current + 1) % static_cast<std::uint32_t>(buffers_);
  f.dirty = t.seen.current;
  f.dirty_stages = static_cast<std::uint32_t>(stages_of(k.spec));
  f.clear_vectors = f.dirty_stages == 1 ? std::array<std::uint32_t, 2>{tokens * n * vpb, 0}
                                        : std::array<std::uint32_t, 2>{
                                              (tokens + n - 1) / n * n * vpb, tokens * vpb};
  f.arrivals = 0;
  memory_events_ += 3;
  trace(who(t) +
        fmt::format(": rotates the flags: current buffer {}, dirty buffer {}", f.current, f.dirty));
}

}  // namespace fusioncheck::sim
