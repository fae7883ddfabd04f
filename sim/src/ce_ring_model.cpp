// The model of the copy-engine ring: layout, the streams, stores in flight, the invariants
// C1-C2 and the scheduler's interface (ce_ring_model.hpp). What each call enqueues and how each
// operation steps: ce_ring_ops.cpp.
#include "fusioncheck/sim/ce_ring_model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

namespace fusioncheck::sim {

CeRingModel::CeRingModel(const SimConfig& config, const Profile& profile, Mutant mutant)
    : ThreadModel(config.ranks), config_(config), profile_(profile), mutant_(mutant) {
  require_model_input(config, profile, mutant, SimProtocol::ce_ring);
  calls_ = expanded_calls(config);
  words_per_piece_ = config.elems_per_vector;
  in_flight_ = StoreQueue(profile.link_order, std::max(1, profile.store_granularity_bytes / 4));
  // Per rank: the input and the output (ranks chunks x pieces), the landing slots (a slot per
  // ring step and piece), the monotonic flags (ring slots, then the two handshake slots) and
  // the binary flags of the stream-memop variant.
  const std::size_t chunk_words =
      static_cast<std::size_t>(kMaxPieces) * static_cast<std::size_t>(words_per_piece_);
  const std::size_t n = static_cast<std::size_t>(config.ranks);
  output_base_ = n * chunk_words;
  landing_base_ = 2 * n * chunk_words;
  flags_base_ = landing_base_ + 2 * (n - 1) * chunk_words;
  binary_base_ = flags_base_ + static_cast<std::size_t>(handshake_slot() + 2);
  words_ = binary_base_ + 2 * (n - 1) * kMaxPieces;
  reset();
}

std::size_t CeRingModel::input_offset(int chunk, int piece) const {
  return static_cast<std::size_t>((chunk * kMaxPieces + piece) * words_per_piece_);
}
std::size_t CeRingModel::output_offset(int chunk, int piece) const {
  return output_base_ + input_offset(chunk, piece);
}
std::size_t CeRingModel::landing_offset(int step, int piece) const {
  return landing_base_ + static_cast<std::size_t>((step * kMaxPieces + piece) * words_per_piece_);
}

void CeRingModel::reset() {
  const int n = config_.ranks;
  const auto slots = static_cast<std::size_t>(handshake_slot() + 2);
  memory_.assign(static_cast<std::size_t>(n), std::vector<std::uint32_t>(words_, 0u));
  send_counter_.assign(static_cast<std::size_t>(n), std::vector<std::int32_t>(slots, 0));
  wait_counter_ = send_counter_;
  streams_.assign(static_cast<std::size_t>(3 * n), Stream{});
  event_done_.clear();
  in_flight_.clear();
  for (int r = 0; r < n; ++r) {
    for (int w = 0; w < 3; ++w) {
      streams_[static_cast<std::size_t>(3 * r + w)].rank = r;
      streams_[static_cast<std::size_t>(3 * r + w)].which = w;
    }
    std::vector<int> last_record;  // per event name, the instance recorded last
    for (int c = 0; c < static_cast<int>(calls_.size()); ++c) enqueue_call(r, c, last_record);
  }
  std::size_t ops = 0;
  for (const Stream& s : streams_) ops += s.ops.size();
  start_run(ops);
}

int CeRingModel::actor_count() const {
  return static_cast<int>(streams_.size()) + config_.ranks * config_.ranks;
}

bool CeRingModel::all_done() const {
  return std::all_of(streams_.begin(), streams_.end(),
                     [](const Stream& s) { return s.pc == s.ops.size() && s.in_flight == 0; });
}

void CeRingModel::deliver(std::size_t index) {
  const PendingStore s = in_flight_.take(index);
  for (std::size_t i = 0; i < s.values.size(); ++i) word(s.dst, s.offset + i) = s.values[i];
  ++memory_events_;
  if (s.kernel >= 0) --streams_[static_cast<std::size_t>(s.kernel)].in_flight;  // a copy's word
  if (trace_)
    trace(fmt::format("deliver rank {} -> rank {}: word {} = {:#010x}", s.src, s.dst, s.offset,
                      s.values.front()));
}

std::string CeRingModel::who(const Stream& s) const {
  static constexpr const char* kNames[] = {"caller's stream", "copy stream", "flag stream"};
  return fmt::format("rank {} {}", s.rank, kNames[s.which]);
}

void CeRingModel::finish() {
  if (violation_) return;
  if (!all_done()) {
    std::string text = "no event enabled and not every stream finished:";
    int shown = 0;
    for (const Stream& s : streams_) {
      if (s.pc >= s.ops.size() || shown == 3) continue;
      text += " " + who(s) + " at " + describe_op(s.ops[s.pc]) + ";";
      ++shown;
    }
    fail(ViolationKind::deadlock, text);
    return;
  }
  check_invariants();
}

// C1 every monotonic flag holds the count its waiter consumed last, which is the count its
// publisher sent (ring slots from the previous rank, the handshake slot from the next); C2
// every binary flag is back at 0.
void CeRingModel::check_invariants() {
  const int n = config_.ranks;
  for (int r = 0; r < n; ++r)
    for (int slot = 0; slot <= handshake_slot(); ++slot) {
      const bool handshake = slot == handshake_slot();
      const int from = handshake ? (r + 1) % n : (r + n - 1) % n;
      const std::int32_t held = static_cast<std::int32_t>(word(r, flag_offset(slot)));
      const std::int32_t waited =
          wait_counter_[static_cast<std::size_t>(r)][static_cast<std::size_t>(slot)];
      const std::int32_t sent =
          send_counter_[static_cast<std::size_t>(from)][static_cast<std::size_t>(slot)];
      if (held != waited || sent != waited)
        return fail(ViolationKind::invariant,
                    fmt::format("invariant C1: rank {} {} slot {} holds {}, rank {} sent {}, "
                                "rank {} waited for {}",
                                r, handshake ? "handshake" : "ring flag", slot, held, from, sent, r,
                                waited));
    }
  for (int r = 0; r < n; ++r)
    for (int slot = 0; slot < 2 * (n - 1) * kMaxPieces; ++slot)
      if (const std::uint32_t v = word(r, binary_offset(slot)); v != 0)
        return fail(
            ViolationKind::invariant,
            fmt::format("invariant C2: rank {} binary flag {} holds {}, not 0", r, slot, v));
}

}  // namespace fusioncheck::sim
