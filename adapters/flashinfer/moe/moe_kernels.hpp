#pragma once
// FlashInfer's MoE allreduce fusion (trtllm_moe_allreduce_fusion.cuh) behind KernelUnderTest:
// the reduction kernel (launch variant 0) and the finalize kernel (variant 1), one-shot Lamport
// kernels on the fusion kernel's workspace (FiWorkspace), whose protocol and invariants are the
// fusion kernel's one-shot ones; the host bounds their waits as for the fusion kernel.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fi_moe_instances.hpp"
#include "flashinfer_kernels.hpp"
#include "host_wait.hpp"

namespace fusioncheck::adapters::fi {

// What the MoE kernels run (their traits; no instance needed).
gpu::KernelTraits flashinfer_moe_traits();

class FlashInferMoeKernels final : public gpu::KernelUnderTest {
 public:
  // The instances a call runs on, by element type; the sync-delay one (a hook at each
  // synchronisation exit) for the bf16 calls of a case with seeded delays. Any may be null
  // but bf16 (the patched copies are bf16 only and carry the hooks themselves; the original's
  // sync-delay copy is bf16 only).
  struct Instances {
    const MoeInstance* bf16 = nullptr;
    const MoeInstance* f16 = nullptr;
    const MoeInstance* sync_bf16 = nullptr;
  };
  FlashInferMoeKernels(kernels::Bootstrap& bootstrap, Instances instances,
                       const gpu::MutantId& patch);
  ~FlashInferMoeKernels() override;
  FlashInferMoeKernels(const FlashInferMoeKernels&) = delete;
  FlashInferMoeKernels& operator=(const FlashInferMoeKernels&) = delete;

  std::string name() const override;
  gpu::KernelTraits traits() const override;
  std::vector<gpu::MutantId> mutants() const override;
  std::vector<std::pair<gpu::MutantId, std::string>> mutants_not_built() const override;
  // As for the fusion kernel: the early flag shows only to a block that starts late.
  // moe-remote-read hangs when a rank ends its call while a peer is still reading: late
  // blocks of the peer widen that window (the finalize kernel's finding shows in about one
  // late-blocks case of five, one in thirty to eighty otherwise).
  bool mutant_needs_late_blocks(const gpu::MutantId& m) const override {
    return m == protocol::Mutant::flag_before_arrival || m == protocol::Mutant::moe_remote_read;
  }
  // moe-remote-read changes the reduction kernel (variant 0) alone; the other copies both.
  int mutant_variant(const gpu::MutantId& m) const override {
    return m == protocol::Mutant::moe_remote_read ? 0 : -1;
  }
  void prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) override;
  // Sets the in-kernel delay of this rank (gpu::sync_delay_for) in every instance with hooks.
  void begin_case(const gpu::GpuCase& c) override;
  // The block each rank holds inside the kernel ("in-kernel hold: rank 1, block 200, line
  // 1377, 19842 ns"), where the case's calls run on a copy with hooks.
  std::vector<std::string> case_notes(const gpu::GpuCase& c) const override;
  void launch(const kernels::FusedParams& params, bool twoshot, cudaStream_t stream) override;
  kernels::ControlState read_state(kernels::LamportCopy lamport) override {
    return current_->read_state(lamport);
  }
  // On the GPU, where the buffers are: only the counts cross PCIe.
  kernels::LamportScan scan_lamport(const kernels::LamportScanRequest& request) override;
  void wait(cudaStream_t stream, const gpu::WaitBudget& budget) override;
  kernels::HangRecord hang_record() override { return waiter_.hang(); }
  void clear_hang_record() override { waiter_.clear_hang(); }
  void reset() override;

 private:
  // The instance of a call: its element type's; the sync-delay copy for a bf16 case with delays
  // or a rank held before its polls.
  const MoeInstance& instance_for(const kernels::FusedParams& p) const;
  void hold_at_polls(const MoeInstance& instance, std::uint32_t ns, cudaStream_t stream);

  kernels::Bootstrap& bootstrap_;
  Instances instances_;
  gpu::MutantId patch_;
  std::map<const MoeInstance*, gpu::SyncDelay> sync_delays_;  // what each instance's plan holds
  cudaStream_t plan_stream_ = nullptr;
  std::map<std::uint64_t, std::unique_ptr<FiWorkspace>> workspaces_;  // by comm_size
  FiWorkspace* current_ = nullptr;
  HostBoundedWait waiter_{"FlashInfer MoE kernel"};
  std::unique_ptr<kernels::DeviceLamportScanner> scanner_;  // made on the first scan
  std::uint32_t calls_ = 0;
  int cc_major_ = 0;  // compute capability of this rank's GPU, read on the first launch
};

}  // namespace fusioncheck::adapters::fi
