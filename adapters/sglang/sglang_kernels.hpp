#pragma once
// SGLang's push allreduce behind KernelUnderTest, with its own protocol checks (docs/protocols.md,
// "SGLang push protocol", S1-S2): the push plane as SGLang's Python lays it (per rank 2 x ranks
// slots, zero-filled, shared over our IPC bootstrap) and the rank-local phase counters, one per
// block of a grid as large as the SM count (the wheel's num_push_blocks). The host-bounded wait
// bounds its unbounded polls.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusioncheck/adapters/sglang_push.hpp"
#include "fusioncheck/gpu/host_bounded_wait.hpp"
#include "fusioncheck/gpu/protocol_checks.hpp"
#include "fusioncheck/kernels/ipc.hpp"
#include "sglang_push_call.hpp"

namespace fusioncheck::adapters::sg {

// One rank's push plane (and its view of its peers') with its phase counters.
class PushPlane {
 public:
  // Collective: allocates this rank's plane of 2 x ranks slots of slot_bytes with guard words
  // around it, zeroes it and the counters before any peer can see them, maps the peers'.
  PushPlane(kernels::Bootstrap& bootstrap, std::uint64_t slot_bytes, int blocks);
  ~PushPlane();
  PushPlane(const PushPlane&) = delete;
  PushPlane& operator=(const PushPlane&) = delete;

  std::uint64_t slot_bytes() const { return slot_bytes_; }
  int blocks() const { return blocks_; }
  int ranks() const { return ranks_; }
  std::uint8_t* mine() const;  // this rank's slots
  void* of(int rank) const;    // a rank's slots as mapped here
  std::uint32_t* counters() const { return counters_; }
  // Synchronises the device, then copies: the counters; both phases' first `used` bytes of each
  // slot ([phase][src][used]).
  std::vector<std::uint32_t> read_counters() const;
  std::vector<std::uint8_t> read_slots(std::uint64_t used) const;
  bool guards_intact() const;

 private:
  static constexpr std::uint64_t kGuardBytes = 256;
  std::uint64_t plane_bytes() const { return 2 * static_cast<std::uint64_t>(ranks_) * slot_bytes_; }

  int ranks_ = 2;
  std::uint64_t slot_bytes_ = 0;
  int blocks_ = 0;
  void* allocation_ = nullptr;
  std::uint32_t* counters_ = nullptr;
  std::unique_ptr<kernels::PeerMappings> peers_;
};

class SglangPushKernels final : public gpu::KernelUnderTest, public gpu::ProtocolChecks {
 public:
  SglangPushKernels(kernels::Bootstrap& bootstrap, const PushApi& api, const gpu::MutantId& patch);

  // KernelUnderTest
  std::string name() const override;
  gpu::KernelTraits traits() const override { return sglang_push_traits(); }
  std::vector<gpu::MutantId> mutants() const override { return sglang_push_patches(); }
  void prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) override;
  void begin_case(const gpu::GpuCase& c) override;
  void launch(const kernels::FusedParams& params, bool twoshot, cudaStream_t stream) override;
  kernels::ControlState read_state(kernels::LamportCopy) override { return {}; }  // no Lamport
  void wait(cudaStream_t stream, const gpu::WaitBudget& budget) override;
  kernels::HangRecord hang_record() override { return waiter_.hang(); }
  void clear_hang_record() override { waiter_.clear_hang(); }
  void reset() override;
  gpu::ProtocolChecks& protocol_checks(int rank) override {
    (void)rank;  // made for this rank already
    return *this;
  }

  // ProtocolChecks
  std::string protocol_name() const override { return "sglang-push"; }
  void start_case() override;
  gpu::InputEvidence evidence_needed(const gpu::CallSpec& last) const override {
    (void)last;
    return gpu::InputEvidence::own_input_on_gpu;
  }
  std::vector<std::string> check_rank(const gpu::GpuCase& c, int first, int count,
                                      const gpu::CallEvidence& last) override;
  gpu::ProtocolWords words() const override;
  void read_words() override { counters_ = plane().read_counters(); }
  std::vector<std::string> check_across_ranks(
      const std::vector<gpu::ProtocolWords>& all) const override;
  std::string describe(const gpu::ProtocolWords& words) const override;
  std::string describe_hang(const kernels::HangRecord& record) const override;

 private:
  // A call as launched in this case (a graph's replays run the captured calls again).
  struct Launched {
    const void* input = nullptr;
    std::uint64_t numel = 0;
    std::uint64_t slot_use = 0;  // bytes of each slot it pushes into
  };
  PushPlane& plane() const { return *current_; }
  kernels::HangRecord record_hang(const gpu::PendingCall& call, double seconds);
  void release_stuck_call();

  kernels::Bootstrap& bootstrap_;
  PushApi api_;
  gpu::MutantId patch_;
  int ranks_ = 0;
  int sm_count_ = 0;
  std::map<std::uint64_t, std::unique_ptr<PushPlane>> planes_;  // by slot bytes
  std::uint64_t slot_bytes_ = 0;                                // prepared
  PushPlane* current_ = nullptr;
  std::vector<Launched> launched_;
  std::vector<std::uint32_t> counters_;  // the counters the next checked calls start from
  std::uint64_t extent_ = 0;             // the bytes of each slot any call of the plane used
  std::uint32_t calls_ = 0;
  gpu::HostBoundedWait waiter_{"SGLang's push allreduce kernel"};
};

}  // namespace fusioncheck::adapters::sg
