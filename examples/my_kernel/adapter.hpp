#pragma once
// The example kernel (my_kernel.cu) behind fusioncheck's KernelUnderTest, and its family for
// a KernelRegistry ("my-kernel"). The suite drives it only through this interface:
//   prepare      collective; a workspace of the size class the case needs (kept, per class)
//   launch       one call, or InvalidLaunch for what it does not run (rules.hpp)
//   read_state   its control block, guard words and (when asked) its Lamport buffers, as
//                kernels::ControlState: the invariants are checked on it after every call
//   scan_lamport the default: the buffers copied back and scanned on the host
//   wait         the default: the kernel bounds its own polls, so a stream sync ends
//   hang_record  what the first expired poll of the rank awaited (host-mapped)
//   reset        collective; drops the workspaces after a failure
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusioncheck/gpu/kernel_registry.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/kernels/ipc.hpp"

namespace my_kernel {

namespace fk = fusioncheck::kernels;

// Frees a device allocation (teardown must not throw).
struct DeviceFree {
  void operator()(void* p) const;
};

// One rank's workspace of one size class: three Lamport buffers of comm_size bytes shared with
// every peer through CUDA IPC, framed by guard words, and a private control block that is
// fusioncheck's own ControlBlock (flag, clear size, arrival counter between guard words), so
// that read_state hands it over as it is.
class Workspace {
 public:
  // Collective: allocates, fills the buffers with -0, maps the peers, then meets every rank
  // (no push may reach a buffer before its owner filled it: invariant 12).
  Workspace(fk::Bootstrap& bootstrap, std::uint64_t comm_size);
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace();

  int ranks() const { return ranks_; }
  std::uint64_t comm_size() const { return comm_size_; }
  std::uint8_t* buffers_of(int rank) const;  // rank's three buffers, as mapped here
  fusioncheck::protocol::ControlBlock* control() const { return control_.get(); }
  // Synchronises the device first.
  fk::ControlState read_state(fk::LamportCopy copy) const;

 private:
  int ranks_ = 0;
  std::uint64_t comm_size_ = 0;
  std::unique_ptr<std::uint8_t, DeviceFree> shared_;  // guard, 3 x comm_size, guard
  std::unique_ptr<fusioncheck::protocol::ControlBlock, DeviceFree> control_;
  std::unique_ptr<fk::PeerMappings> peers_;  // declared last: closed before shared_ is freed
};

class MyKernel final : public fusioncheck::gpu::KernelUnderTest {
 public:
  // No CUDA call here: the suite may make an instance before it picks the rank's GPU (to ask
  // for its mutants); everything on the device is made by the first prepare.
  MyKernel(fk::Bootstrap& bootstrap, fusioncheck::protocol::Mutant mutant)
      : bootstrap_(bootstrap), mutant_(mutant) {}
  ~MyKernel() override;

  std::string name() const override;
  fusioncheck::gpu::KernelTraits traits() const override;
  std::vector<fusioncheck::gpu::MutantId> mutants() const override;
  void prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) override;
  void launch(const fk::FusedParams& params, bool twoshot, cudaStream_t stream) override;
  fk::ControlState read_state(fk::LamportCopy lamport) override;
  fk::HangRecord hang_record() override;
  void clear_hang_record() override;
  void reset() override;

 private:
  void first_prepare();

  fk::Bootstrap& bootstrap_;
  fusioncheck::protocol::Mutant mutant_;
  std::map<std::uint64_t, std::unique_ptr<Workspace>> workspaces_;  // by comm_size
  Workspace* current_ = nullptr;
  fk::HangRecord* hang_host_ = nullptr;  // pinned, mapped into the device's address space
  fk::HangRecord* hang_device_ = nullptr;
  std::unique_ptr<unsigned, DeviceFree> hang_claim_;
  int sm_count_ = 0;
  int ranks_on_device_ = 1;  // most ranks on one GPU of the job (the same on every rank)
  std::uint32_t calls_ = 0;
};

// "my-kernel": what --kernel my-kernel runs; comparable, so gpu bench --compare times it too.
fusioncheck::gpu::KernelChoice choice();
fusioncheck::gpu::KernelFamily family();

}  // namespace my_kernel
