#pragma once
// The executable model of vLLM's custom allreduce barrier protocol (docs/protocols.md "vLLM
// barrier protocol"; FlashInfer ships it as vllm_custom_all_reduce.cuh). Each rank owns a
// Signal (per block: its own barrier counts, and two sets of counters its peers write), a
// registered input buffer its host rewrites before every call, and the temporary buffer of
// the two-stage kernel. A barrier: lane p of a block adds one to its count, stores the count
// into peer p's counter of this rank (in the set count % 2) and waits until peer p's store
// of the same count is in its own Signal. vLLM's own header today (SimConfig::vllm_barrier
// start_end) keeps one flag per block instead: the lanes read it, store flag + 1 into the
// start or the end array, and thread 0 publishes the new flag. One model thread moves one
// vector; the grid is sized from the call, every block's counters persist across calls.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fusioncheck/sim/thread_model.hpp"

namespace fusioncheck::sim {

class VllmModel final : public ThreadModel {
 public:
  VllmModel(const SimConfig& config, const Profile& profile, Mutant mutant);

  void reset() override;
  bool all_done() const override;
  void finish() override;
  int actor_count() const override;
  std::optional<StepSite> site_of(const Event& event) const override;
  int step_codes() const override;
  std::string step_name(int step) const override;

  // Words of a rank's memory (public for the tests of the layout and the invariants).
  std::size_t counter_offset(int set, int block, int peer) const;
  std::size_t input_offset(int idx) const;
  std::size_t tmp_offset(int idx) const;
  // Overwrites one word of a rank's memory: the invariants' negative controls.
  void poke(int rank, std::size_t offset, std::uint32_t value) {
    memory_[static_cast<std::size_t>(rank)][offset] = value;
  }
  void poke_flag(int rank, int block, std::uint32_t value) {
    block_flag_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(block)] = value;
  }
  void poke_count(int rank, int block, int lane, std::uint32_t value) {
    own_count_[static_cast<std::size_t>(rank)]
              [static_cast<std::size_t>(block * config_.ranks + lane)] = value;
  }

 private:
  // A thread is a data thread (lane < 0) or the barrier lane of peer `lane` (threadIdx.x <
  // ngpus in the header). Both run the block's __syncthreads.
  struct Thread {
    int kernel, rank, call, block, lane, slot;  // slot: b * vectors_per_block + tid
    std::uint8_t pc = 0;
    std::uint32_t awaited = 0;  // a lane's count of its current barrier
    int set = 0;
  };
  struct Kernel {
    CallSpec spec;
    int grid = 0, threads = 0, done = 0, in_flight = 0;
    bool complete = false;
    // per block: threads present, and how many reached each __syncthreads of the program
    std::vector<int> block_threads;
    std::vector<std::vector<int>> synced;
  };

  // steps (vllm_steps.cpp)
  std::vector<std::uint8_t> program(const Thread& t) const;
  std::vector<std::uint8_t> start_end_program(const Thread& t) const;
  bool thread_enabled(const Thread& t) const;
  void step(Thread& t);
  void step_count(Thread& t);
  void step_read_flag(Thread& t);
  void step_publish(const Thread& t);
  void step_reduce(const Thread& t);
  void step_scatter(const Thread& t);
  void step_gather(const Thread& t);
  void advance(Thread& t);
  void write_inputs(int rank, int call);
  void complete_if_done(int kernel);
  bool fenced(int pc) const;                   // a barrier whose counter stores are st.release
  int counter_set(std::uint32_t count) const;  // which of the two sets a barrier's count uses
  bool start_end() const { return config_.vllm_barrier == VllmBarrier::start_end; }
  std::uint32_t read(const Thread& t, int rank, std::size_t offset) const;

  // memory
  void issue(const Thread& t, int dst, std::size_t offset, std::vector<std::uint32_t> values,
             bool release);
  void deliver(std::size_t index) override;
  // ThreadModel
  int thread_count() const override { return static_cast<int>(threads_.size()); }
  bool thread_enabled_at(int i) const override {
    return thread_enabled(threads_[static_cast<std::size_t>(i)]);
  }
  void step_thread(int i) override { step(threads_[static_cast<std::size_t>(i)]); }
  std::uint32_t word(int rank, std::size_t offset) const {
    return memory_[static_cast<std::size_t>(rank)][offset];
  }

  // reporting
  std::string who(const Thread& t) const;
  std::string describe_word(std::size_t offset) const;
  std::string awaited(const Thread& t) const;
  bool check_read(const Thread& t, const char* what, int src, std::size_t offset,
                  std::uint32_t expected);
  void check_invariants();

  const Kernel& kernel_of(const Thread& t) const {
    return kernels_[static_cast<std::size_t>(t.kernel)];
  }
  int kernel_index(int rank, int call) const {
    return rank * static_cast<int>(calls_.size()) + call;
  }
  // The two-stage kernel's part of rank r: [start, end) of the call's vectors.
  int part_start(int rank, int vectors) const { return rank * (vectors / config_.ranks); }
  int part_end(int rank, int vectors) const {
    return rank == config_.ranks - 1 ? vectors
                                     : part_start(rank, vectors) + vectors / config_.ranks;
  }

  SimConfig config_;
  Profile profile_;
  Mutant mutant_;
  std::vector<CallSpec> calls_;
  int max_vectors_ = 1, piece_elems_ = 1;
  std::size_t input_base_ = 0, tmp_base_ = 0, words_ = 0;
  std::vector<std::vector<std::uint32_t>> memory_;
  std::vector<std::vector<std::uint32_t>> own_count_;  // [rank][block * ranks + lane]
  // start_end: each block's flag ([rank][block]), and the value a block's lanes read at each
  // barrier of a kernel when they read it in one step ([kernel][block * 2 + start 0 / end 1]).
  std::vector<std::vector<std::uint32_t>> block_flag_;
  std::vector<std::vector<std::optional<std::uint32_t>>> flag_seen_;
  std::vector<Kernel> kernels_;
  std::vector<Thread> threads_;
};

}  // namespace fusioncheck::sim
