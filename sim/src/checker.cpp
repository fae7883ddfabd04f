// Checkers: outputs of every completed kernel, deadlock, and docs/design.md's invariants when
// every rank is idle at the end of the call sequence.
#include <fmt/core.h>

#include "fusioncheck/protocol/rotation.hpp"
#include "fusioncheck/sim/model.hpp"
#include "fusioncheck/sim/values.hpp"
#include "model_internal.hpp"

namespace fusioncheck::sim {

std::string describe_value(std::uint32_t bits) {
  if (bits == kSentinel) return "-0 (not yet written)";
  if (bits == 0u) return "+0";
  if (bits == kSentinel16Fill) return "the 16-bit sentinel fill 0x80008000";
  if (bits == kPoison) return "poison (never written)";
  if ((bits & 0xC0000000u) == 0x40000000u)
    return fmt::format("call {} data from rank {} (vector {}.{})", (bits >> 20) & 0x3FFu,
                       (bits >> 16) & 0xFu, (bits >> 2) & 0x3FFFu, bits & 3u);
  if ((bits & 0xE0000000u) == 0x20000000u)
    return fmt::format("call {} reduced vector {}.{}", (bits >> 16) & 0x3FFu, (bits >> 2) & 0x3FFFu,
                       bits & 3u);
  return fmt::format("a torn value 0x{:08x}", bits);
}

void refresh_rank(Model& m, int rank) {
  const int calls = static_cast<int>(m.calls_.size());
  auto& first = m.first_active_[static_cast<std::size_t>(rank)];
  const int launched = m.launched_count_[static_cast<std::size_t>(rank)];
  for (int c = first; c < launched && !m.violation_; ++c) {
    Kernel& k = m.kernels_[static_cast<std::size_t>(m.kernel_index(rank, c))];
    if (k.complete || k.threads_done != k.threads_total || k.in_flight != 0) continue;
    k.complete = true;
    m.rank_dirty_[static_cast<std::size_t>(rank)] =
        Model::kDirtyAll;  // the next kernel's wait may return
    if (m.trace_)          // formatting costs more than a whole step of an untraced run
      m.trace(fmt::format("rank {}: kernel of call {} completed, its writes are visible", rank, c));
    Checker::kernel_completed(m, rank, c);
  }
  while (first < calls &&
         m.kernels_[static_cast<std::size_t>(m.kernel_index(rank, first))].complete)
    ++first;
  m.launch_ready_kernels(rank);
}

// Invariant 8 (coverage part): every output vector of the call was written.
void Checker::kernel_completed(Model& m, int rank, int call) {
  const int kernel = m.kernel_index(rank, call);
  const int size = m.kernels_[static_cast<std::size_t>(kernel)].spec.vectors;
  for (int idx = 0; idx < size; ++idx)
    if (!m.output_written(kernel, idx)) {
      m.fail(ViolationKind::output_missing,
             fmt::format("rank {} call {} completed without writing output vector {} (the NaN "
                         "canary is still there)",
                         rank, call, idx));
      return;
    }
}

namespace {

std::string spinning_thread(const Model& m, const Thread& t) {
  const auto& mem = m.memory()[t.rank];
  const auto& k = m.kernels()[static_cast<std::size_t>(t.kernel)];
  const std::string who =
      fmt::format("rank {} block {} thread {} call {}", t.rank, t.block, t.tid, t.call);
  switch (t.pc) {
    case kPcWait: return who + " waits for the previous kernel (grid-dependency wait)";
    case kPcArrive: return who + " waits at __syncthreads before arriving";
    case kPcSignal1:
    case kPcSignal2: return who + " waits at __syncthreads before signalling";
    case kPcPoll: {
      const int E = m.config().elems_per_vector;
      for (int r = 0; r < m.config().ranks; ++r)
        for (int e = 0; e < E; ++e) {
          const std::uint32_t bits =
              mem.lamport[t.data_buffer * m.lamport_stride() +
                          static_cast<std::uint32_t>((r * k.spec.vectors + t.idx) * E + e)];
          if (bits == kSentinel || (m.mutant() == Mutant::float_sentinel && bits == 0u))
            return fmt::format("{} polls slot {} vector {}.{} of buffer {}: it holds {}", who, r,
                               t.idx, e, t.data_buffer, describe_value(bits));
        }
      return who + " polls";
    }
    case kPcWait1:
    case kPcWait2:
      return fmt::format("{} spins on its {} barrier flags for value {}", who,
                         t.pc == kPcWait1 ? "start" : "end", t.flag_seen);
    case kPcUpdate:
      return fmt::format("{} waits for the arrival counter to reach {} (it is {})", who,
                         k.grid_blocks,
                         k.spec.kind == CallKind::one_shot || m.mutant() == Mutant::shared_counter
                             ? mem.control.arrival_counter
                             : mem.control.two_shot_counter);
    default: return who + " is blocked";
  }
}

std::string deadlock_text(const Model& m) {
  std::string text = "deadlock: every thread spins and nothing is in flight";
  int listed = 0, spinning = 0;
  for (const auto& t : m.threads()) {
    const auto& k = m.kernels()[static_cast<std::size_t>(t.kernel)];
    if (!t.present || !k.launched || t.pc == kPcDone) continue;
    ++spinning;
    if (listed < 3) {
      text += "; " + spinning_thread(m, t);
      ++listed;
    }
  }
  if (spinning > listed) text += fmt::format("; ... {} threads in all", spinning);
  return text;
}

}  // namespace

void Model::finish() { Checker::finish(*this); }

void Checker::finish(Model& m) {
  if (m.violation_) return;
  if (!m.all_done()) {
    m.fail(ViolationKind::deadlock, deadlock_text(m));
    return;
  }
  const auto& cfg = m.config();
  const int N = cfg.ranks, E = cfg.elems_per_vector;
  const Mutant mut = m.mutant();
  const int buffers = protocol::lamport_buffer_count(mut);
  int one_shots = 0, two_shots = 0, last_one_shot = -1;
  for (int c = 0; c < static_cast<int>(m.calls_.size()); ++c) {
    if (m.calls_[static_cast<std::size_t>(c)].kind == CallKind::one_shot) {
      ++one_shots;
      last_one_shot = c;
    } else {
      ++two_shots;
    }
  }
  const auto bad = [&](int rank, std::string what) {
    m.fail(ViolationKind::invariant, fmt::format("at quiescence, rank {}: {}", rank, what));
  };
  const auto& cb0 = m.memory_[0].control;
  for (int r = 0; r < N; ++r) {
    const RankMemory& mem = m.memory_[static_cast<std::size_t>(r)];
    const auto& cb = mem.control;
    if (!protocol::guards_intact(cb))
      return bad(r, "control block guard words overwritten (invariant 11)");
    if (cb.arrival_counter != 0 || cb.two_shot_counter != 0)
      return bad(r, fmt::format("arrival counters are {} and {}, not 0 (invariant 1)",
                                cb.arrival_counter, cb.two_shot_counter));
    std::uint32_t want_flag = 0;
    for (int i = 0; i < one_shots; ++i) want_flag = protocol::next_flag(want_flag, mut);
    if (cb.flag != want_flag)
      return bad(r, fmt::format("f = {} after {} one-shot calls, expected {} (invariant 2)",
                                cb.flag, one_shots, want_flag));
    const std::uint64_t want_clear =
        last_one_shot < 0 ? 0u
                          : static_cast<std::uint64_t>(
                                N * m.calls_[static_cast<std::size_t>(last_one_shot)].vectors * E);
    if (cb.clear_size != want_clear)
      return bad(r, fmt::format("clear size {} != {} (invariant 2)", cb.clear_size, want_clear));
    if (cb.two_shot_flag != static_cast<std::uint32_t>(two_shots % 3))
      return bad(r, fmt::format("two-shot flag {} after {} two-shot calls (invariant 2)",
                                cb.two_shot_flag, two_shots));
    if (cb.flag != cb0.flag || cb.clear_size != cb0.clear_size ||
        cb.two_shot_flag != cb0.two_shot_flag)
      return bad(r, "control state differs from rank 0's (invariant 3)");
    // Invariants 4-6 over the Lamport buffers.
    const std::uint32_t stride = m.lamport_stride();
    int data_buffer = -1, size = 0;
    if (last_one_shot >= 0) {
      std::uint32_t f = 0;
      for (int i = 0; i < one_shots - 1; ++i) f = protocol::next_flag(f, mut);
      data_buffer = protocol::data_buffer_index(f, mut);
      size = m.calls_[static_cast<std::size_t>(last_one_shot)].vectors;
    }
    for (int b = 0; b < buffers; ++b) {
      for (std::uint32_t i = 0; i < stride; ++i) {
        const std::uint32_t bits = mem.lamport[b * stride + i];
        std::uint32_t want = kSentinel;
        const std::uint32_t written = static_cast<std::uint32_t>(N * size * E);
        if (b == data_buffer && i < written) {
          const int slot = static_cast<int>(i) / (size * E);
          const int within = static_cast<int>(i) % (size * E);
          want = expected_value(last_one_shot, slot, within / E, within % E);
        }
        if (bits == want) continue;
        if (bits == kSentinel16Fill)
          return bad(r, fmt::format("buffer {} element {} holds a 16-bit sentinel fill, the "
                                    "sentinel width (2 B) differs from the element width (4 B) "
                                    "(invariant 6)",
                                    b, i));
        return bad(
            r, fmt::format("buffer {} element {} holds {}, expected {} (invariant {})", b, i,
                           describe_value(bits), describe_value(want), b == data_buffer ? 4 : 5));
      }
    }
    for (const auto* flags : {&mem.ts_start, &mem.ts_end})
      for (std::uint32_t v : *flags)
        if (v != cb.two_shot_flag)
          return bad(r, fmt::format("a barrier flag holds {}, the two-shot flag is {} "
                                    "(invariant 7)",
                                    v, cb.two_shot_flag));
  }
}

}  // namespace fusioncheck::sim
