#pragma once
// The executable model of SGLang's push plane (docs/protocols.md "SGLang push protocol";
// sglang's custom_all_reduce.cuh, all_reduce_fusion.cuh and sgl_kernel/distributed/
// communicator.cuh). Each rank owns a plane of two phases x one slot per producer rank, all
// +0 (the empty marker) between calls, and a rank-local phase counter per block. A producer
// pushes its payload (+0 words remapped to -0) into its slot of every consumer's current
// phase; a consumer polls its slots until no +0 is left, reduces, restores the +0 markers
// and flips the counter. One model thread moves one vector; the calls are launched with PDL.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusioncheck/sim/thread_model.hpp"

namespace fusioncheck::sim {

class SglangModel final : public ThreadModel {
 public:
  SglangModel(const SimConfig& config, const Profile& profile, Mutant mutant);

  void reset() override;
  bool all_done() const override;
  void finish() override;
  int actor_count() const override;
  std::optional<StepSite> site_of(const Event& event) const override;
  int step_codes() const override;
  std::string step_name(int step) const override;

  // Where vector `idx` of producer `src`'s slot in phase `phase` is, in a rank's plane.
  std::size_t slot_offset(int phase, int src, int idx) const;
  std::size_t plane_words() const { return plane_words_; }
  // Overwrites one word of a rank's plane or a phase counter: the invariants' negative controls.
  void poke(int rank, std::size_t offset, std::uint32_t value) {
    plane_[static_cast<std::size_t>(rank)][offset] = value;
  }
  void poke_counter(int rank, int counter, std::uint32_t value) {
    counters_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(counter)] = value;
  }
  void poke_outputs(int rank, int call, int idx, int times) {
    kernels_[static_cast<std::size_t>(kernel_index(rank, call))]
        .outputs[static_cast<std::size_t>(idx)] = times;
  }

 private:
  // One thread: a vector of a generic kernel's block (idx < 0: none in this call), or one
  // block of a fused kernel's row cluster (row, cluster rank; the bumper's row is the call's
  // token count).
  struct Thread {
    int kernel, rank, call, block, tid, idx;
    int row = -1, cluster_rank = 0;
    std::uint8_t pc = 0;
    bool waited = false;      // past its grid-dependency wait
    std::uint32_t epoch = 0;  // the phase counter as read at the epoch step
    int phase = 0;            // the phase it uses
  };
  struct Kernel {
    CallSpec spec;
    int threads = 0, done = 0, triggered = 0, in_flight = 0;
    bool complete = false;
    std::vector<int> block_threads, synced;  // per block: threads, and how many reached the sync
    std::vector<int> cluster_arrived;        // per fused row: its blocks that arrived
    std::vector<int> outputs;                // per vector: how often it was output
  };

  // steps (sglang_steps.cpp)
  std::vector<std::uint8_t> program(const Thread& t) const;
  bool thread_enabled(const Thread& t) const;
  void step(Thread& t);
  void step_epoch(Thread& t);
  void step_push(const Thread& t);
  bool polled_arrived(const Thread& t) const;
  void step_reduce(const Thread& t);
  void step_owner_reduce(const Thread& t);
  void step_gather(const Thread& t);
  void step_rearm(const Thread& t);
  void step_flip(const Thread& t);
  void advance(Thread& t);
  // Which counter a thread's phase comes from, and the vectors a two-shot call's chunk holds.
  int counter_of(const Thread& t) const;
  int chunk_of(const CallSpec& spec) const {
    return (spec.vectors + config_.ranks - 1) / config_.ranks;
  }
  std::uint32_t pushed(std::uint32_t value) const;  // the producer's +0 remap
  std::uint32_t read(const Thread& t, std::size_t offset) const;
  bool check_read(const Thread& t, const std::string& what, std::size_t offset,
                  std::uint32_t expected);
  void output(const Thread& t, int idx);

  // memory
  void issue(const Thread& t, int dst, std::size_t offset, std::vector<std::uint32_t> values);
  void deliver(std::size_t index) override;
  void complete_if_done(int kernel);
  int thread_count() const override { return static_cast<int>(threads_.size()); }
  bool thread_enabled_at(int i) const override {
    return thread_enabled(threads_[static_cast<std::size_t>(i)]);
  }
  void step_thread(int i) override { step(threads_[static_cast<std::size_t>(i)]); }
  std::uint32_t word(int rank, std::size_t offset) const {
    return plane_[static_cast<std::size_t>(rank)][offset];
  }

  // reporting
  std::string who(const Thread& t) const;
  std::string describe_word(std::size_t offset) const;
  std::string awaited(const Thread& t) const;
  void check_invariants();

  const Kernel& kernel_of(const Thread& t) const {
    return kernels_[static_cast<std::size_t>(t.kernel)];
  }
  int kernel_index(int rank, int call) const {
    return rank * static_cast<int>(calls_.size()) + call;
  }

  SimConfig config_;
  Profile profile_;
  Mutant mutant_;
  std::vector<CallSpec> calls_;
  int slot_vectors_ = 1, piece_elems_ = 1;
  std::size_t plane_words_ = 0;
  std::vector<std::vector<std::uint32_t>> plane_;     // [rank][word]
  std::vector<std::vector<std::uint32_t>> counters_;  // [rank][block]: the phase counters
  std::vector<Kernel> kernels_;
  std::vector<Thread> threads_;
};

}  // namespace fusioncheck::sim
