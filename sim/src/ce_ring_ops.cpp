// What one call of the copy-engine ring enqueues on each rank's three streams, after
// ce_ring_all_reduce_flat in pcie_ipc_ce_ring.cuh, and how each operation steps.
#include <fmt/core.h>

#include <iterator>

#include "fusioncheck/sim/ce_ring_model.hpp"

namespace fusioncheck::sim {

namespace {
// A word's value: (call, chunk, piece, element) and the ranks summed into it. 0: never written.
constexpr std::uint32_t tag(int call, int chunk, int piece, int e, std::uint32_t mask) {
  return (static_cast<std::uint32_t>(call) & 0xFFu) << 24 |
         (static_cast<std::uint32_t>(chunk) & 0xFu) << 20 |
         (static_cast<std::uint32_t>(piece) & 3u) << 18 |
         (static_cast<std::uint32_t>(e) & 3u) << 16 | (mask & 0xFFFFu);
}
std::string describe_tag(std::uint32_t v) {
  if (v == 0) return "never written";
  return fmt::format("call {} chunk {} piece {}.{} summing ranks {:#x}", v >> 24, (v >> 20) & 0xFu,
                     (v >> 18) & 3u, (v >> 16) & 3u, v & 0xFFFFu);
}
// Event names of a rank (their instances change with every record).
enum EventName { kInputReady, kCopyDone, kFlagDone, kAddDone, kCopied = kAddDone + 4 };
constexpr int mod(int a, int n) { return ((a % n) + n) % n; }
constexpr const char* kOpNames[] = {"produce", "record",    "wait_event",   "copy",
                                    "publish", "wait_flag", "binary_write", "binary_wait",
                                    "add",     "end_check"};
}  // namespace

int CeRingModel::step_codes() const { return static_cast<int>(std::size(kOpNames)); }
std::string CeRingModel::step_name(int step) const {
  return step >= 0 && step < step_codes() ? kOpNames[step] : "?";
}

std::optional<StepSite> CeRingModel::site_of(const Event& event) const {
  if (event.kind != EventKind::thread_step) return std::nullopt;
  const Stream& s = streams_[static_cast<std::size_t>(event.id)];
  const Op& op = s.ops[s.pc];
  return StepSite{s.rank, op.call, static_cast<int>(op.kind)};
}

// ce_pick_pieces is a pure function of the shape: every rank takes the call's count, except
// under the mutant in which rank 0 derives another one.
int CeRingModel::pieces_of(int rank, const CallSpec& spec) const {
  if (mutant_ == Mutant::ce_pieces_differ && rank == 0)
    return spec.vectors == 1 ? 2 : spec.vectors - 1;
  return spec.vectors;
}

void CeRingModel::enqueue_call(int rank, int call, std::vector<int>& last_record) {
  const int n = config_.ranks;
  const CallSpec& spec = calls_[static_cast<std::size_t>(call)];
  const int pieces = pieces_of(rank, spec);
  // The stream-memop ring runs with one piece; with more it falls back to the event ring.
  const bool memop = spec.kind == CallKind::ce_memop && pieces == 1;
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  Stream& main = streams_[static_cast<std::size_t>(3 * rank)];
  Stream& copy = streams_[static_cast<std::size_t>(3 * rank + 1)];
  Stream& flag = streams_[static_cast<std::size_t>(3 * rank + 2)];
  if (last_record.empty()) last_record.assign(kCopied + 2 * (n - 1) * kMaxPieces, -1);
  const auto record = [&](Stream& s, int name) {
    last_record[static_cast<std::size_t>(name)] = static_cast<int>(event_done_.size());
    event_done_.push_back(0);
    s.ops.push_back({OpKind::record, call, last_record[static_cast<std::size_t>(name)]});
  };
  const auto wait = [&](Stream& s, int name) {
    s.ops.push_back({OpKind::wait_event, call, last_record[static_cast<std::size_t>(name)]});
  };
  main.ops.push_back({OpKind::produce, call});
  record(main, kInputReady);  // the fork
  if (mutant_ != Mutant::ce_no_fork) {
    wait(copy, kInputReady);
    if (!memop) wait(flag, kInputReady);
  }
  const int steps = 2 * (n - 1);
  for (int k = 0; k < steps; ++k) {
    const bool reduce = k < n - 1;
    const int kk = k - (n - 1);
    const int send_c = reduce ? mod(rank - k, n) : mod(rank + 1 - kk, n);
    const int recv_c = reduce ? mod(rank - k - 1, n) : mod(rank - kk, n);
    // The ranks summed into what lands: the k + 1 ranks before this one, or all of them.
    std::uint32_t landed_mask = 0;
    for (int i = 1; i <= (reduce ? k + 1 : n); ++i) landed_mask |= 1u << mod(rank - i, n);
    for (int p = 0; p < pieces; ++p) {
      const int slot = k * pieces + p;
      if (k > 0 && mutant_ != Mutant::ce_copy_before_add) wait(copy, kAddDone + p);
      Op c{OpKind::copy, call};
      c.peer = next;
      c.slot = slot;
      c.src = k == 0 ? input_offset(send_c, p) : output_offset(send_c, p);
      c.dst = landing_offset(k, p);
      c.words = words_per_piece_;
      c.chunk = send_c;
      c.piece = p;
      Op publish{OpKind::publish, call};
      publish.peer = next;
      publish.slot = slot;
      if (memop) {
        Op write{OpKind::binary_write, call};
        write.peer = next;
        write.slot = slot;
        // The write follows the copy on the copy stream, which fences it.
        if (mutant_ == Mutant::ce_publish_before_copy) copy.ops.insert(copy.ops.end(), {write, c});
        else copy.ops.insert(copy.ops.end(), {c, write});
        Op w{OpKind::binary_wait, call};
        w.slot = slot;
        main.ops.push_back(w);
      } else {
        copy.ops.push_back(c);
        record(copy, kCopied + slot);
        if (mutant_ != Mutant::ce_publish_before_copy) wait(flag, kCopied + slot);
        flag.ops.push_back(publish);
        Op w{OpKind::wait_flag, call};
        w.slot = slot;
        main.ops.push_back(w);
      }
      Op add{OpKind::add, call};  // reduce: out = input + landed; all-gather: out = landed
      add.src = landing_offset(k, p);
      add.dst = output_offset(recv_c, p);
      add.chunk = recv_c;
      add.piece = p;
      add.mask = landed_mask;
      add.slot = reduce ? 1 : 0;
      main.ops.push_back(add);
      record(main, kAddDone + p);
    }
  }
  // The join, then the end-of-call rendezvous with the rank whose landing slots this one
  // writes (publish to the previous rank, wait for the next one's).
  record(copy, kCopyDone);
  if (!memop) record(flag, kFlagDone);
  const bool join = mutant_ != Mutant::ce_no_join && mutant_ != Mutant::ce_no_join_no_handshake;
  if (join) {
    wait(main, kCopyDone);
    if (!memop) wait(main, kFlagDone);
  }
  if (mutant_ != Mutant::ce_no_handshake && mutant_ != Mutant::ce_no_join_no_handshake) {
    Op publish{OpKind::publish, call};
    publish.peer = prev;
    publish.slot = handshake_slot();
    Op w{OpKind::wait_flag, call};
    w.slot = handshake_slot();
    main.ops.insert(main.ops.end(), {publish, w});
  }
  Op end{OpKind::end_check, call};
  end.piece = pieces;
  main.ops.push_back(end);
}

bool CeRingModel::stream_enabled(const Stream& s) const {
  if (s.pc >= s.ops.size()) return false;
  const Op& op = s.ops[s.pc];
  switch (op.kind) {
    case OpKind::wait_event: return op.event < 0 || event_done_[static_cast<std::size_t>(op.event)];
    case OpKind::copy: return !s.issued || s.in_flight == 0;
    case OpKind::wait_flag: {
      // generation_reached: the wrap-safe comparison with the next count
      const auto expected =
          wait_counter_[static_cast<std::size_t>(s.rank)][static_cast<std::size_t>(op.slot)] + 1;
      return static_cast<std::int32_t>(word(s.rank, flag_offset(op.slot)) -
                                       static_cast<std::uint32_t>(expected)) >= 0;
    }
    case OpKind::binary_wait: return word(s.rank, binary_offset(op.slot)) == 1;
    default: return true;
  }
}

void CeRingModel::step_stream(Stream& s) {
  const Op& op = s.ops[s.pc];
  const int self = static_cast<int>(&s - streams_.data());
  switch (op.kind) {
    case OpKind::produce:
      for (int c = 0; c < config_.ranks; ++c)
        for (int p = 0; p < kMaxPieces; ++p)
          for (int e = 0; e < words_per_piece_; ++e)
            word(s.rank, input_offset(c, p) + static_cast<std::size_t>(e)) =
                tag(op.call, c, p, e, 1u << s.rank);
      trace(who(s) + fmt::format(": the producer writes call {}'s input", op.call));
      break;
    case OpKind::record:
      event_done_[static_cast<std::size_t>(op.event)] = 1;
      trace(who(s) + fmt::format(": records event {}", op.event));
      break;
    case OpKind::wait_event: trace(who(s) + fmt::format(": past event {}", op.event)); break;
    case OpKind::copy:
      if (!s.issued) return step_copy(s, op);
      s.issued = false;
      trace(who(s) + fmt::format(": the copy into rank {}'s slot {} landed", op.peer, op.slot));
      break;
    case OpKind::publish: {
      auto& count =
          send_counter_[static_cast<std::size_t>(s.rank)][static_cast<std::size_t>(op.slot)];
      ++count;
      in_flight_.issue({self,
                        -1 - self,
                        s.rank,
                        op.peer,
                        self,
                        flag_offset(op.slot),
                        {static_cast<std::uint32_t>(count)},
                        true});
      trace(who(s) + fmt::format(": publishes {} to rank {}'s flag {}", count, op.peer, op.slot));
      break;
    }
    case OpKind::wait_flag:
      ++wait_counter_[static_cast<std::size_t>(s.rank)][static_cast<std::size_t>(op.slot)];
      trace(who(s) + fmt::format(": saw its flag {} reach its count", op.slot));
      break;
    case OpKind::binary_write:
      in_flight_.issue(
          {self, -1 - self, s.rank, op.peer, self, binary_offset(op.slot), {1u}, true});
      trace(who(s) + fmt::format(": writes 1 to rank {}'s binary flag {}", op.peer, op.slot));
      break;
    case OpKind::binary_wait:
      word(s.rank, binary_offset(op.slot)) = 0;
      trace(who(s) + fmt::format(": saw binary flag {} set and cleared it", op.slot));
      break;
    case OpKind::add: step_add(s, op); break;
    case OpKind::end_check: step_end_check(s, op); break;
  }
  if (!violation_) ++s.pc;
}

// The copy engine reads the source as the copy starts and writes the next rank's landing slot.
void CeRingModel::step_copy(Stream& s, const Op& op) {
  std::vector<std::uint32_t> values;
  for (int e = 0; e < op.words; ++e)
    values.push_back(word(s.rank, op.src + static_cast<std::size_t>(e)));
  const int self = static_cast<int>(&s - streams_.data());
  s.in_flight +=
      in_flight_.issue({self, self, s.rank, op.peer, self, op.dst, std::move(values), false});
  s.issued = true;
  trace(who(s) + fmt::format(": copies chunk {} piece {} into rank {}'s slot {}", op.chunk,
                             op.piece, op.peer, op.slot));
}

// Reduce-scatter: the landed partial must sum the ranks before this one, of this call; the
// output gets it plus this rank's input. All-gather: the landed chunk must be complete.
void CeRingModel::step_add(const Stream& s, const Op& op) {
  const std::uint32_t mask = op.slot == 1 ? op.mask | 1u << s.rank : op.mask;
  for (int e = 0; e < words_per_piece_; ++e) {
    const std::uint32_t landed = word(s.rank, op.src + static_cast<std::size_t>(e));
    const std::uint32_t expected = tag(op.call, op.chunk, op.piece, e, op.mask);
    if (landed != expected)
      return fail(ViolationKind::wrong_value,
                  fmt::format("{} call {} read its landing slot (chunk {} piece {}.{}): {} "
                              "instead of {}",
                              who(s), op.call, op.chunk, op.piece, e, describe_tag(landed),
                              describe_tag(expected)));
    word(s.rank, op.dst + static_cast<std::size_t>(e)) = tag(op.call, op.chunk, op.piece, e, mask);
  }
  trace(who(s) +
        fmt::format(": {} chunk {} piece {}", op.slot == 1 ? "adds" : "lands", op.chunk, op.piece));
}

// After the join and the handshake the caller reads the output: every chunk summed over every
// rank, of this call.
void CeRingModel::step_end_check(const Stream& s, const Op& op) {
  const std::uint32_t all = (1u << config_.ranks) - 1;
  for (int c = 0; c < config_.ranks; ++c)
    for (int p = 0; p < op.piece; ++p)
      for (int e = 0; e < words_per_piece_; ++e) {
        const std::uint32_t v = word(s.rank, output_offset(c, p) + static_cast<std::size_t>(e));
        if (v != tag(op.call, c, p, e, all))
          return fail(ViolationKind::wrong_value,
                      fmt::format("{}: after call {} the caller reads chunk {} piece {}.{} as {}",
                                  who(s), op.call, c, p, e, describe_tag(v)));
      }
  trace(who(s) + fmt::format(": call {}'s output is complete", op.call));
}

std::string CeRingModel::describe_op(const Op& op) const {
  const std::string name = kOpNames[static_cast<int>(op.kind)];
  switch (op.kind) {
    case OpKind::wait_event: return fmt::format("{} (call {}, event {})", name, op.call, op.event);
    case OpKind::wait_flag:
    case OpKind::binary_wait: return fmt::format("{} (call {}, slot {})", name, op.call, op.slot);
    default: return fmt::format("{} (call {})", name, op.call);
  }
}

}  // namespace fusioncheck::sim
