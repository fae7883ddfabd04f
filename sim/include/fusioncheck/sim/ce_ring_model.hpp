#pragma once
// The executable model of the copy-engine ring of FlashInfer's PCIe allreduce
// (docs/protocols.md "Copy-engine ring"; pcie_ipc_ce_ring.cuh, ce_ring_all_reduce_flat). A call
// is what the host enqueues on three streams of each rank: the caller's stream (the adds, the
// flag waits, the all-gather landing copies, the end-of-call handshake), a copy stream (the
// copy engine's copies into the next rank's landing slots) and a flag stream (one-thread
// kernels publishing a monotonic flag to the next rank), joined by events. With stream memory
// operations the copy stream writes a binary flag after each copy and the caller's stream
// waits for it and clears it. One model thread is one stream; a copy's words travel as stores.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusioncheck/sim/thread_model.hpp"

namespace fusioncheck::sim {

class CeRingModel final : public ThreadModel {
 public:
  CeRingModel(const SimConfig& config, const Profile& profile, Mutant mutant);

  void reset() override;
  bool all_done() const override;
  void finish() override;
  int actor_count() const override;
  std::optional<StepSite> site_of(const Event& event) const override;
  int step_codes() const override;
  std::string step_name(int step) const override;

  // A word of a rank's memory, and its overwrite: the invariants' negative controls.
  std::size_t flag_offset(int slot) const { return flags_base_ + static_cast<std::size_t>(slot); }
  std::size_t binary_offset(int slot) const {
    return binary_base_ + static_cast<std::size_t>(slot);
  }
  void poke(int rank, std::size_t offset, std::uint32_t value) {
    memory_[static_cast<std::size_t>(rank)][offset] = value;
  }
  int handshake_slot() const { return 2 * (config_.ranks - 1) * kMaxPieces; }

  static constexpr int kMaxPieces = 4;  // kCeMaxPieces

 private:
  enum class OpKind : std::uint8_t {
    produce,       // the caller's producer writes the call's input (caller's stream)
    record,        // cudaEventRecord
    wait_event,    // cudaStreamWaitEvent
    copy,          // cudaMemcpyAsync: issued, then complete once every word landed
    publish,       // ce_publish_flag_kernel: the next count into a peer's flag
    wait_flag,     // ce_wait_flag_kernel: spin until the own flag reaches the count
    binary_write,  // cuStreamWriteValue32(flag, 1) to a peer
    binary_wait,   // the binary wait-clear kernel: spin until 1, store 0
    add,           // ce_add_kernel: out = input + landed (reduce-scatter)
    end_check,     // after the join and the handshake: the caller reads the output
  };
  struct Op {
    OpKind kind;
    int call = 0;
    int event = -1;                // record / wait_event: the event instance
    int peer = -1;                 // copy, publish, binary_write: the rank written
    int slot = -1;                 // flag slot; copy: the landing slot it fills
    std::size_t src = 0, dst = 0;  // word offsets (copy: source here, destination at peer)
    int words = 0;
    int chunk = -1, piece = -1;  // add / copy: what the words carry
    std::uint32_t mask = 0;      // add / landing copy: the ranks summed in what is read
  };
  struct Stream {
    int rank = 0, which = 0;  // 0 caller's, 1 copy, 2 flag
    std::vector<Op> ops;
    std::size_t pc = 0;
    bool issued = false;  // the current copy's words are in flight
    int in_flight = 0;
  };

  // ops (ce_ring_ops.cpp)
  void enqueue_call(int rank, int call, std::vector<int>& last_record);
  bool stream_enabled(const Stream& s) const;
  void step_stream(Stream& s);
  void step_copy(Stream& s, const Op& op);
  void step_add(const Stream& s, const Op& op);
  void step_end_check(const Stream& s, const Op& op);
  int pieces_of(int rank, const CallSpec& spec) const;

  // memory
  std::size_t input_offset(int chunk, int piece) const;
  std::size_t output_offset(int chunk, int piece) const;
  std::size_t landing_offset(int step, int piece) const;
  void deliver(std::size_t index) override;
  int thread_count() const override { return static_cast<int>(streams_.size()); }
  bool thread_enabled_at(int i) const override {
    return stream_enabled(streams_[static_cast<std::size_t>(i)]);
  }
  void step_thread(int i) override { step_stream(streams_[static_cast<std::size_t>(i)]); }
  std::uint32_t& word(int rank, std::size_t offset) {
    return memory_[static_cast<std::size_t>(rank)][offset];
  }
  std::uint32_t word(int rank, std::size_t offset) const {
    return memory_[static_cast<std::size_t>(rank)][offset];
  }

  // reporting
  std::string who(const Stream& s) const;
  std::string describe_op(const Op& op) const;
  void check_invariants();

  SimConfig config_;
  Profile profile_;
  Mutant mutant_;
  std::vector<CallSpec> calls_;
  int words_per_piece_ = 1;
  std::size_t output_base_ = 0, landing_base_ = 0, flags_base_ = 0, binary_base_ = 0, words_ = 0;
  std::vector<std::vector<std::uint32_t>> memory_;                      // [rank][word]
  std::vector<std::vector<std::int32_t>> send_counter_, wait_counter_;  // [rank][slot]
  std::vector<std::uint8_t> event_done_;  // per recorded event instance
  std::vector<Stream> streams_;           // rank * 3 + which
};

}  // namespace fusioncheck::sim
