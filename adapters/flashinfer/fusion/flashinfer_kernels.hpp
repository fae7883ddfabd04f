#pragma once
// The adapter's classes (internal to adapters/flashinfer): FlashInfer's workspace as its
// Python lays it out, and the KernelUnderTest that launches FlashInfer's kernels on it.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fi_instances.hpp"
#include "host_wait.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/kernels/ipc.hpp"
#include "fusioncheck/kernels/lamport_scan.hpp"

namespace fusioncheck::adapters::fi {

// One rank's FlashInfer workspace (see flashinfer_kernels.cpp for the layout).
class FiWorkspace {
 public:
  // Collective: allocates, initialises (-0 in every Lamport element, zeroed barrier flags,
  // ctrl = {0, 0, 0, comm_size, 0}), maps the peers and writes the pointer table.
  FiWorkspace(kernels::Bootstrap& bootstrap, std::uint64_t comm_size, std::uint64_t twoshot_bytes);
  ~FiWorkspace();
  FiWorkspace(const FiWorkspace&) = delete;
  FiWorkspace& operator=(const FiWorkspace&) = delete;

  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  std::uint64_t comm_size() const { return comm_size_; }
  void** table() const { return table_; }
  void* ctrl() const { return static_cast<std::uint8_t*>(private_) + 8; }
  std::uint8_t* lamport() const;            // my 3 x comm_size bytes
  std::uint8_t* peer_lamport(int r) const;  // rank r's 3 x comm_size bytes, mapped here
  kernels::LamportBuffersOnDevice lamport_buffers() const;  // for the device scanner
  // Every element of my Lamport buffers -0 again (16-bit), then synchronises the device; the
  // caller makes it collective (a barrier after it, all ranks idle).
  void fill_lamport_sentinel();
  std::uint8_t* barrier_flags() const;  // my int[256][N]
  // Collective through the caller (all ranks idle before it, a barrier after it): every
  // buffer of mine in its initial state (the constructor's), the peers' mappings kept.
  void restore_initial_state();
  // The state for the invariant checks (synchronises the device first).
  kernels::ControlState read_state(kernels::LamportCopy copy) const;

 private:
  static constexpr std::uint64_t kPrivateBytes = 48;  // guard, ctrl[5] + pad, guard
  void write_private_words();
  int ranks_ = 0, rank_ = 0;
  std::uint64_t comm_size_ = 0;
  std::uint64_t lamport_offset_ = 0, barrier_offset_ = 0;  // in every rank's shared allocation
  std::uint64_t guard_offsets_[4] = {};
  void* shared_ = nullptr;
  void* private_ = nullptr;
  void** table_ = nullptr;
  std::unique_ptr<kernels::PeerMappings> peers_;
};

// The Lamport buffer size of a workspace for calls of up to max_elems_per_rank elements, as
// FlashInfer sizes it; InvalidLaunch for fp32 elements or 1 GiB and more.
std::uint64_t lamport_comm_size(int ranks, std::uint64_t max_elems_per_rank, bool fp32_lamport);
// FlashInfer's AllReduceFusionPattern value for a pattern, with norm_out or without it.
int fi_fusion_pattern(kernels::Pattern pattern, bool norm_out);
// A one-shot call stuck at the host's bound: the first sentinel left in its slots (what it
// awaited), read beside the running kernel.
kernels::HangRecord lamport_hang_record(const FiWorkspace& ws, HostBoundedWait& waiter,
                                        const PendingCall& call, double seconds);
// Lets a stuck kernel finish: no sentinel left in this rank's and its peers' Lamport buffers, no
// barrier flag value anyone waits for. The workspace is not trusted afterwards.
void release_lamport(FiWorkspace& ws, HostBoundedWait& waiter);

// What a fusion instance runs (its compile probes), with its fast-math twin or without.
gpu::KernelTraits fusion_traits(const Instance& bf16, bool fast_math_variant);

class FlashInferKernels final : public gpu::KernelUnderTest {
 public:
  // instance_f16 may be null (the patched copies are bf16 only). fast_bf16 and fast_f16: the
  // fast-math instances of the same tree or patched copy, drawn as launch variant 1; kept only
  // where they cover the same element types as the IEEE pair.
  FlashInferKernels(kernels::Bootstrap& bootstrap, const Instance& instance_bf16,
                    const Instance* instance_f16, const gpu::MutantId& patch,
                    const Instance* fast_bf16 = nullptr, const Instance* fast_f16 = nullptr);
  ~FlashInferKernels() override;

  std::string name() const override;
  gpu::KernelTraits traits() const override { return fusion_traits(bf16_, fast_bf16_ != nullptr); }
  // Variant 0: the header built with nvcc's defaults (IEEE); 1: with FlashInfer's JIT flags.
  static std::vector<gpu::KernelVariant> fast_math_variants();
  std::vector<gpu::MutantId> mutants() const override;
  std::vector<std::pair<gpu::MutantId, std::string>> mutants_not_built() const override;
  // The flag advanced early shows only to a block that starts after block 0 has finished:
  // FlashInfer's kernels take no delays of their own, so the adapter's staggered starts
  // (pause_before) must be frequent and long for it.
  bool mutant_needs_late_blocks(const gpu::MutantId& m) const override {
    return m == protocol::Mutant::flag_before_arrival;
  }
  std::string mutant_may_survive(const gpu::MutantId& m,
                                 const gpu::GpuPlacement& placement) const override {
    return flashinfer_mutant_may_survive(m, placement);
  }
  // The two-shot barrier's store order shows only on two-shot calls.
  bool mutant_in_twoshot_only(const gpu::MutantId& m) const override {
    return m == gpu::MutantId("revert-0.7.2-twoshot-barrier-order");
  }
  void prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) override;
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
  float* scale_on_device(float value, cudaStream_t stream);
  kernels::HangRecord record_hang(const PendingCall& call, double seconds);
  void release_current_call();

  kernels::Bootstrap& bootstrap_;
  const Instance& bf16_;
  const Instance* f16_;
  const Instance* fast_bf16_ = nullptr;
  const Instance* fast_f16_ = nullptr;
  gpu::MutantId patch_;
  std::map<std::uint64_t, std::unique_ptr<FiWorkspace>> workspaces_;  // by comm_size
  FiWorkspace* current_ = nullptr;
  std::map<float, float*> scales_;  // FP8 / NVFP4 scales in device memory
  HostBoundedWait waiter_{"FlashInfer kernel"};
  std::unique_ptr<kernels::DeviceLamportScanner> scanner_;  // made on the first scan
  std::uint32_t calls_ = 0;
  int cc_major_ = 0;  // compute capability of this rank's GPU, read on the first launch
};

}  // namespace fusioncheck::adapters::fi
