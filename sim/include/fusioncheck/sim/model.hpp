#pragma once
// The executable model: ranks x kernels x blocks x threads as explicit state machines, the
// memory of every rank, and the stores in flight between them. The model does not choose:
// it lists the enabled events and executes the one a scheduler picked. A spin is not an
// event; a spinning thread is simply not enabled until what it polls for is visible.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fusioncheck/protocol/mutants.hpp"
#include "fusioncheck/protocol/workspace.hpp"
#include "fusioncheck/sim/config.hpp"

namespace fusioncheck::sim {

using protocol::Mutant;

enum class ViolationKind : std::uint8_t {
  wrong_value,     // a consumed value does not carry the expected tag
  deadlock,        // every thread spins and nothing is in flight
  step_bound,      // livelock guard: too many steps
  invariant,       // a docs/design.md invariant fails at quiescence
  output_missing,  // a kernel completed without writing an output (NaN canary)
  early_push,      // a push reached a rank that had not initialised its buffers
};
const char* violation_kind_name(ViolationKind kind);

struct Violation {
  ViolationKind kind;
  std::string text;
};

enum class EventKind : std::uint8_t { deliver, thread_step, init };
struct Event {
  EventKind kind;
  std::int32_t id;     // deliver: index into in-flight; thread_step: thread; init: rank
  std::int32_t actor;  // PCT actor and "who ran last" for the default schedule
};

// Memory regions of one rank, all shared with peers except outputs and control block.
enum class Region : std::uint8_t { lamport, ts_data, ts_gather, ts_start, ts_end };

// One piece of a store on its way to a rank's memory. A piece covers `count` whole 32-bit
// elements, or one 16-bit half of one element (torn stores).
struct Piece {
  std::int32_t thread;      // issuing thread
  std::int32_t kernel;      // issuing kernel (rank * calls + call)
  std::uint32_t fifo_key;   // thread * ranks + dst: the per-thread FIFO it travels in
  std::uint32_t block_key;  // kernel * blocks + block: what a release waits for
  std::uint32_t offset;     // first element
  std::uint32_t values[kMaxElemsPerVector];
  std::uint8_t count;
  std::uint8_t half;  // 0 whole elements, 1 low 16 bits, 2 high 16 bits
  std::uint8_t src_rank, dst_rank, block;
  Region region;
  bool release;       // st.release: may not overtake older stores of its block
  std::uint8_t held;  // kHeldBy* bits: why it may not be delivered yet (0: it may)
};
// A release piece behind an older piece of its block; a piece behind an older piece of its
// per-thread FIFO link.
inline constexpr std::uint8_t kHeldByBlock = 1, kHeldByFifo = 2;

struct Thread {
  std::int32_t kernel;
  std::uint16_t call;
  std::uint8_t rank, block;
  std::uint16_t tid;
  std::int32_t idx;  // vector index within the rank's data
  std::uint8_t pc = 0;
  std::uint8_t data_buffer = 0, clear_buffer = 0;
  std::uint32_t flag_seen = 0;  // f (one-shot) or the new two-shot flag
  std::uint32_t clear_vectors = 0;
  bool present = true;  // false: its block is not in this rank's grid
};

struct Kernel {
  CallSpec spec;
  int grid_blocks = 0;
  int threads_total = 0;
  int threads_triggered = 0;
  int threads_done = 0;
  int in_flight = 0;
  bool launched = false;
  bool complete = false;
};

struct RankMemory {
  std::vector<std::uint32_t> lamport;    // 3 buffers x (ranks * max_vectors * E)
  std::vector<std::uint32_t> ts_data;    // ranks slots x max_vectors * E (+ the gather
                                         // region, with twoshot-gather-overlap)
  std::vector<std::uint32_t> ts_gather;  // max_vectors * E
  std::vector<std::uint32_t> ts_start;   // blocks x ranks barrier flags
  std::vector<std::uint32_t> ts_end;
  protocol::ControlBlock control;
  bool initialised = false;
};

// Where a thread's next step is: its rank, the call (counted over graph replays) and the step
// code (the thread's program counter, a value below ProtocolModel::step_codes()).
struct StepSite {
  int rank = 0;
  int call = 0;
  int step = 0;
};

// What the schedulers, the minimiser and the counterexamples drive: one protocol's model.
// The model does not choose: it lists the enabled events and executes the one a scheduler
// picked.
class ProtocolModel {
 public:
  virtual ~ProtocolModel() = default;
  virtual void reset() = 0;
  // Enabled events in a fixed order, so that a schedule is a list of indices into this
  // list. The span stays valid until the next execute().
  virtual std::span<const Event> enabled() = 0;
  // Takes the event by value: executing it changes the list the event came from.
  virtual void execute(Event event) = 0;
  // After enabled() returned an empty list: true when every kernel completed.
  virtual bool all_done() const = 0;
  // Finishes the run: a deadlock when not all done, else the invariants at quiescence.
  virtual void finish() = 0;
  virtual const std::optional<Violation>& violation() const = 0;
  virtual std::uint64_t steps() const = 0;
  virtual std::uint64_t memory_events() const = 0;
  virtual std::uint64_t step_bound() const = 0;
  // Replaces the livelock guard's bound from the next reset() on (0: the default).
  virtual void set_step_bound(std::uint64_t bound) = 0;
  // PCT actor of an event: a thread, a link (src,dst) or a rank's init.
  int actor_of(const Event& event) const { return event.actor; }
  virtual int actor_count() const = 0;
  // When set, every executed event appends one readable line.
  virtual void set_trace(std::vector<std::string>* trace) = 0;
  // The step a thread's event takes (nothing for a delivery or a rank's init), and how many
  // step codes the protocol has: what the held-rank scheduler holds a rank at.
  virtual std::optional<StepSite> site_of(const Event& event) const = 0;
  virtual int step_codes() const = 0;
  // The name of a step code, for reports ("push", "poll").
  virtual std::string step_name(int step) const = 0;
};

// The model of the configuration's protocol (protocol_of). Throws std::invalid_argument with
// validate()'s reason, or when that model does not build the mutant.
std::unique_ptr<ProtocolModel> make_model(const SimConfig& config, const Profile& profile,
                                          Mutant mutant);

// The Lamport protocol of our kernels (one-shot and two-shot calls).
class Model final : public ProtocolModel {
 public:
  Model(const SimConfig& config, const Profile& profile, Mutant mutant);

  void reset() override;
  // Deliveries first, then threads by rank, call, block, thread.
  std::span<const Event> enabled() override;
  void execute(Event event) override;
  bool all_done() const override;
  void finish() override;

  const std::optional<Violation>& violation() const override { return violation_; }
  std::uint64_t steps() const override { return steps_; }
  std::uint64_t memory_events() const override { return memory_events_; }
  std::uint64_t step_bound() const override { return step_bound_; }
  // Lets a test show that the step-bound checker fires.
  void set_step_bound(std::uint64_t bound) override { step_bound_override_ = bound; }
  int actor_count() const override;
  void set_trace(std::vector<std::string>* trace) override { trace_ = trace; }
  std::optional<StepSite> site_of(const Event& event) const override;
  int step_codes() const override;
  std::string step_name(int step) const override;

  const SimConfig& config() const { return config_; }
  const Profile& profile() const { return profile_; }
  Mutant mutant() const { return mutant_; }

 private:
  friend struct Checker;
  friend void refresh_rank(Model& model, int rank);

  // state
  SimConfig config_;
  Profile profile_;
  Mutant mutant_;
  std::vector<CallSpec> calls_;
  int max_vectors_ = 0;
  int granularity_bytes_ = 4;
  std::uint32_t fill_value_ = 0;  // what init and clear store (the sentinel pattern)
  std::vector<RankMemory> memory_;
  std::vector<Kernel> kernels_;               // rank * calls + call
  std::vector<Thread> threads_;               // kernel * blocks * V + block * V + tid
  std::vector<std::int32_t> block_pass_;      // (kernel * blocks + block) * kPhases + phase
  std::vector<std::uint8_t> output_written_;  // kernel * max_vectors + idx (NaN canary)
  std::vector<Piece> in_flight_;              // in issue order
  // in-flight pieces per Piece::block_key and per Piece::fifo_key, and how many are held
  std::vector<std::int32_t> block_flying_, fifo_flying_;
  int held_count_ = 0;
  std::vector<int> first_active_, launched_count_;  // per rank
  std::uint64_t steps_ = 0, memory_events_ = 0, step_bound_ = 0, step_bound_override_ = 0;
  std::optional<Violation> violation_;
  std::vector<std::string>* trace_ = nullptr;

  // The enabled list, kept up to date as events execute instead of being rebuilt every
  // step: [deliverable pieces by in-flight index][init by rank][ready threads by index].
  std::vector<Event> events_;
  int delivery_events_ = 0, init_events_ = 0;  // sizes of the first two sections
  std::vector<std::uint8_t> ready_;            // per thread: it has an event in events_
  std::vector<std::uint8_t> rank_dirty_;       // per rank: kClean, kDirtySome or kDirtyAll
  // per rank, with kDirtySome: what changed (kChanged* bits), so that only the threads
  // whose readiness reads it are evaluated again
  std::vector<std::uint8_t> rank_changes_;
  // per rank and kChanged* bit: the launched threads whose readiness reads that state (one
  // bit per pc), so that a change evaluates only them; watch_slot_: a thread's place there
  std::vector<std::vector<std::int32_t>> watchers_;
  std::vector<std::int32_t> watch_slot_;
  std::uint8_t step_changes_ = 0;  // kChanged* bits: rank state the last thread step changed

  // Where two-shot data lives, in elements (steps.cpp). Correct: the scatter slots (slot r
  // at r * max_vectors) and the gather region are separate arrays. twoshot-gather-overlap:
  // one array, the layout of the bug it models: slot r at r * chunk (chunk = ceil(vectors /
  // N) of this call) and the gather region right after this call's N slots.
  struct TwoShotPlace {
    Region region;
    std::uint32_t offset;
  };
  TwoShotPlace scatter_place(int slot, int idx, int call_vectors) const;
  TwoShotPlace gather_place(int idx, int call_vectors) const;

  // memory and links (model.cpp)
  std::uint32_t* region_ptr(int rank, Region region, std::uint32_t offset);
  std::size_t region_size(Region region) const;
  void issue_store(const Thread& t, int dst, Region region, std::uint32_t offset,
                   const std::uint32_t* values, int count, bool release);
  void send_last_piece();
  void deliver(int index);
  void add_delivery_event(int index);
  void remove_delivery_event(int index);
  void release_held_pieces(std::uint32_t block_key, std::uint32_t fifo_key, bool fifo_link);
  void set_ready(int thread_index, bool ready) {
    if (ready_[static_cast<std::size_t>(thread_index)] != static_cast<std::uint8_t>(ready))
      toggle_ready(thread_index);
  }
  void toggle_ready(int thread_index);
  std::vector<std::int32_t>& watchers_of(int thread_index, std::uint8_t bit);
  void watch(int thread_index, std::uint8_t pc);
  void unwatch(int thread_index, std::uint8_t pc);
  bool store_piece(const Piece& piece);
  void launch_ready_kernels(int rank);
  bool thread_enabled(const Thread& t) const;
  void step_thread(int thread_index);
  // The steps of step_thread, one per pc (steps.cpp). Those returning bool return whether
  // the thread triggered its dependents in the step.
  bool run_step(Thread& t, Kernel& kernel, bool late, const std::string& who);
  bool step_empty_body(const std::string& who);
  bool step_wait(const Thread& t, bool late, const std::string& who);
  void step_read_flag(Thread& t, const Kernel& kernel, const std::string& who);
  void step_arrive(const Thread& t, const Kernel& kernel, const std::string& who);
  void step_push(const Thread& t, const Kernel& kernel, const std::string& who);
  void step_clear(const Thread& t, const Kernel& kernel, const std::string& who);
  const RankMemory& polled_memory(int rank, int r) const;
  void step_poll(const Thread& t, const Kernel& kernel, const std::string& who);
  void step_update(const Thread& t, const Kernel& kernel, const std::string& who);
  bool step_trigger(const std::string& who);
  void step_scatter(const Thread& t, const Kernel& kernel, const std::string& who);
  void step_signal(const Thread& t, const std::string& who);
  void step_wait_flags(const Thread& t, const std::string& who);
  void step_reduce(const Thread& t, const Kernel& kernel, const std::string& who);
  void step_read_gather(const Thread& t, const Kernel& kernel, const std::string& who);
  void finish_step(Thread& t, Kernel& kernel, bool late, bool triggered_now);
  void update_one_shot_state(int rank, int size, const std::string& who);
  void init_rank(int rank);
  void fail(ViolationKind kind, std::string text);
  void trace(std::string line);

 public:
  // numbers used by the steps, the checker and the report
  static constexpr int kPhases = 4;
  static constexpr std::uint8_t kClean = 0, kDirtySome = 1, kDirtyAll = 2;
  // The rank state thread_enabled reads, one bit per kind (see depends_on_changes).
  static constexpr std::uint8_t kChangedLamport = 1, kChangedStartFlags = 2, kChangedEndFlags = 4,
                                kChangedBlockPass = 8, kChangedCounters = 16, kChangedTriggers = 32;
  static constexpr int kChangeKinds = 6;
  int grid_of(int rank) const;
  // A one-shot grid of one block updates the state when it arrives (step 7 at step 2, as
  // the kernel does): its one block is every block. Mutants keep the counter. (Under a
  // mutant of the two-shot path alone, the GPU suite runs a correct one-shot, which takes
  // this path while the sim counts: the same end state.)
  bool updates_at_arrival(const Kernel& kernel) const {
    return mutant_ == Mutant::none && kernel.spec.kind == CallKind::one_shot &&
           kernel.grid_blocks == 1;
  }
  int kernel_index(int rank, int call) const {
    return rank * static_cast<int>(calls_.size()) + call;
  }
  int thread_index(int kernel, int block, int tid) const {
    return (kernel * config_.blocks + block) * config_.vectors_per_block + tid;
  }
  std::uint32_t lamport_stride() const {  // elements per Lamport buffer
    return static_cast<std::uint32_t>(config_.ranks * max_vectors_ * config_.elems_per_vector);
  }
  const std::vector<CallSpec>& calls() const { return calls_; }
  const std::vector<RankMemory>& memory() const { return memory_; }
  const std::vector<Thread>& threads() const { return threads_; }
  const std::vector<Kernel>& kernels() const { return kernels_; }
  const std::vector<Piece>& in_flight() const { return in_flight_; }
  std::uint32_t fill_value() const { return fill_value_; }
  bool output_written(int kernel, int idx) const {
    return output_written_[static_cast<std::size_t>(kernel * max_vectors_ + idx)] != 0;
  }
};

}  // namespace fusioncheck::sim
