#pragma once
// The executable model of FlashInfer's MNNVL Lamport allreduce (trtllm_mnnvl_allreduce.cuh;
// docs/protocols.md "MNNVL Lamport protocol"), sized for a rack: up to 72 ranks.
//
// Each rank owns three Lamport buffers (each split into the call's stages: one for the
// one-shot kernel, scatter and broadcast for the two-shot one) and a flag block in its own
// memory: the current and dirty buffer indices, the dirty buffer's stage count, the bytes to
// clear per stage, and an arrival counter. A kernel reads the flags after its grid-dependency
// wait, stores its payload (the one-shot kernel through the multicast object into every rank's
// buffer, the two-shot kernel to the token's owner), arrives on the counter once per block,
// clears its own dirty buffer with the sizes the flags carry, polls its own buffer until no
// word of what it waits for is the -0 sentinel, and its first thread rotates the flags once
// every block arrived. A multicast store reaches each destination at its own time.
//
// Built for speed at 72 ranks: the enabled events are kept up to date as they change (a
// delivery re-examines only the threads polling its destination) instead of being listed
// anew at every step.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fusioncheck/sim/model.hpp"

namespace fusioncheck::sim {

class MnnvlModel final : public ProtocolModel {
 public:
  MnnvlModel(const SimConfig& config, const Profile& profile, Mutant mutant);

  void reset() override;
  std::span<const Event> enabled() override { return events_; }
  void execute(Event event) override;
  bool all_done() const override;
  void finish() override;
  const std::optional<Violation>& violation() const override { return violation_; }
  std::uint64_t steps() const override { return steps_; }
  std::uint64_t memory_events() const override { return memory_events_; }
  std::uint64_t step_bound() const override { return step_bound_; }
  void set_step_bound(std::uint64_t bound) override { step_bound_override_ = bound; }
  int actor_count() const override;
  void set_trace(std::vector<std::string>* trace) override { trace_ = trace; }
  std::optional<StepSite> site_of(const Event& event) const override;
  int step_codes() const override;
  std::string step_name(int step) const override;

  // The flag block of a rank's own memory (public for the tests of the invariants).
  struct Flags {
    std::uint32_t current = 0, dirty = 2, dirty_stages = 1;
    std::array<std::uint32_t, 2> clear_vectors{};  // per stage, in packed vectors
    std::uint32_t arrivals = 0;
  };
  // Words of a rank's memory: buffer b, stage s of `stages`, packed vector `vector`, element e.
  std::size_t word_offset(int buffer, int stage, int stages, int vector, int e) const;
  std::size_t buffer_words() const { return buffer_words_; }
  // Overwrites what a rank holds: the invariants' negative controls.
  void poke(int rank, std::size_t offset, std::uint32_t value) {
    memory_[static_cast<std::size_t>(rank)][offset] = value;
  }
  Flags& flags_of(int rank) { return flags_[static_cast<std::size_t>(rank)]; }

 private:
  // One thread moves one packed vector of one token (block = token, thread = vector).
  struct Thread {
    int kernel = 0, rank = 0, call = 0, token = 0, vec = 0;
    int program = 0;      // index into programs_
    std::uint8_t ip = 0;  // position in the program
    Flags seen;           // the flags as this thread read them
    // poll: the words awaited (`group` slots from `first_slot` of a stage) and how many of
    // them hold no sentinel now
    std::size_t poll_base = 0;
    int first_slot = 0, group = 0;
    int need = 0, ready = 0;
    int event = -1;  // position in events_, -1 when not enabled
  };
  struct Kernel {
    CallSpec spec;
    int first_thread = 0, threads = 0, done = 0, triggered = 0;
    std::vector<int> arrived;  // per block: threads that reached the arrival barrier
    bool complete = false;
  };
  struct Piece {
    int src, dst, kernel;
    std::uint32_t offset;
    std::uint32_t value;
    std::uint8_t hops;  // deliveries still to go (2 into another NVLink domain)
    int event = -1;
  };

  // steps (mnnvl_steps.cpp)
  void build_programs();
  int pc(const Thread& t) const { return programs_[static_cast<std::size_t>(t.program)][t.ip]; }
  bool thread_enabled(const Thread& t) const;
  void step(int id);
  void advance(int id);
  void read_flags(Thread& t);
  void push(Thread& t, bool two_shot_scatter);
  void arrive(Thread& t);
  void clear_dirty(Thread& t, int stage);
  void start_poll(Thread& t);
  void consume(Thread& t);
  void broadcast(Thread& t);
  void update_flags(Thread& t);
  std::uint32_t sanitized(std::uint32_t value) const;
  std::uint32_t expected(const Thread& t, int slot, int e) const;

  // memory and events (mnnvl_model.cpp)
  void write(int rank, std::size_t offset, std::uint32_t value);
  void store(const Thread& t, int dst, std::size_t offset, std::uint32_t value);
  void multicast(const Thread& t, std::size_t offset, std::uint32_t value);
  void refresh(int id);
  void refresh_kernel(int kernel);
  void add_event(Event event, int& position);
  void remove_event(int& position);
  void deliver(int piece);
  void complete_if_done(int kernel);
  bool awaits(const Thread& t, std::size_t offset) const;
  // Word k of the vector in slot i of what thread t polls.
  std::size_t poll_word(const Thread& t, int i, int k) const;
  void fail(ViolationKind kind, std::string text);
  void trace(const std::string& line);
  std::string who(const Thread& t) const;
  std::string describe_word(std::size_t offset) const;
  std::string describe(std::uint32_t value) const;
  std::string awaited(const Thread& t) const;
  void check_invariants();
  int stages_of(const CallSpec& spec) const;
  int kernel_index(int rank, int call) const {
    return rank * static_cast<int>(calls_.size()) + call;
  }
  std::uint32_t word(int rank, std::size_t offset) const {
    return memory_[static_cast<std::size_t>(rank)][offset];
  }

  SimConfig config_;
  Profile profile_;
  Mutant mutant_;
  std::vector<CallSpec> calls_;
  std::size_t buffer_words_ = 0;  // one Lamport buffer, every stage
  int buffer_vectors_ = 0;
  int buffers_ = 3;
  std::vector<std::vector<std::uint8_t>> programs_;
  std::vector<std::vector<std::uint32_t>> memory_;
  std::vector<Flags> flags_;
  std::vector<Kernel> kernels_;
  std::vector<Thread> threads_;
  std::vector<Piece> pieces_;
  std::vector<int> free_pieces_;
  std::vector<std::vector<int>> pollers_;  // per rank: threads polling its memory
  std::vector<Event> events_;
  std::optional<Violation> violation_;
  std::vector<std::string>* trace_ = nullptr;
  std::uint64_t steps_ = 0, memory_events_ = 0, step_bound_ = 0, step_bound_override_ = 0;
};

}  // namespace fusioncheck::sim
