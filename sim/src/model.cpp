// State, memory and links of the model: which events are enabled, stores in flight and
// their delivery, kernel launch and completion (stream order and PDL).
#include "fusioncheck/sim/model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "fusioncheck/protocol/rotation.hpp"
#include "fusioncheck/sim/values.hpp"
#include "model_internal.hpp"

namespace fusioncheck::sim {

const char* violation_kind_name(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::wrong_value: return "wrong-value";
    case ViolationKind::deadlock: return "deadlock";
    case ViolationKind::step_bound: return "step-bound";
    case ViolationKind::invariant: return "invariant";
    case ViolationKind::output_missing: return "output-missing";
    case ViolationKind::early_push: return "early-push";
  }
  return "?";
}

Model::Model(const SimConfig& config, const Profile& profile, Mutant mutant)
    : config_(config), profile_(profile), mutant_(mutant) {
  const std::string error = validate(config, profile);
  if (!error.empty()) throw std::invalid_argument(error);
  if (protocol_of(config) != SimProtocol::lamport)
    throw std::invalid_argument("the Lamport model runs one-shot and two-shot calls only");
  if (!in_sim(mutant, SimProtocol::lamport))
    throw std::invalid_argument(std::string("mutant ") + std::string(protocol::mutant_id(mutant)) +
                                " is not in the sim's Lamport model");
  calls_ = expanded_calls(config);
  max_vectors_ = max_vectors(config);
  granularity_bytes_ = mutant == Mutant::torn_element ? 2 : profile.store_granularity_bytes;
  fill_value_ = mutant == Mutant::sentinel_width ? kSentinel16Fill : kSentinel;
  reset();
}

int Model::grid_of(int rank) const {
  // divergent-config: the last rank launches one block fewer than its peers.
  if (mutant_ == Mutant::divergent_config && rank == config_.ranks - 1 && config_.blocks > 1)
    return config_.blocks - 1;
  return config_.blocks;
}

std::size_t Model::region_size(Region region) const {
  const std::size_t e = static_cast<std::size_t>(config_.elems_per_vector);
  const std::size_t v = static_cast<std::size_t>(max_vectors_);
  const std::size_t n = static_cast<std::size_t>(config_.ranks);
  switch (region) {
    case Region::lamport: return protocol::kLamportBuffers * n * v * e;
    // twoshot-gather-overlap: the gather region (at most max_vectors) follows the N slots
    // of a call's chunk (each at most max_vectors).
    case Region::ts_data: return (mutant_ == Mutant::twoshot_gather_overlap ? n + 1 : n) * v * e;
    case Region::ts_gather: return v * e;
    case Region::ts_start:
    case Region::ts_end: return static_cast<std::size_t>(config_.blocks) * n;
  }
  return 0;
}

void Model::reset() {
  const int ranks = config_.ranks, blocks = config_.blocks, V = config_.vectors_per_block;
  const int calls = static_cast<int>(calls_.size());
  // Reused between runs: a search resets the model once per schedule.
  memory_.resize(static_cast<std::size_t>(ranks));
  for (auto& m : memory_) {
    m.lamport.assign(region_size(Region::lamport), kUninitialised);
    m.ts_data.assign(region_size(Region::ts_data), kPoison);
    m.ts_gather.assign(region_size(Region::ts_gather), kPoison);
    m.ts_start.assign(region_size(Region::ts_start), 0u);
    m.ts_end.assign(region_size(Region::ts_end), 0u);
    m.control = protocol::initial_control_block(lamport_stride() * 4ull);
    m.initialised = false;
  }
  kernels_.assign(static_cast<std::size_t>(ranks * calls), Kernel{});
  threads_.resize(static_cast<std::size_t>(ranks * calls * blocks * V));
  for (int r = 0; r < ranks; ++r) {
    for (int c = 0; c < calls; ++c) {
      const int k = kernel_index(r, c);
      Kernel& kernel = kernels_[static_cast<std::size_t>(k)];
      kernel.spec = calls_[static_cast<std::size_t>(c)];
      kernel.grid_blocks = grid_of(r);
      kernel.threads_total = kernel.grid_blocks * V;
      for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < V; ++t) {
          Thread& th = threads_[static_cast<std::size_t>(thread_index(k, b, t))];
          th = Thread{};
          th.kernel = k;
          th.call = static_cast<std::uint16_t>(c);
          th.rank = static_cast<std::uint8_t>(r);
          th.block = static_cast<std::uint8_t>(b);
          th.tid = static_cast<std::uint16_t>(t);
          th.idx = b * V + t;
          th.present = b < kernel.grid_blocks;
          th.pc = first_pc(*this);
        }
    }
  }
  block_pass_.assign(static_cast<std::size_t>(ranks * calls * blocks * kPhases), 0);
  output_written_.assign(static_cast<std::size_t>(ranks * calls * max_vectors_), 0);
  in_flight_.clear();
  block_flying_.assign(static_cast<std::size_t>(ranks * calls * blocks), 0);
  fifo_flying_.assign(threads_.size() * static_cast<std::size_t>(ranks), 0);
  held_count_ = 0;
  first_active_.assign(static_cast<std::size_t>(ranks), 0);
  launched_count_.assign(static_cast<std::size_t>(ranks), 0);
  steps_ = memory_events_ = 0;
  violation_.reset();
  // Nothing in flight and no thread ready yet: only the host initialisations.
  events_.clear();
  for (int r = 0; r < ranks; ++r)
    events_.push_back({EventKind::init, r, static_cast<int>(threads_.size()) + ranks * ranks + r});
  delivery_events_ = 0;
  init_events_ = ranks;
  ready_.assign(threads_.size(), 0);
  rank_dirty_.assign(static_cast<std::size_t>(ranks), kDirtyAll);
  rank_changes_.assign(static_cast<std::size_t>(ranks), 0);
  watchers_.resize(static_cast<std::size_t>(ranks * kChangeKinds));
  for (auto& list : watchers_) list.clear();
  watch_slot_.assign(threads_.size(), -1);
  // Livelock guard: far above what any correct run of this size needs.
  step_bound_ = 64ull * threads_.size() * static_cast<std::uint64_t>(ranks + 2) + 10000ull;
  if (step_bound_override_ != 0) step_bound_ = step_bound_override_;
}

// What the readiness of a thread at `pc` reads (thread_enabled), as Model::kChanged* bits;
// 0: nothing that another event changes (the thread is ready until it steps itself).
static std::uint8_t depends_on_changes(std::uint8_t pc) {
  switch (pc) {
    case kPcWait: return Model::kChangedTriggers;  // early-trigger; completions: kDirtyAll
    case kPcArrive:
    case kPcSignal1:
    case kPcSignal2: return Model::kChangedBlockPass;
    case kPcPoll: return Model::kChangedLamport;
    case kPcWait1: return Model::kChangedStartFlags;
    case kPcWait2: return Model::kChangedEndFlags;
    case kPcUpdate: return Model::kChangedCounters;
    default: return 0;
  }
}

// Orders events of one section by id (in-flight index, rank or thread index).
static bool id_less(const Event& event, int id) { return event.id < id; }

std::span<const Event> Model::enabled() {
  if (violation_) return {};
  // Deliveries and inits are up to date (issue_store, deliver, execute). Whether a thread
  // may step depends only on its own rank's state, so only the ranks the last event
  // touched are evaluated again.
  const int per_kernel = config_.blocks * config_.vectors_per_block;
  const Thread* const threads = threads_.data();
  for (int r = 0; r < config_.ranks; ++r) {
    const std::size_t rr = static_cast<std::size_t>(r);
    if (rank_dirty_[rr] == kClean) continue;
    const int begin = kernel_index(r, first_active_[rr]) * per_kernel;
    const int end = kernel_index(r, launched_count_[rr]) * per_kernel;
    if (rank_dirty_[rr] == kDirtyAll) {
      for (int i = begin; i < end; ++i) {
        const Thread& t = threads[i];
        set_ready(i, t.present && t.pc != kPcDone && thread_enabled(t));
      }
    } else {
      // Only the threads whose readiness reads what changed can change their mind.
      for (unsigned changes = rank_changes_[rr]; changes != 0; changes &= changes - 1) {
        const int kind = std::countr_zero(changes);
        for (const std::int32_t i : watchers_[rr * kChangeKinds + static_cast<std::size_t>(kind)])
          set_ready(i, thread_enabled(threads[i]));
      }
    }
    rank_dirty_[rr] = kClean;
    rank_changes_[rr] = 0;
  }
  return {events_.data(), events_.size()};
}

// Threads are listed in index order after the deliveries and inits.
void Model::toggle_ready(int thread_index) {
  std::uint8_t& ready = ready_[static_cast<std::size_t>(thread_index)];
  ready = !ready;
  const auto first = events_.begin() + delivery_events_ + init_events_;
  const auto at = std::lower_bound(first, events_.end(), thread_index, id_less);
  if (ready) events_.insert(at, {EventKind::thread_step, thread_index, thread_index});
  else events_.erase(at);
}

// The watchers, on the thread's rank, of the one kind of change in `bit`.
std::vector<std::int32_t>& Model::watchers_of(int thread_index, std::uint8_t bit) {
  return watchers_[static_cast<std::size_t>(threads_[static_cast<std::size_t>(thread_index)].rank *
                                                kChangeKinds +
                                            std::countr_zero(bit))];
}

// A launched thread at `pc` joins the watchers of what its readiness reads.
void Model::watch(int thread_index, std::uint8_t pc) {
  const std::uint8_t bit = depends_on_changes(pc);
  if (bit == 0) return;
  auto& list = watchers_of(thread_index, bit);
  watch_slot_[static_cast<std::size_t>(thread_index)] = static_cast<std::int32_t>(list.size());
  list.push_back(thread_index);
}

// The thread left `pc`: it leaves those watchers (the last one takes its place).
void Model::unwatch(int thread_index, std::uint8_t pc) {
  const std::uint8_t bit = depends_on_changes(pc);
  if (bit == 0) return;
  auto& list = watchers_of(thread_index, bit);
  const std::int32_t slot = watch_slot_[static_cast<std::size_t>(thread_index)];
  const std::int32_t moved = list.back();
  list[static_cast<std::size_t>(slot)] = moved;
  watch_slot_[static_cast<std::size_t>(moved)] = slot;
  list.pop_back();
  watch_slot_[static_cast<std::size_t>(thread_index)] = -1;
}

// Lists in-flight piece `index` as deliverable, in in-flight order.
void Model::add_delivery_event(int index) {
  const Piece& p = in_flight_[static_cast<std::size_t>(index)];
  const int actor = static_cast<int>(threads_.size()) + p.src_rank * config_.ranks + p.dst_rank;
  // Mostly the youngest piece, which goes last.
  int at = delivery_events_;
  while (at > 0 && events_[static_cast<std::size_t>(at - 1)].id > index) --at;
  events_.insert(events_.begin() + at, {EventKind::deliver, index, actor});
  ++delivery_events_;
}

// Piece `index` left in_flight_: its event goes, and the later pieces moved down by one.
void Model::remove_delivery_event(int index) {
  // Its place is `index` less the held pieces before it, which are few.
  int at = std::min(index, delivery_events_ - 1);
  while (events_[static_cast<std::size_t>(at)].id != index) --at;
  for (int later = at + 1; later < delivery_events_; ++later)
    --events_[static_cast<std::size_t>(later)].id;
  events_.erase(events_.begin() + at);
  --delivery_events_;
}

// After a piece of (block_key, fifo_key) was delivered, the oldest remaining piece of that
// block and of that FIFO link have nothing older left to wait for.
void Model::release_held_pieces(std::uint32_t block_key, std::uint32_t fifo_key, bool fifo_link) {
  bool older_in_block = false, older_on_link = !fifo_link;
  const int flying = static_cast<int>(in_flight_.size());
  for (int k = 0; k < flying && !(older_in_block && older_on_link); ++k) {
    Piece& q = in_flight_[static_cast<std::size_t>(k)];
    std::uint8_t freed = 0;
    if (q.block_key == block_key) {
      if (!older_in_block) freed |= kHeldByBlock;
      older_in_block = true;
    }
    if (!older_on_link && q.fifo_key == fifo_key) {
      freed |= kHeldByFifo;
      older_on_link = true;
    }
    if ((q.held & freed) == 0) continue;
    q.held = static_cast<std::uint8_t>(q.held & ~freed);
    if (q.held == 0) {
      --held_count_;
      add_delivery_event(k);
    }
  }
}

void Model::execute(Event event) {
  ++steps_;
  // Keep the per-thread readiness cache honest: a delivery changes its destination's
  // memory; a thread step changes the thread itself and possibly shared state of its rank
  // (block barriers, counters, triggers), which every waiter on it must see. Kernel
  // completion and launch mark their rank in refresh_rank / launch_ready_kernels.
  switch (event.kind) {
    case EventKind::deliver: {
      // No thread polls the two-shot data or gather regions (thread_enabled), so a
      // delivery there cannot change any thread's readiness.
      const Piece& p = in_flight_[static_cast<std::size_t>(event.id)];
      const std::uint8_t changed = p.region == Region::lamport    ? kChangedLamport
                                   : p.region == Region::ts_start ? kChangedStartFlags
                                   : p.region == Region::ts_end   ? kChangedEndFlags
                                                                  : 0;
      // moe-remote-read polls the peers' memory: a Lamport delivery concerns every rank.
      const bool every_rank = changed == kChangedLamport && mutant_ == Mutant::moe_remote_read;
      for (std::size_t r = 0; r < rank_dirty_.size() && changed != 0; ++r) {
        if (!every_rank && static_cast<int>(r) != p.dst_rank) continue;
        rank_dirty_[r] = std::max(rank_dirty_[r], kDirtySome);
        rank_changes_[r] |= changed;
      }
      deliver(event.id);
      break;
    }
    case EventKind::init: {
      const auto inits = events_.begin() + delivery_events_;
      events_.erase(std::lower_bound(inits, inits + init_events_, event.id, id_less));
      --init_events_;
      std::fill(rank_dirty_.begin(), rank_dirty_.end(), kDirtyAll);
      init_rank(event.id);
      break;
    }
    case EventKind::thread_step: {
      step_changes_ = 0;
      const Thread& t = threads_[static_cast<std::size_t>(event.id)];
      const std::uint8_t old_pc = t.pc;
      step_thread(event.id);
      if (depends_on_changes(old_pc) != depends_on_changes(t.pc)) {
        unwatch(event.id, old_pc);
        watch(event.id, t.pc);
      }
      set_ready(event.id, t.pc != kPcDone && thread_enabled(t));
      if (step_changes_ != 0) {
        std::uint8_t& dirty = rank_dirty_[t.rank];
        dirty = std::max(dirty, kDirtySome);
        rank_changes_[t.rank] |= step_changes_;
      }
      break;
    }
  }
  if (!violation_ && steps_ > step_bound_)
    fail(ViolationKind::step_bound,
         fmt::format("livelock: {} steps without finishing (bound {})", steps_, step_bound_));
}

int Model::actor_count() const {
  return static_cast<int>(threads_.size()) + config_.ranks * config_.ranks + config_.ranks;
}

bool Model::all_done() const {
  for (int r = 0; r < config_.ranks; ++r)
    if (first_active_[static_cast<std::size_t>(r)] < static_cast<int>(calls_.size())) return false;
  return true;
}

void Model::fail(ViolationKind kind, std::string text) {
  if (violation_) return;
  if (trace_)
    trace_->push_back("VIOLATION (" + std::string(violation_kind_name(kind)) + "): " + text);
  violation_ = Violation{kind, std::move(text)};
}

void Model::trace(std::string line) {
  if (trace_) trace_->push_back(fmt::format("{:>5}  {}", steps_, line));
}

std::uint32_t* Model::region_ptr(int rank, Region region, std::uint32_t offset) {
  RankMemory& m = memory_[static_cast<std::size_t>(rank)];
  std::vector<std::uint32_t>* v = nullptr;
  switch (region) {
    case Region::lamport: v = &m.lamport; break;
    case Region::ts_data: v = &m.ts_data; break;
    case Region::ts_gather: v = &m.ts_gather; break;
    case Region::ts_start: v = &m.ts_start; break;
    case Region::ts_end: v = &m.ts_end; break;
  }
  if (offset >= v->size()) return nullptr;
  return v->data() + offset;
}

// A vector store leaves its thread as pieces of the profile's granularity; each piece
// travels on its own and may be delayed (and, where the link allows, reordered).
void Model::issue_store(const Thread& t, int dst, Region region, std::uint32_t offset,
                        const std::uint32_t* values, int count, bool release) {
  Piece base{};
  base.thread = static_cast<std::int32_t>(&t - threads_.data());
  base.kernel = t.kernel;
  base.src_rank = t.rank;
  base.dst_rank = static_cast<std::uint8_t>(dst);
  base.block = t.block;
  base.region = region;
  base.release = release;
  base.fifo_key = static_cast<std::uint32_t>(base.thread * config_.ranks + dst);
  base.block_key = static_cast<std::uint32_t>(t.kernel * config_.blocks + t.block);
  if (granularity_bytes_ < 4) {  // torn: every element goes as two 16-bit halves
    for (int i = 0; i < count; ++i)
      for (std::uint8_t half = 1; half <= 2; ++half) {
        Piece& p = in_flight_.emplace_back(base);
        p.offset = offset + static_cast<std::uint32_t>(i);
        p.values[0] = values[i];
        p.count = 1;
        p.half = half;
        send_last_piece();
      }
    return;
  }
  const int per_piece = std::max(1, granularity_bytes_ / 4);
  for (int i = 0; i < count; i += per_piece) {
    Piece& p = in_flight_.emplace_back(base);
    p.offset = offset + static_cast<std::uint32_t>(i);
    p.count = static_cast<std::uint8_t>(std::min(per_piece, count - i));
    p.half = 0;
    for (int j = 0; j < p.count; ++j) p.values[j] = values[i + j];
    send_last_piece();
  }
}

// Puts the piece just added to in_flight_ on its way. Delivery rules: a release piece waits
// for every older piece of its block; a per-thread FIFO link (PCIe between GPUs) lets only
// the oldest piece of (thread, dst) go; anything else may go at once. The new piece is the
// youngest, so it may be held but holds none back.
void Model::send_last_piece() {
  Piece& p = in_flight_.back();
  std::int32_t& in_block = block_flying_[p.block_key];
  std::int32_t& on_link = fifo_flying_[p.fifo_key];
  const bool fifo_link =
      profile_.link_order == LinkOrder::per_thread_fifo && p.src_rank != p.dst_rank;
  p.held = 0;
  if (p.release && in_block > 0) p.held |= kHeldByBlock;
  if (fifo_link && on_link > 0) p.held |= kHeldByFifo;
  ++in_block;
  ++on_link;
  ++kernels_[static_cast<std::size_t>(p.kernel)].in_flight;
  if (p.held != 0) ++held_count_;
  else add_delivery_event(static_cast<int>(in_flight_.size()) - 1);
}

void Model::deliver(int index) {
  // The piece is used in place and erased afterwards: no copy of it per delivery.
  const auto piece = in_flight_.begin() + index;
  Kernel& kernel = kernels_[static_cast<std::size_t>(piece->kernel)];
  --kernel.in_flight;
  memory_events_ += piece->count;
  const int src_rank = piece->src_rank;
  const std::uint32_t block_key = piece->block_key, fifo_key = piece->fifo_key;
  const bool fifo_link =
      profile_.link_order == LinkOrder::per_thread_fifo && piece->src_rank != piece->dst_rank;
  --block_flying_[block_key];
  --fifo_flying_[fifo_key];
  const bool stored = store_piece(*piece);
  in_flight_.erase(piece);
  remove_delivery_event(index);
  if (held_count_ > 0) release_held_pieces(block_key, fifo_key, fifo_link);
  // A delivery changes only its kernel's in-flight count: nothing on the rank can
  // complete or launch before that count reaches zero.
  if (stored && kernel.in_flight == 0) refresh_rank(*this, src_rank);
}

// Writes a delivered piece into its destination's memory; false (and a violation) when it
// may not land there.
bool Model::store_piece(const Piece& p) {
  if (!memory_[p.dst_rank].initialised && p.region == Region::lamport) {
    fail(ViolationKind::early_push,
         fmt::format("rank {} call {} pushed into rank {}'s Lamport buffer before rank {} "
                     "initialised it (invariant 12)",
                     p.src_rank, threads_[static_cast<std::size_t>(p.thread)].call, p.dst_rank,
                     p.dst_rank));
    return false;
  }
  std::uint32_t* dst = region_ptr(p.dst_rank, p.region, p.offset + p.count - 1u);
  if (dst == nullptr) {
    fail(ViolationKind::invariant, fmt::format("store outside rank {}'s buffer", p.dst_rank));
    return false;
  }
  dst -= p.count - 1u;
  if (p.half == 0) {
    for (int j = 0; j < p.count; ++j) dst[j] = p.values[j];
  } else if (p.half == 1) {
    dst[0] = (dst[0] & 0xFFFF0000u) | (p.values[0] & 0x0000FFFFu);
  } else {
    dst[0] = (dst[0] & 0x0000FFFFu) | (p.values[0] & 0xFFFF0000u);
  }
  if (trace_)
    trace(fmt::format("link {}->{}: delivers {} piece of rank {} call {} to {} element {}{}",
                      p.src_rank, p.dst_rank, p.release ? "release-flag" : "store", p.src_rank,
                      threads_[static_cast<std::size_t>(p.thread)].call, region_name(p.region),
                      p.offset, p.half ? (p.half == 1 ? " (low half)" : " (high half)") : ""));
  return true;
}

void Model::init_rank(int rank) {
  RankMemory& m = memory_[static_cast<std::size_t>(rank)];
  std::fill(m.lamport.begin(), m.lamport.end(), fill_value_);
  m.initialised = true;  // a host memset: not counted as simulated memory events
  if (trace_)
    trace(fmt::format("rank {}: host fills its Lamport buffers with {}", rank,
                      describe_value(fill_value_)));
  for (int r = 0; r < config_.ranks; ++r) refresh_rank(*this, r);
}

// Stream order and PDL: kernel c+1 may start once kernel c triggered its dependents (PDL)
// or completed (no PDL). The first kernel starts after the host initialised the buffers:
// on every rank (an MPI barrier) or, with no-init-barrier, on its own rank only.
void Model::launch_ready_kernels(int rank) {
  const int calls = static_cast<int>(calls_.size());
  auto& launched = launched_count_[static_cast<std::size_t>(rank)];
  while (launched < calls) {
    bool ready;
    if (launched == 0) {
      ready = true;
      if (mutant_ == Mutant::no_init_barrier) {
        ready = memory_[static_cast<std::size_t>(rank)].initialised;
      } else {
        for (const auto& m : memory_) ready = ready && m.initialised;
      }
    } else {
      const Kernel& prev = kernels_[static_cast<std::size_t>(kernel_index(rank, launched - 1))];
      ready = profile_.pdl ? prev.threads_triggered == prev.threads_total : prev.complete;
    }
    if (!ready) return;
    Kernel& k = kernels_[static_cast<std::size_t>(kernel_index(rank, launched))];
    k.launched = true;
    // Its present threads (blocks below its grid) come first in its range.
    const int first_thread = thread_index(kernel_index(rank, launched), 0, 0);
    for (int i = first_thread; i < first_thread + k.threads_total; ++i)
      watch(i, threads_[static_cast<std::size_t>(i)].pc);
    rank_dirty_[static_cast<std::size_t>(rank)] = kDirtyAll;
    if (trace_) {
      const Kernel* prev =
          launched > 0 ? &kernels_[static_cast<std::size_t>(kernel_index(rank, launched - 1))]
                       : nullptr;
      trace(fmt::format("rank {}: kernel of call {} ({} x{}) launched{}", rank, launched,
                        k.spec.kind == CallKind::one_shot ? "one-shot" : "two-shot", k.spec.vectors,
                        prev && !prev->complete
                            ? fmt::format(" by PDL while call {} is still running", launched - 1)
                            : std::string{}));
    }
    ++launched;
  }
}

}  // namespace fusioncheck::sim

namespace fusioncheck::sim {

namespace {
// In Pc's order (model_internal.hpp).
constexpr const char* kLamportStepNames[] = {
    "wait",    "read_flag", "arrive",      "push",       "clear", "poll",
    "update",  "trigger",   "scatter",     "signal1",    "wait1", "reduce",
    "signal2", "wait2",     "read_gather", "empty_body", "done"};
static_assert(std::size(kLamportStepNames) == kPcDone + 1);
}  // namespace

std::optional<StepSite> Model::site_of(const Event& event) const {
  if (event.kind != EventKind::thread_step) return std::nullopt;
  const Thread& t = threads_[static_cast<std::size_t>(event.id)];
  return StepSite{t.rank, t.call, t.pc};
}

int Model::step_codes() const { return kPcDone + 1; }

std::string Model::step_name(int step) const {
  return step >= 0 && step < step_codes() ? kLamportStepNames[step] : "?";
}

}  // namespace fusioncheck::sim
