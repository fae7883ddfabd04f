// The protocol steps of one model thread (one 16-byte vector of the real kernel), for the
// one-shot and the two-shot Lamport allreduce, with the mutant switches of the catalogue.
#include <fmt/core.h>

#include "fusioncheck/protocol/rotation.hpp"
#include "fusioncheck/sim/model.hpp"
#include "fusioncheck/sim/values.hpp"
#include "model_internal.hpp"

namespace fusioncheck::sim {
namespace {

Pc next_pc(CallKind kind, std::uint8_t pc) {
  if (kind == CallKind::one_shot) {
    switch (pc) {
      case kPcWait: return kPcReadFlag;
      case kPcReadFlag: return kPcArrive;
      case kPcArrive: return kPcPush;
      case kPcPush: return kPcClear;
      case kPcClear: return kPcPoll;
      case kPcPoll: return kPcUpdate;
      case kPcUpdate: return kPcTrigger;
      default: return kPcDone;
    }
  }
  switch (pc) {
    case kPcWait: return kPcReadFlag;
    case kPcReadFlag: return kPcArrive;
    case kPcArrive: return kPcScatter;
    case kPcScatter: return kPcSignal1;
    case kPcSignal1: return kPcWait1;
    case kPcWait1: return kPcReduce;
    case kPcReduce: return kPcSignal2;
    case kPcSignal2: return kPcWait2;
    case kPcWait2: return kPcReadGather;
    case kPcReadGather: return kPcUpdate;
    case kPcUpdate: return kPcTrigger;
    default: return kPcDone;
  }
}

const char* kind_name(CallKind kind) {
  return kind == CallKind::one_shot ? "one-shot" : "two-shot";
}

}  // namespace

std::uint8_t first_pc(const Model& model) {
  // empty-body: the kernel body is compiled out for SM120 (FlashInfer's arch guards).
  if (model.mutant() == Mutant::empty_body && model.profile().compute_capability >= 120)
    return kPcEmptyBody;
  return kPcWait;
}

const char* region_name(Region region) {
  switch (region) {
    case Region::lamport: return "Lamport buffer";
    case Region::ts_data: return "two-shot data";
    case Region::ts_gather: return "two-shot gather";
    case Region::ts_start: return "start-barrier flag";
    case Region::ts_end: return "end-barrier flag";
  }
  return "?";
}

Model::TwoShotPlace Model::scatter_place(int slot, int idx, int call_vectors) const {
  const int N = config_.ranks, E = config_.elems_per_vector;
  if (mutant_ == Mutant::twoshot_gather_overlap) {
    const int chunk = (call_vectors + N - 1) / N;  // owner idx % N holds idx / N < chunk
    return {Region::ts_data, static_cast<std::uint32_t>((slot * chunk + idx / N) * E)};
  }
  return {Region::ts_data, static_cast<std::uint32_t>((slot * max_vectors_ + idx) * E)};
}

Model::TwoShotPlace Model::gather_place(int idx, int call_vectors) const {
  const int N = config_.ranks, E = config_.elems_per_vector;
  if (mutant_ == Mutant::twoshot_gather_overlap) {
    const int chunk = (call_vectors + N - 1) / N;
    return {Region::ts_data, static_cast<std::uint32_t>((N * chunk + idx) * E)};
  }
  return {Region::ts_gather, static_cast<std::uint32_t>(idx * E)};
}

static const std::vector<std::uint32_t>& two_shot_array(const RankMemory& mem, Region region) {
  return region == Region::ts_gather ? mem.ts_gather : mem.ts_data;
}

// Is the Lamport slot element written? The correct test is bitwise; float-sentinel tests
// `x == -0.0f`, which is also true for +0.
static bool arrived(std::uint32_t bits, Mutant mutant) {
  if (mutant == Mutant::float_sentinel) return !(bits == kSentinel || bits == 0u);
  return !protocol::is_neg_zero_bits32(bits);
}

bool Model::thread_enabled(const Thread& t) const {
  const Kernel& kernel = kernels_[static_cast<std::size_t>(t.kernel)];
  const int V = config_.vectors_per_block;
  const auto pass = [&](int phase) {
    return block_pass_[static_cast<std::size_t>((t.kernel * config_.blocks + t.block) * kPhases +
                                                phase)];
  };
  const RankMemory& mem = memory_[t.rank];
  switch (t.pc) {
    case kPcWait: {
      if (mutant_ == Mutant::pdl_wait_missing || t.call == 0 || !profile_.pdl) return true;
      const Kernel& prev = kernels_[static_cast<std::size_t>(t.kernel - 1)];
      // early-trigger: the consumer takes the trigger as the point where the producer's
      // writes are visible; the correct wait is for the producer's completion.
      if (mutant_ == Mutant::early_trigger) return prev.threads_triggered == prev.threads_total;
      return prev.complete;
    }
    case kPcArrive: return pass(kPhaseReadFlag) == V;
    case kPcSignal1: return pass(kPhaseScatter) == V;
    case kPcSignal2: return pass(kPhaseReduce) == V;
    case kPcPoll: {
      const int E = config_.elems_per_vector, size = kernel.spec.vectors;
      const std::uint32_t base = t.data_buffer * lamport_stride();
      for (int r = 0; r < config_.ranks; ++r) {
        const std::uint32_t off = base + static_cast<std::uint32_t>((r * size + t.idx) * E);
        const RankMemory& src = polled_memory(t.rank, r);
        for (int e = 0; e < E; ++e)
          if (!arrived(src.lamport[off + e], mutant_)) return false;
      }
      return true;
    }
    case kPcWait1:
    case kPcWait2: {
      const auto& flags = t.pc == kPcWait1 ? mem.ts_start : mem.ts_end;
      for (int r = 0; r < config_.ranks; ++r)
        if (flags[static_cast<std::size_t>(t.block * config_.ranks + r)] != t.flag_seen)
          return false;
      return true;
    }
    case kPcUpdate: {
      if (mutant_ == Mutant::flag_before_arrival && kernel.spec.kind == CallKind::one_shot)
        return true;
      const bool shared =
          kernel.spec.kind == CallKind::one_shot || mutant_ == Mutant::shared_counter;
      const std::uint32_t counter =
          shared ? mem.control.arrival_counter : mem.control.two_shot_counter;
      return counter == static_cast<std::uint32_t>(kernel.grid_blocks);
    }
    default: return true;
  }
}

// Leaves the current pc and skips the steps that do not apply to this thread. Returns
// whether a block barrier count changed (other threads of the block may go on).
static bool move_on(Model& model, Thread& t, std::vector<std::int32_t>& block_pass, Kernel& kernel,
                    bool late_trigger) {
  bool bumped = false;
  const auto& cfg = model.config();
  const int size = kernel.spec.vectors;
  const bool active = t.idx < size;
  const bool first_of_block = t.tid == 0;
  for (;;) {
    const auto bump = [&](int phase) {
      bumped = true;
      ++block_pass[static_cast<std::size_t>((t.kernel * cfg.blocks + t.block) * Model::kPhases +
                                            phase)];
    };
    if (t.pc == kPcReadFlag) bump(kPhaseReadFlag);
    if (t.pc == kPcScatter) bump(kPhaseScatter);
    if (t.pc == kPcReduce) bump(kPhaseReduce);
    t.pc = t.pc == kPcEmptyBody ? kPcDone : next_pc(kernel.spec.kind, t.pc);
    bool applies = true;
    switch (t.pc) {
      case kPcArrive:
      case kPcSignal1:
      case kPcSignal2: applies = first_of_block; break;
      case kPcPush:
      case kPcPoll:
      case kPcScatter:
      case kPcReadGather: applies = active; break;
      case kPcReduce: applies = active && t.idx % cfg.ranks == t.rank; break;
      case kPcClear: applies = static_cast<std::uint32_t>(t.idx) < t.clear_vectors; break;
      case kPcUpdate:
        applies = t.block == 0 && first_of_block && !model.updates_at_arrival(kernel);
        break;
      case kPcTrigger: applies = late_trigger; break;
      default: break;
    }
    if (t.pc == kPcDone || applies) return bumped;
  }
}

// Step 7 of a one-shot call of `size` vectors on `rank`: f advances, clear_size becomes
// N * size, the arrival counter goes back to 0. `who` begins the trace line.
void Model::update_one_shot_state(int rank, int size, const std::string& who) {
  RankMemory& mem = memory_[static_cast<std::size_t>(rank)];
  memory_events_ += 3;  // flag, clear size, counter
  step_changes_ |= kChangedCounters;
  mem.control.flag = protocol::next_flag(mem.control.flag, mutant_);
  mem.control.clear_size =
      static_cast<std::uint64_t>(config_.ranks * size * config_.elems_per_vector);
  if (mutant_ != Mutant::counter_not_reset) mem.control.arrival_counter = 0;
  if (trace_)
    trace(fmt::format("{} sets f={}, clear size {}, arrival counter {}", who, mem.control.flag,
                      mem.control.clear_size, mem.control.arrival_counter));
}

// The steps of step_thread, one per pc. Each returns whether the thread triggered its
// dependents (launch_dependents, or the point the model takes as it) in this step.
bool Model::step_empty_body(const std::string& who) {
  if (trace_) trace(who + ": kernel body compiled out for this arch, exits");
  return true;
}

bool Model::step_wait(const Thread& t, bool late, const std::string& who) {
  if (trace_) {
    const bool prev_running =
        t.call > 0 && !kernels_[static_cast<std::size_t>(t.kernel - 1)].complete;
    if (mutant_ == Mutant::pdl_wait_missing)
      trace(who + ": grid-dependency wait compiled out, goes on" +
            (prev_running
                 ? fmt::format(" while call {} is still running (kernels overlap)", t.call - 1)
                 : std::string{}));
    else if (prev_running)
      trace(who + fmt::format(": wait returns at the trigger of call {}, which is still "
                              "running (kernels overlap)",
                              t.call - 1));
    else trace(who + ": grid-dependency wait returns");
  }
  return !late;
}

void Model::step_read_flag(Thread& t, const Kernel& kernel, const std::string& who) {
  RankMemory& mem = memory_[t.rank];
  const int N = config_.ranks, E = config_.elems_per_vector, size = kernel.spec.vectors;
  const bool one_shot = kernel.spec.kind == CallKind::one_shot;
  memory_events_ += one_shot ? 2 : 1;  // f and clear size, or the two-shot flag
  if (one_shot) {
    const std::uint32_t f = mem.control.flag;
    t.flag_seen = f;
    t.data_buffer = static_cast<std::uint8_t>(protocol::data_buffer_index(f, mutant_));
    t.clear_buffer = static_cast<std::uint8_t>(protocol::clear_buffer_index(f, mutant_));
    const std::uint64_t clear_elems = protocol::elements_to_clear(
        mem.control.clear_size, static_cast<std::uint64_t>(N * size * E), mutant_);
    t.clear_vectors = static_cast<std::uint32_t>(clear_elems / static_cast<std::uint64_t>(E));
    if (trace_)
      trace(fmt::format("{}: reads f={} -> data buffer {}, clear buffer {} ({} vectors)", who, f,
                        t.data_buffer, t.clear_buffer, t.clear_vectors));
  } else {
    t.flag_seen = protocol::next_flag(mem.control.two_shot_flag);
    t.clear_vectors = 0;
    if (trace_)
      trace(fmt::format("{}: reads two-shot flag {} -> barrier value {}", who,
                        mem.control.two_shot_flag, t.flag_seen));
  }
}

void Model::step_arrive(const Thread& t, const Kernel& kernel, const std::string& who) {
  if (updates_at_arrival(kernel)) {
    update_one_shot_state(t.rank, kernel.spec.vectors, who + ": the only block: arrives and");
    return;
  }
  RankMemory& mem = memory_[t.rank];
  const bool shared = kernel.spec.kind == CallKind::one_shot || mutant_ == Mutant::shared_counter;
  auto& counter = shared ? mem.control.arrival_counter : mem.control.two_shot_counter;
  ++counter;
  ++memory_events_;
  step_changes_ |= kChangedCounters;
  if (trace_)
    trace(fmt::format("{}: block arrives, {} counter = {}", who, shared ? "arrival" : "two-shot",
                      counter));
}

void Model::step_push(const Thread& t, const Kernel& kernel, const std::string& who) {
  const int N = config_.ranks, E = config_.elems_per_vector, size = kernel.spec.vectors;
  std::uint32_t values[kMaxElemsPerVector];
  // One step issues the stores to every rank: an issued store is invisible until its
  // delivery, which the scheduler orders separately, so nothing is lost.
  for (int e = 0; e < E; ++e) {
    const std::uint32_t in = input_value(t.call, t.rank, t.idx, e);
    values[e] = mutant_ == Mutant::no_canonicalize ? in : protocol::canonicalize_bits32(in);
  }
  const std::uint32_t off =
      t.data_buffer * lamport_stride() + static_cast<std::uint32_t>((t.rank * size + t.idx) * E);
  std::string targets;
  for (int peer = 0; peer < N; ++peer) {
    // pointer-stride: the host packed peer pointers at twice the stride the kernel reads.
    const int dst = mutant_ == Mutant::pointer_stride ? (peer * 2) % N : peer;
    issue_store(t, dst, Region::lamport, off, values, E, false);
    if (trace_) targets += (peer ? "," : "") + std::to_string(dst);
  }
  if (trace_)
    trace(fmt::format("{}: pushes vector {} into slot {} of buffer {} on ranks {}", who, t.idx,
                      t.rank, t.data_buffer, targets));
}

void Model::step_clear(const Thread& t, const Kernel& kernel, const std::string& who) {
  const int E = config_.elems_per_vector;
  const int grid = kernel.grid_blocks * config_.vectors_per_block;
  std::uint32_t values[kMaxElemsPerVector];
  for (int e = 0; e < E; ++e) values[e] = fill_value_;
  int cleared = 0;
  for (std::uint32_t v = static_cast<std::uint32_t>(t.idx); v < t.clear_vectors;
       v += static_cast<std::uint32_t>(grid), ++cleared)
    issue_store(t, t.rank, Region::lamport,
                t.clear_buffer * lamport_stride() + v * static_cast<std::uint32_t>(E), values, E,
                false);
  if (trace_)
    trace(fmt::format("{}: clears {} vectors of its buffer {} (from vector {}, stride {})", who,
                      cleared, t.clear_buffer, t.idx, grid));
}

// Where a rank polls peer r's slot: its own buffer (every rank pushes into every buffer);
// moe-remote-read polls it in rank r's own buffer, which rank r alone clears.
const RankMemory& Model::polled_memory(int rank, int r) const {
  return memory_[static_cast<std::size_t>(mutant_ == Mutant::moe_remote_read ? r : rank)];
}

void Model::step_poll(const Thread& t, const Kernel& kernel, const std::string& who) {
  const int N = config_.ranks, E = config_.elems_per_vector, size = kernel.spec.vectors;
  const std::uint32_t base = t.data_buffer * lamport_stride();
  for (int r = 0; r < N && !violation_; ++r)
    for (int e = 0; e < E; ++e) {
      const std::uint32_t got =
          polled_memory(t.rank, r)
              .lamport[base + static_cast<std::uint32_t>((r * size + t.idx) * E + e)];
      const std::uint32_t want = expected_value(t.call, r, t.idx, e);
      if (got != want) {
        fail(ViolationKind::wrong_value,
             fmt::format("rank {} block {} thread {} read slot {} element {}.{} of buffer {} "
                         "holding {} during call {} (expected {})",
                         t.rank, t.block, t.tid, r, t.idx, e, t.data_buffer, describe_value(got),
                         t.call, describe_value(want)));
        break;
      }
    }
  memory_events_ += static_cast<std::uint64_t>(N * E);
  output_written_[static_cast<std::size_t>(t.kernel * max_vectors_ + t.idx)] = 1;
  if (trace_ && !violation_)
    trace(fmt::format("{}: all {} slots of vector {} arrived, reduces, writes output", who, N,
                      t.idx));
}

void Model::step_update(const Thread& t, const Kernel& kernel, const std::string& who) {
  if (kernel.spec.kind == CallKind::one_shot) {
    update_one_shot_state(t.rank, kernel.spec.vectors, who + ":");
    return;
  }
  RankMemory& mem = memory_[t.rank];
  memory_events_ += 3;  // flag, counter
  step_changes_ |= kChangedCounters;
  mem.control.two_shot_flag = t.flag_seen;
  mem.control.two_shot_counter = 0;  // shared-counter: the shared one stays as it is
  if (trace_)
    trace(fmt::format("{}: sets two-shot flag {}, resets the two-shot counter", who, t.flag_seen));
}

bool Model::step_trigger(const std::string& who) {
  if (trace_) trace(who + ": launch_dependents");
  return true;
}

void Model::step_scatter(const Thread& t, const Kernel& kernel, const std::string& who) {
  const int E = config_.elems_per_vector;
  const int owner = t.idx % config_.ranks;
  std::uint32_t values[kMaxElemsPerVector];
  for (int e = 0; e < E; ++e) values[e] = input_value(t.call, t.rank, t.idx, e);
  const TwoShotPlace slot = scatter_place(t.rank, t.idx, kernel.spec.vectors);
  issue_store(t, owner, slot.region, slot.offset, values, E, false);
  if (trace_) trace(fmt::format("{}: scatters vector {} to its owner rank {}", who, t.idx, owner));
}

void Model::step_signal(const Thread& t, const std::string& who) {
  const int N = config_.ranks;
  const bool release = mutant_ != Mutant::barrier_no_release;
  const Region region = t.pc == kPcSignal1 ? Region::ts_start : Region::ts_end;
  std::uint32_t values[kMaxElemsPerVector];
  values[0] = t.flag_seen;
  for (int dst = 0; dst < N; ++dst)
    issue_store(t, dst, region, static_cast<std::uint32_t>(t.block * N + t.rank), values, 1,
                release);
  if (trace_)
    trace(fmt::format("{}: block stores {} {} into every rank's {}", who,
                      release ? "st.release" : "relaxed", t.flag_seen, region_name(region)));
}

void Model::step_wait_flags(const Thread& t, const std::string& who) {
  // the acquire loads that saw the flags
  memory_events_ += static_cast<std::uint64_t>(config_.ranks);
  if (trace_)
    trace(fmt::format("{}: sees every {} flag = {} (acquire)", who,
                      t.pc == kPcWait1 ? "start" : "end", t.flag_seen));
}

void Model::step_reduce(const Thread& t, const Kernel& kernel, const std::string& who) {
  const RankMemory& mem = memory_[t.rank];
  const int N = config_.ranks, E = config_.elems_per_vector, size = kernel.spec.vectors;
  for (int r = 0; r < N && !violation_; ++r)
    for (int e = 0; e < E; ++e) {
      const TwoShotPlace slot = scatter_place(r, t.idx, size);
      const std::uint32_t got = two_shot_array(mem, slot.region)[slot.offset + e];
      const std::uint32_t want = input_value(t.call, r, t.idx, e);
      if (got != want) {
        fail(ViolationKind::wrong_value,
             fmt::format("rank {} block {} thread {} read two-shot slot {} element {}.{} "
                         "holding {} during call {} (expected {})",
                         t.rank, t.block, t.tid, r, t.idx, e, describe_value(got), t.call,
                         describe_value(want)));
        break;
      }
    }
  memory_events_ += static_cast<std::uint64_t>(N * E);
  std::uint32_t values[kMaxElemsPerVector];
  for (int e = 0; e < E; ++e) values[e] = reduced_tag(t.call, t.idx, e);
  const TwoShotPlace gather = gather_place(t.idx, size);
  for (int dst = 0; dst < N; ++dst)
    issue_store(t, dst, gather.region, gather.offset, values, E, false);
  if (trace_ && !violation_)
    trace(fmt::format("{}: reduces vector {} and gathers it to every rank", who, t.idx));
}

void Model::step_read_gather(const Thread& t, const Kernel& kernel, const std::string& who) {
  const RankMemory& mem = memory_[t.rank];
  const int E = config_.elems_per_vector;
  const TwoShotPlace gather = gather_place(t.idx, kernel.spec.vectors);
  for (int e = 0; e < E && !violation_; ++e) {
    const std::uint32_t got = two_shot_array(mem, gather.region)[gather.offset + e];
    const std::uint32_t want = reduced_tag(t.call, t.idx, e);
    if (got == want) continue;
    // Where it read, when the gather region shares the array with the scatter slots.
    const std::string where =
        gather.region == Region::ts_gather
            ? std::string{}
            : fmt::format(" ({} element {})", region_name(gather.region), gather.offset + e);
    fail(ViolationKind::wrong_value,
         fmt::format("rank {} block {} thread {} read gathered element {}.{}{} holding {} "
                     "during call {} (expected {})",
                     t.rank, t.block, t.tid, t.idx, e, where, describe_value(got), t.call,
                     describe_value(want)));
  }
  memory_events_ += static_cast<std::uint64_t>(E);
  output_written_[static_cast<std::size_t>(t.kernel * max_vectors_ + t.idx)] = 1;
  if (trace_ && !violation_) trace(fmt::format("{}: reads gathered vector {}", who, t.idx));
}

// Runs the step at the thread's pc; returns whether it triggered.
bool Model::run_step(Thread& t, Kernel& kernel, bool late, const std::string& who) {
  switch (t.pc) {
    case kPcEmptyBody: return step_empty_body(who);
    case kPcWait: return step_wait(t, late, who);
    case kPcReadFlag: step_read_flag(t, kernel, who); break;
    case kPcArrive: step_arrive(t, kernel, who); break;
    case kPcPush: step_push(t, kernel, who); break;
    case kPcClear: step_clear(t, kernel, who); break;
    case kPcPoll: step_poll(t, kernel, who); break;
    case kPcUpdate: step_update(t, kernel, who); break;
    case kPcTrigger: return step_trigger(who);
    case kPcScatter: step_scatter(t, kernel, who); break;
    case kPcSignal1:
    case kPcSignal2: step_signal(t, who); break;
    case kPcWait1:
    case kPcWait2: step_wait_flags(t, who); break;
    case kPcReduce: step_reduce(t, kernel, who); break;
    case kPcReadGather: step_read_gather(t, kernel, who); break;
    default: break;
  }
  return false;
}

// After a step: the trigger count, the move to the next pc that applies, completion and
// launches.
void Model::finish_step(Thread& t, Kernel& kernel, bool late, bool triggered_now) {
  if (triggered_now) {
    ++kernel.threads_triggered;
    // Only early-trigger's grid-dependency wait reads the trigger count (thread_enabled);
    // the correct wait reads completion, which marks the whole rank in refresh_rank.
    if (mutant_ == Mutant::early_trigger) step_changes_ |= kChangedTriggers;
  }
  // Every path to done passes the trigger: the wait (early), the trigger step (late) or
  // the empty body.
  if (move_on(*this, t, block_pass_, kernel, late)) step_changes_ |= kChangedBlockPass;
  if (t.pc == kPcDone) ++kernel.threads_done;
  // Completion needs the thread done and a launch needs its trigger: any other step
  // cannot complete or launch a kernel of the rank.
  if (triggered_now || t.pc == kPcDone) refresh_rank(*this, t.rank);
}

void Model::step_thread(int thread_index) {
  Thread& t = threads_[static_cast<std::size_t>(thread_index)];
  Kernel& kernel = kernels_[static_cast<std::size_t>(t.kernel)];
  const bool late = config_.late_trigger && mutant_ != Mutant::early_trigger;
  std::string who;
  if (trace_)
    who = fmt::format("rank {} block {} thread {} call {} ({})", t.rank, t.block, t.tid, t.call,
                      kind_name(kernel.spec.kind));
  const bool triggered_now = run_step(t, kernel, late, who);
  finish_step(t, kernel, late, triggered_now);
}

}  // namespace fusioncheck::sim
