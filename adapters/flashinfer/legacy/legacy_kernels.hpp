#pragma once
// FlashInfer's older Lamport kernel (trtllm_allreduce.cuh) behind KernelUnderTest: three
// Lamport buffers per rank in a FiWorkspace (its two-shot and barrier parts unused), a flag
// held on the host, and the host-bounded wait of the FlashInfer adapter (host_wait.hpp).
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "flashinfer_kernels.hpp"
#include "fusioncheck/adapters/flashinfer.hpp"

namespace fusioncheck::adapters::fi {

class FlashInferLegacyKernels final : public gpu::KernelUnderTest {
 public:
  explicit FlashInferLegacyKernels(kernels::Bootstrap& bootstrap) : bootstrap_(bootstrap) {}

  std::string name() const override;
  gpu::KernelTraits traits() const override { return flashinfer_legacy_traits(); }
  void prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) override;
  void launch(const kernels::FusedParams& params, bool twoshot, cudaStream_t stream) override;
  kernels::ControlState read_state(kernels::LamportCopy lamport) override;
  kernels::LamportScan scan_lamport(const kernels::LamportScanRequest& request) override;
  void wait(cudaStream_t stream, const gpu::WaitBudget& budget) override;
  kernels::HangRecord hang_record() override { return waiter_.hang(); }
  void clear_hang_record() override { waiter_.clear_hang(); }
  void reset() override;

 private:
  void clean_for(std::uint64_t elems);
  kernels::HangRecord record_hang(const PendingCall& call, double seconds);

  // A workspace per size class (as FiWorkspace's users keep them: a small case reads back
  // small buffers), each with its own flag: a buffer is clean only for its own rotation.
  struct Slot {
    std::unique_ptr<FiWorkspace> buffers;
    std::uint32_t flag = 0;          // barrier_flag of the next call: the same on every rank
    std::uint64_t layout_elems = 0;  // tokens x hidden the buffers are clean for; 0: fresh
  };
  FiWorkspace& ws() const { return *current_->buffers; }

  kernels::Bootstrap& bootstrap_;
  std::map<std::uint64_t, Slot> workspaces_;  // by bytes per Lamport buffer
  Slot* current_ = nullptr;
  std::uint32_t calls_ = 0;
  int cc_major_ = 0;  // read on the first launch
  HostBoundedWait waiter_{"FlashInfer's older Lamport kernel"};
};

}  // namespace fusioncheck::adapters::fi
