#pragma once
// The executable model of FlashInfer's PCIe allreduce protocol (docs/protocols.md "PCIe
// sentinel protocol"; pcie_ipc_all_reduce.cuh): sentinel kernels that stage in one of two
// scratch regions, each double-buffered by a rank-local {epoch, arrival} pair, poll for "not
// +0" and reset what they consumed; and barrier kernels that leave raw payload in the block
// region. One model thread moves one vector; grids are sized from the call (a change of size
// changes which block moves which vector, as the header's grid-stride loops do).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fusioncheck/sim/thread_model.hpp"

namespace fusioncheck::sim {

class PcieModel final : public ThreadModel {
 public:
  PcieModel(const SimConfig& config, const Profile& profile, Mutant mutant);

  void reset() override;
  bool all_done() const override;
  void finish() override;
  int actor_count() const override;
  std::optional<StepSite> site_of(const Event& event) const override;
  int step_codes() const override;
  std::string step_name(int step) const override;

  // The header's ScratchRegion values.
  static constexpr int kBlockRegion = 0, kPackRegion = 1;
  // Words of a rank's slab (public for the tests of the layout).
  std::size_t scratch_offset(int region, int half, int slot, int idx, int call_vectors) const;
  std::size_t epoch_offset(int region) const;
  std::size_t arrival_offset(int region) const { return epoch_offset(region) + 1; }
  int region_of(CallKind kind) const;
  std::size_t generation_offset(int block) const {
    return gen_base_ + static_cast<std::size_t>(block);
  }
  // Overwrites one word of a rank's slab: the quiescence checks' negative controls.
  void poke(int rank, std::size_t offset, std::uint32_t value) {
    memory_[static_cast<std::size_t>(rank)][offset] = value;
  }

 private:
  struct Thread {
    int kernel, rank, call, block, tid, idx;
    std::uint8_t pc = 0;
    int half = 0;
  };
  struct Kernel {
    CallSpec spec;
    int grid = 0, threads = 0, triggered = 0, done = 0, in_flight = 0;
    bool launched = false, complete = false;
    // per block: threads present (their vector is in the call), and how many passed a step
    std::vector<int> block_present, block_reads, block_arrived, block_pushed, block_read_raw;
  };

  // steps
  bool thread_enabled(const Thread& t) const;
  void step(Thread& t);
  void step_read(Thread& t);
  void step_arrive(const Thread& t);
  void step_push(const Thread& t);
  void step_consume(Thread& t);
  void step_reset(const Thread& t);
  void step_push_gather(const Thread& t);
  void step_signal(const Thread& t, int phase);
  void step_read_raw(const Thread& t);
  void advance(Thread& t);
  std::vector<std::uint8_t> program(const Thread& t) const;
  std::uint32_t sanitised_input(int call, int src, int idx, int elem) const;

  // memory
  void issue(const Thread& t, int dst, std::size_t offset, const std::vector<std::uint32_t>& v,
             bool release);
  void deliver(std::size_t index) override;
  // ThreadModel
  int thread_count() const override { return static_cast<int>(threads_.size()); }
  bool thread_enabled_at(int i) const override {
    return thread_enabled(threads_[static_cast<std::size_t>(i)]);
  }
  void step_thread(int i) override { step(threads_[static_cast<std::size_t>(i)]); }
  std::uint32_t& word(int rank, std::size_t offset) { return memory_[rank][offset]; }
  std::uint32_t word(int rank, std::size_t offset) const { return memory_[rank][offset]; }

  // reporting
  std::string who(const Thread& t) const;
  std::string describe_word(std::size_t offset) const;  // "pack region half 1 slot of rank 0 ..."
  std::string awaited(const Thread& t) const;
  void check_invariants();

  // helpers
  const Kernel& kernel_of(const Thread& t) const { return kernels_[t.kernel]; }
  int owner_of(int idx) const { return idx % config_.ranks; }
  int kernel_index(int rank, int call) const {
    return rank * static_cast<int>(calls_.size()) + call;
  }
  bool unwritten(std::uint32_t bits) const;
  std::vector<int> consumed_slots(const Thread& t) const;
  std::size_t consumed_offset(const Thread& t, int slot, int half) const;
  std::size_t barrier_offset(int phase, int block, int peer) const;
  bool barrier_reached(const Thread& t, int phase) const;

  SimConfig config_;
  Profile profile_;
  Mutant mutant_;
  std::vector<CallSpec> calls_;
  int max_vectors_ = 1, piece_elems_ = 1;
  std::size_t scratch_base_[2] = {0, 0}, state_base_ = 0, parity_base_ = 0, gen_base_ = 0,
              barrier_base_ = 0, words_ = 0;
  std::vector<std::vector<std::uint32_t>> memory_;
  std::vector<Kernel> kernels_;
  std::vector<Thread> threads_;
};

}  // namespace fusioncheck::sim
