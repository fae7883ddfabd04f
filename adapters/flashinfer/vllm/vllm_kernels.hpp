#pragma once
// FlashInfer's copy of vLLM's custom allreduce (vllm_custom_all_reduce.cuh) behind
// KernelUnderTest, with its own protocol checks (docs/protocols.md, "vLLM barrier protocol",
// V1-V4). The workspace as FlashInfer's binding lays it for vLLM: per rank a Signal with the
// two-stage kernel's temporary buffer after it, and a registered buffer each input is copied
// into before an eager call; a captured call reads the caller's input, registered after the
// capture (after_capture). The host-bounded wait bounds its unbounded polls.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fi_vllm_instances.hpp"
#include "host_wait.hpp"
#include "fusioncheck/adapters/flashinfer_vllm.hpp"
#include "fusioncheck/gpu/protocol_checks.hpp"
#include "fusioncheck/kernels/ipc.hpp"

namespace fusioncheck::adapters::fi {

// Waits for the rank data a registration (register_buffer, register_graph_buffers) wrote.
void land_rank_data();

// One rank's buffers and the header's CustomAllreduce over every rank's.
class VllmWorkspace {
 public:
  // Collective: allocates this rank's Signal (temporary buffer after it) and registered buffer
  // of max_bytes each, guard words around both, zeroes them before any peer can see them, maps
  // the peers', makes the CustomAllreduce and registers the registered buffers.
  VllmWorkspace(kernels::Bootstrap& bootstrap, const VllmApi& api, std::uint64_t max_bytes);
  ~VllmWorkspace();
  VllmWorkspace(const VllmWorkspace&) = delete;
  VllmWorkspace& operator=(const VllmWorkspace&) = delete;

  void* handle() const { return handle_; }
  int rank() const { return rank_; }
  std::uint64_t max_bytes() const { return max_bytes_; }
  const VllmLayout& layout() const { return layout_; }
  std::uint8_t* signal() const;      // mine
  std::uint8_t* tmp() const;         // my temporary buffer, after the Signal
  std::uint8_t* registered() const;  // my registered buffer
  // Synchronises the device, then copies `bytes` of device memory.
  std::vector<std::uint8_t> read(const void* device, std::uint64_t bytes) const;
  std::vector<std::uint32_t> read_words(std::uint64_t offset, std::size_t count) const;
  bool guards_intact() const;

 private:
  static constexpr std::uint64_t kGuardBytes = 256;
  static constexpr std::uint64_t kRankDataBytes = 8u << 20;  // FlashInfer's default rank data

  const VllmApi& api_;
  int rank_ = 0;
  std::uint64_t max_bytes_ = 0;
  VllmLayout layout_{};
  void* signal_allocation_ = nullptr;
  void* registered_allocation_ = nullptr;
  void* rank_data_ = nullptr;
  std::unique_ptr<kernels::PeerMappings> signal_peers_, registered_peers_;
  void* handle_ = nullptr;
};

class FlashInferVllmKernels final : public gpu::KernelUnderTest, public gpu::ProtocolChecks {
 public:
  FlashInferVllmKernels(kernels::Bootstrap& bootstrap, const gpu::MutantId& patch);

  // KernelUnderTest
  std::string name() const override;
  gpu::KernelTraits traits() const override {
    return flashinfer_vllm_traits(ranks_, hooked_ != nullptr ? hooked_->sync_site_count : 0);
  }
  std::vector<gpu::MutantId> mutants() const override { return flashinfer_vllm_patches(); }
  std::vector<std::pair<gpu::MutantId, std::string>> mutants_not_built() const override {
    return flashinfer_vllm_patches_not_built();
  }
  std::string mutant_may_survive(const gpu::MutantId& m,
                                 const gpu::GpuPlacement& placement) const override {
    return flashinfer_vllm_mutant_may_survive(m, placement);
  }
  bool mutant_needs_held_rank(const gpu::MutantId& m) const override {
    return flashinfer_vllm_mutant_needs_held_rank(m);
  }
  void prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) override;
  void begin_case(const gpu::GpuCase& c) override;
  std::vector<std::string> case_notes(const gpu::GpuCase& c) const override;
  void after_capture() override;
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
  std::string protocol_name() const override { return "vllm-counters"; }
  void start_case() override;
  gpu::InputEvidence evidence_needed(const gpu::CallSpec& last) const override {
    (void)last;
    return gpu::InputEvidence::own_input_on_gpu;  // V4
  }
  std::vector<std::string> check_rank(const gpu::GpuCase& c, int first, int count,
                                      const gpu::CallEvidence& last) override;
  gpu::ProtocolWords words() const override;
  void read_words() override { counts_ = read_counts(); }
  std::vector<std::string> check_across_ranks(
      const std::vector<gpu::ProtocolWords>& all) const override;
  std::string describe(const gpu::ProtocolWords& words) const override;

 private:
  // A call as launched in this case (a graph's replays run the captured calls again).
  struct Launched {
    int stage = 1, blocks = 0;
    const void* registered = nullptr;  // what the kernel read as this rank's input
    const void* output = nullptr;
    std::uint64_t numel = 0;
  };
  struct Counts {
    std::vector<std::uint32_t> self, peer;
  };
  Counts read_counts() const;
  VllmWorkspace& ws() const { return *current_; }
  const VllmInstance& instance_for(const gpu::GpuCase& c) const;
  void hold_at_barriers(std::uint32_t ns, cudaStream_t stream);
  kernels::HangRecord record_hang(const gpu::PendingCall& call, double seconds);
  void release_stuck_call();

  kernels::Bootstrap& bootstrap_;
  gpu::MutantId patch_;
  int ranks_ = 0;
  const VllmInstance* plain_ = nullptr;   // the header as shipped (or the patched copy)
  const VllmInstance* hooked_ = nullptr;  // its sync-delay copy: cases with delays
  std::map<const VllmInstance*, VllmApi> apis_;
  std::map<std::pair<std::uint64_t, const VllmInstance*>, std::unique_ptr<VllmWorkspace>>
      workspaces_;
  std::uint64_t max_bytes_ = 0;  // prepared
  const VllmInstance* case_instance_ = nullptr;
  VllmWorkspace* current_ = nullptr;
  std::map<const VllmInstance*, gpu::SyncDelay> sync_delays_;  // the plan each instance holds
  cudaStream_t plan_stream_ = nullptr;
  std::vector<Launched> launched_;
  Counts counts_;  // the state the next checked calls start from
  std::uint32_t calls_ = 0;
  gpu::HostBoundedWait waiter_{"FlashInfer's copy of vLLM's custom allreduce kernel"};
};

}  // namespace fusioncheck::adapters::fi
