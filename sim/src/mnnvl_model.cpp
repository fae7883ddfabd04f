// The MNNVL model: layout, launches, stores in flight, the events kept up to date, the
// invariants M1-M3 and the reports (mnnvl_model.hpp). Thread programs and steps:
// mnnvl_steps.cpp.
#include "fusioncheck/sim/mnnvl_model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "fusioncheck/sim/values.hpp"
#include "mnnvl_model_internal.hpp"

namespace fusioncheck::sim {

using namespace mnnvl;

MnnvlModel::MnnvlModel(const SimConfig& config, const Profile& profile, Mutant mutant)
    : config_(config), profile_(profile), mutant_(mutant) {
  require_model_input(config, profile, mutant, SimProtocol::mnnvl);
  calls_ = expanded_calls(config);
  // A buffer holds the largest call: the one-shot kernel's tokens x ranks slots in one stage,
  // or the two-shot kernel's two stages of round_up(tokens, ranks) slots.
  const int n = config.ranks;
  int slots = 2;
  for (const CallSpec& c : calls_)
    slots = std::max(slots, c.kind == CallKind::mnnvl_oneshot ? c.vectors * n
                                                              : 2 * ((c.vectors + n - 1) / n) * n);
  slots += slots % 2;  // two stages of whole slots
  buffer_vectors_ = slots * config.vectors_per_block;
  buffer_words_ =
      static_cast<std::size_t>(buffer_vectors_) * static_cast<std::size_t>(config.elems_per_vector);
  buffers_ = mutant == Mutant::mnnvl_two_buffers ? 2 : 3;
  build_programs();
  reset();
}

int MnnvlModel::stages_of(const CallSpec& spec) const {
  return spec.kind == CallKind::mnnvl_oneshot ? 1 : 2;
}

std::size_t MnnvlModel::word_offset(int buffer, int stage, int stages, int vector, int e) const {
  return static_cast<std::size_t>(buffer) * buffer_words_ +
         static_cast<std::size_t>(stage) * (buffer_words_ / static_cast<std::size_t>(stages)) +
         static_cast<std::size_t>(vector * config_.elems_per_vector + e);
}

void MnnvlModel::reset() {
  const int n = config_.ranks;
  const int calls = static_cast<int>(calls_.size());
  // The workspace as the host leaves it: every buffer -0, the flags at buffer 0 with nothing
  // to clear.
  memory_.assign(static_cast<std::size_t>(n),
                 std::vector<std::uint32_t>(buffer_words_ * 3, kSentinel));
  Flags start;
  start.dirty = static_cast<std::uint32_t>(buffers_ - 1);
  flags_.assign(static_cast<std::size_t>(n), start);
  pollers_.assign(static_cast<std::size_t>(n), {});
  kernels_.clear();
  threads_.clear();
  pieces_.clear();
  free_pieces_.clear();
  events_.clear();
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < calls; ++c) {
      Kernel k;
      k.spec = calls_[static_cast<std::size_t>(c)];
      k.first_thread = static_cast<int>(threads_.size());
      k.arrived.assign(static_cast<std::size_t>(k.spec.vectors), 0);
      for (int token = 0; token < k.spec.vectors; ++token)
        for (int v = 0; v < config_.vectors_per_block; ++v) {
          Thread t;
          t.kernel = kernel_index(r, c), t.rank = r, t.call = c, t.token = token, t.vec = v;
          const bool owner = token % n == r;
          const bool first = token == 0 && v == 0;
          t.program =
              (k.spec.kind == CallKind::mnnvl_twoshot ? 4 : 0) + (owner ? 2 : 0) + (first ? 1 : 0);
          threads_.push_back(t);
        }
      k.threads = static_cast<int>(threads_.size()) - k.first_thread;
      kernels_.push_back(std::move(k));
    }
  steps_ = memory_events_ = 0;
  violation_.reset();
  const auto ranks = static_cast<std::uint64_t>(n);
  step_bound_ = step_bound_override_ != 0
                    ? step_bound_override_
                    : 64 * static_cast<std::uint64_t>(threads_.size()) * (ranks + 8) * ranks;
  for (int r = 0; r < n; ++r) refresh_kernel(kernel_index(r, 0));
}

int MnnvlModel::actor_count() const {
  return static_cast<int>(threads_.size()) + config_.ranks * config_.ranks;
}

bool MnnvlModel::all_done() const {
  return std::all_of(kernels_.begin(), kernels_.end(), [](const Kernel& k) { return k.complete; });
}

void MnnvlModel::execute(Event event) {
  ++steps_;
  if (event.kind == EventKind::deliver) deliver(event.id);
  else step(event.id);
  if (!violation_ && steps_ > step_bound_)
    fail(ViolationKind::step_bound, fmt::format("more than {} steps", step_bound_));
}

// ---- the events, kept up to date ----

void MnnvlModel::add_event(Event event, int& position) {
  position = static_cast<int>(events_.size());
  events_.push_back(event);
}

// Swaps the last event into the hole: the list's order is a function of the history alone,
// so a schedule (indices into it) replays.
void MnnvlModel::remove_event(int& position) {
  const auto at = static_cast<std::size_t>(position);
  const Event moved = events_.back();
  events_[at] = moved;
  events_.pop_back();
  if (at < events_.size()) {
    if (moved.kind == EventKind::deliver)
      pieces_[static_cast<std::size_t>(moved.id)].event = position;
    else threads_[static_cast<std::size_t>(moved.id)].event = position;
  }
  position = -1;
}

void MnnvlModel::refresh(int id) {
  if (violation_) return;  // the list was emptied: nothing runs after a violation
  Thread& t = threads_[static_cast<std::size_t>(id)];
  const bool enabled = thread_enabled(t);
  if (enabled && t.event < 0) add_event({EventKind::thread_step, id, id}, t.event);
  else if (!enabled && t.event >= 0) remove_event(t.event);
}

void MnnvlModel::refresh_kernel(int kernel) {
  const Kernel& k = kernels_[static_cast<std::size_t>(kernel)];
  for (int i = 0; i < k.threads; ++i) refresh(k.first_thread + i);
}

// ---- memory ----

bool MnnvlModel::awaits(const Thread& t, std::size_t offset) const {
  if (offset < t.poll_base) return false;
  const std::size_t e = static_cast<std::size_t>(config_.elems_per_vector);
  const std::size_t rel = offset - t.poll_base;
  if (mutant_ == Mutant::mnnvl_sentinel_first_word && rel % e != 0) return false;
  const std::size_t vector = rel / e;
  const auto vpb = static_cast<std::size_t>(config_.vectors_per_block);
  const std::size_t slot = vector / vpb;
  return vector % vpb == static_cast<std::size_t>(t.vec) &&
         slot >= static_cast<std::size_t>(t.first_slot) &&
         slot < static_cast<std::size_t>(t.first_slot + t.group);
}

std::size_t MnnvlModel::poll_word(const Thread& t, int i, int k) const {
  return t.poll_base +
         static_cast<std::size_t>(((t.first_slot + i) * config_.vectors_per_block + t.vec) *
                                      config_.elems_per_vector +
                                  k);
}

// Every word a rank's memory takes goes through here: a poller of that rank counts the
// words it awaits that hold no sentinel, so its poll is enabled without a scan.
void MnnvlModel::write(int rank, std::size_t offset, std::uint32_t value) {
  std::uint32_t& w = memory_[static_cast<std::size_t>(rank)][offset];
  const bool was_data = w != kSentinel, is_data = value != kSentinel;
  w = value;
  ++memory_events_;
  if (was_data == is_data) return;
  for (int id : pollers_[static_cast<std::size_t>(rank)]) {
    Thread& t = threads_[static_cast<std::size_t>(id)];
    if (!awaits(t, offset)) continue;
    t.ready += is_data ? 1 : -1;
    refresh(id);
  }
}

// A store of one word to `dst`, in flight until delivered: one hop inside an NVLink domain,
// two into another one.
void MnnvlModel::store(const Thread& t, int dst, std::size_t offset, std::uint32_t value) {
  const int domain = profile_.domain_ranks;
  const auto hops =
      static_cast<std::uint8_t>(domain > 0 && t.rank / domain != dst / domain ? 2 : 1);
  int id;
  if (!free_pieces_.empty()) {
    id = free_pieces_.back();
    free_pieces_.pop_back();
  } else {
    id = static_cast<int>(pieces_.size());
    pieces_.emplace_back();
  }
  Piece& p = pieces_[static_cast<std::size_t>(id)];
  p = Piece{t.rank, dst, t.kernel, static_cast<std::uint32_t>(offset), value, hops, -1};
  const int link = static_cast<int>(threads_.size()) + t.rank * config_.ranks + dst;
  add_event({EventKind::deliver, id, link}, p.event);
}

// A store through the multicast object: the same word into every rank's memory, each copy on
// its way on its own. A vector leaves in words (NVLink's 4-byte granularity).
void MnnvlModel::multicast(const Thread& t, std::size_t offset, std::uint32_t value) {
  for (int dst = 0; dst < config_.ranks; ++dst) store(t, dst, offset, value);
}

void MnnvlModel::deliver(int id) {
  Piece& p = pieces_[static_cast<std::size_t>(id)];
  if (--p.hops > 0) {
    if (trace_)
      trace(fmt::format("rank {} -> rank {}: {} reaches the other domain", p.src, p.dst,
                        describe_word(p.offset)));
    return;
  }
  const Piece landed = p;
  remove_event(p.event);
  free_pieces_.push_back(id);
  if (trace_)
    trace(fmt::format("deliver rank {} -> rank {}: {} = {}", landed.src, landed.dst,
                      describe_word(landed.offset), describe(landed.value)));
  write(landed.dst, landed.offset, landed.value);
}

void MnnvlModel::complete_if_done(int kernel) {
  Kernel& k = kernels_[static_cast<std::size_t>(kernel)];
  if (k.complete || k.done != k.threads) return;
  k.complete = true;
  const int calls = static_cast<int>(calls_.size());
  if (kernel % calls + 1 < calls) refresh_kernel(kernel + 1);
}

// ---- reporting ----

void MnnvlModel::fail(ViolationKind kind, std::string text) {
  if (violation_) return;
  if (trace_) trace("VIOLATION (" + std::string(violation_kind_name(kind)) + "): " + text);
  violation_ = Violation{kind, std::move(text)};
  events_.clear();  // nothing runs after a violation
}

void MnnvlModel::trace(const std::string& line) {
  if (trace_) trace_->push_back(fmt::format("{:>5}  {}", steps_, line));
}

std::string MnnvlModel::who(const Thread& t) const {
  return fmt::format("rank {} call {} ({}) token {} vector {}", t.rank, t.call,
                     format_calls({calls_[static_cast<std::size_t>(t.call)]}), t.token, t.vec);
}

// "buffer 1 word 37"; the stage and slot depend on the layout of the call that reads it.
std::string MnnvlModel::describe_word(std::size_t offset) const {
  return fmt::format("buffer {} word {}", offset / buffer_words_, offset % buffer_words_);
}

std::string MnnvlModel::describe(std::uint32_t value) const {
  if (value == kSentinel) return "-0 (the sentinel)";
  if (value == 0) return "+0";
  const int token = static_cast<int>(value >> 10 & 0x3Fu),
            vec = static_cast<int>(value >> 4 & 0x3Fu);
  const int e = static_cast<int>(value & 3u);
  if (value & 0x40000000u)
    return fmt::format("call {} payload of rank {} token {} vector {}.{}", value >> 23 & 0x7Fu,
                       value >> 16 & 0x7Fu, token, vec, e);
  if (value & 0x20000000u)
    return fmt::format("call {} sum of token {} vector {}.{}", value >> 22 & 0x7Fu, token, vec, e);
  return fmt::format("{:#010x}", value);
}

std::string MnnvlModel::awaited(const Thread& t) const {
  if (pc(t) == kUpdate)
    return fmt::format("waits for {} block arrivals, rank {} counted {}",
                       kernels_[static_cast<std::size_t>(t.kernel)].spec.vectors, t.rank,
                       flags_[static_cast<std::size_t>(t.rank)].arrivals);
  if (pc(t) == kArrive) return "waits at the arrival barrier of its block";
  for (int i = 0; i < t.group; ++i)
    for (int k = 0; k < config_.elems_per_vector; ++k) {
      const std::size_t offset = poll_word(t, i, k);
      if (!awaits(t, offset) || word(t.rank, offset) != kSentinel) continue;
      const std::string from = pc(t) == kPollResult
                                   ? fmt::format("the sum from rank {}", t.token % config_.ranks)
                                   : fmt::format("rank {}'s payload", i);
      return fmt::format("polls {} in {} ({} of {} words hold data)", from, describe_word(offset),
                         t.ready, t.need);
    }
  return "polls";
}

void MnnvlModel::finish() {
  if (violation_) return;
  if (!all_done()) {
    std::string text = "no event enabled and not every kernel completed:";
    int shown = 0;
    for (const Thread& t : threads_) {
      if (pc(t) == kWait || pc(t) == kFlags || pc(t) == kDone || shown == 3) continue;
      text += " " + who(t) + " " + awaited(t) + ";";
      ++shown;
    }
    fail(ViolationKind::deadlock, text);
    return;
  }
  check_invariants();
}

// M1 every rank holds the same flags, its arrival counter back at 0; M2 every buffer but the
// dirty one holds only sentinels (ready for the next call); M3 the dirty buffer holds what
// the last call stored there, and sentinels elsewhere.
void MnnvlModel::check_invariants() {
  const int n = config_.ranks;
  const Flags& f0 = flags_[0];
  for (int r = 0; r < n; ++r) {
    const Flags& f = flags_[static_cast<std::size_t>(r)];
    if (f.arrivals != 0)
      return fail(ViolationKind::invariant,
                  fmt::format("invariant M1: rank {}'s arrival counter holds {}, expected 0", r,
                              f.arrivals));
    if (f.current != f0.current || f.dirty != f0.dirty || f.dirty_stages != f0.dirty_stages ||
        f.clear_vectors != f0.clear_vectors)
      return fail(ViolationKind::invariant,
                  fmt::format("invariant M1: rank {}'s flags (current {}, dirty {}) differ from "
                              "rank 0's (current {}, dirty {})",
                              r, f.current, f.dirty, f0.current, f0.dirty));
  }
  const int last = static_cast<int>(calls_.size()) - 1;
  const CallSpec& spec = calls_.back();
  const int stages = stages_of(spec);
  const int e = config_.elems_per_vector, vpb = config_.vectors_per_block;
  for (int r = 0; r < n; ++r) {
    // What the dirty buffer must hold: the last call's stores into rank r, sentinels elsewhere.
    std::vector<std::uint32_t> expect(buffer_words_, kSentinel);
    const auto put = [&](int stage, int slot, int v, int k, std::uint32_t value) {
      expect[word_offset(0, stage, stages, slot * vpb + v, k)] = sanitized(value);
    };
    for (int token = 0; token < spec.vectors; ++token)
      for (int v = 0; v < vpb; ++v)
        for (int k = 0; k < e; ++k) {
          if (stages == 1) {
            for (int src = 0; src < n; ++src)
              put(0, token * n + src, v, k, payload_value(last, n, src, token, v, k));
            continue;
          }
          if (token % n == r)
            for (int src = 0; src < n; ++src)
              put(0, token / n * n + src, v, k, payload_value(last, n, src, token, v, k));
          put(1, token, v, k, sum_value(last, token, v, k));
        }
    const std::uint32_t dirty = flags_[static_cast<std::size_t>(r)].dirty;
    for (std::uint32_t b = 0; b < static_cast<std::uint32_t>(buffers_); ++b)
      for (std::size_t w = 0; w < buffer_words_; ++w) {
        const std::uint32_t held = word(r, b * buffer_words_ + w);
        const std::uint32_t want = b == dirty ? expect[w] : kSentinel;
        if (held != want)
          return fail(ViolationKind::invariant,
                      fmt::format("invariant {}: rank {} {} holds {}, expected {}",
                                  b == dirty ? "M3" : "M2", r, describe_word(b * buffer_words_ + w),
                                  describe(held), describe(want)));
      }
  }
}

}  // namespace fusioncheck::sim
