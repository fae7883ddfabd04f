#pragma once
// FlashInfer's PCIe allreduce (pcie_ipc_all_reduce.cuh) behind KernelUnderTest, with its own
// protocol checks (docs/protocols.md, "PCIe sentinel protocol"): one slab per rank laid out by the
// header, shared through CUDA IPC, zeroed once; the host-bounded wait of the FlashInfer adapter
// (host_wait.hpp) for its unbounded polls.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fi_instances.hpp"
#include "fi_pcie_instances.hpp"
#include "host_wait.hpp"
#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/gpu/protocol_checks.hpp"
#include "fusioncheck/kernels/byte_scan.hpp"
#include "fusioncheck/kernels/ipc.hpp"

namespace fusioncheck::adapters::fi {

// One rank's slab, with guard words before and after it in the same allocation.
class PcieWorkspace {
 public:
  // Collective: allocates, zeroes (as FlashInfer's pcie_ipc_init does), maps the peers.
  PcieWorkspace(kernels::Bootstrap& bootstrap, const PcieInstance& instance,
                std::int64_t max_numel);
  ~PcieWorkspace();
  PcieWorkspace(const PcieWorkspace&) = delete;
  PcieWorkspace& operator=(const PcieWorkspace&) = delete;

  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  std::int64_t max_numel() const { return max_numel_; }
  const PcieLayout& layout() const { return layout_; }
  const std::int64_t* slabs() const { return slabs_.data(); }
  std::uint8_t* slab() const;              // mine
  std::uint8_t* region(int region) const;  // my scratch region: 0 block, 1 pack
  // Word offsets in the signal area (the header's phase_offset, flag_offset, scratch_state_offset).
  PcieSignalLayout signal_layout() const;
  // Synchronises the device, then copies bytes [offset, offset + bytes) of my slab.
  std::vector<std::uint8_t> read(std::uint64_t offset, std::uint64_t bytes) const;
  // Synchronises the device, then scans bytes [offset, offset + bytes) of my slab where they
  // lie for the first byte that is not 0.
  PcieStateAfterCalls::RegionScan scan_region(std::uint64_t offset, std::uint64_t bytes) const;
  bool guards_intact() const;
  // The copy-engine ring: whether the tree has it, its functions, this rank's streams and events
  // (CeResources), its area of the slab and this rank's binary flags.
  bool has_copy_engine() const { return ce_resources_ != nullptr; }
  const PcieCeApi& ce_api() const { return ce_api_; }
  void* ce_resources() const { return ce_resources_; }
  std::uint8_t* ce_area() const {
    return slab() + layout_.signal_bytes + 2 * layout_.scratch_bytes;
  }
  std::uint8_t* binary_flags() const;
  std::uint64_t binary_flag_bytes() const { return binary_flag_bytes_; }
  // The copy-engine area's flags, send counts and wait counts, an int32 per slot (a device sync).
  struct CeCounts {
    std::vector<std::int32_t> flags, send, wait, binary;
  };
  CeCounts read_ce() const;
  // The half of each region (0 block, 1 pack) the next call stages in, as the host counts calls
  // launched outside a graph (for the hang record only; the checks read the device's epochs).
  int next_half[2] = {0, 0};

 private:
  static constexpr std::uint64_t kGuardBytes = 256;
  int ranks_ = 0, rank_ = 0;
  std::int64_t max_numel_ = 0;
  PcieLayout layout_{};
  void* allocation_ = nullptr;
  std::vector<std::int64_t> slabs_;
  std::unique_ptr<kernels::PeerMappings> peers_;
  PcieCeApi ce_api_{};
  void* ce_resources_ = nullptr;
  void* binary_allocation_ = nullptr;
  std::uint64_t binary_flag_bytes_ = 0;
  std::unique_ptr<kernels::PeerMappings> binary_peers_;
  std::unique_ptr<kernels::DeviceByteScanner> scanner_;
};

class FlashInferPcieKernels final : public gpu::KernelUnderTest, public gpu::ProtocolChecks {
 public:
  FlashInferPcieKernels(kernels::Bootstrap& bootstrap, const PcieInstance& instance);

  // KernelUnderTest
  std::string name() const override;
  gpu::KernelTraits traits() const override { return flashinfer_pcie_traits(ranks_); }
  // The patched copies that change a kernel this rank count runs (the 2-rank kernel's patch
  // changes nothing on 4 or 8 ranks).
  std::vector<gpu::MutantId> mutants() const override;
  // The patches that do not apply to the tree this build uses, each with why.
  std::vector<std::pair<gpu::MutantId, std::string>> mutants_not_built() const override;
  // The 2-rank kernel's epoch halves sized from the payload show only when a rank starts a
  // smaller call while its peer still drains a larger one: staggered, delayed starts.
  int mutant_variant(const gpu::MutantId& m) const override;
  bool mutant_needs_late_blocks(const gpu::MutantId& m) const override {
    return m == protocol::Mutant::pcie_tp2_half_from_payload;
  }
  void prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) override;
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
  std::vector<gpu::PollSiteTime> take_poll_profile() override;

  // ProtocolChecks
  std::string protocol_name() const override { return "pcie-sentinel"; }
  void start_case() override;
  std::vector<std::string> check_rank(const gpu::GpuCase& c, int first, int count,
                                      const gpu::CallEvidence& last) override;
  gpu::ProtocolWords words() const override;
  void read_words() override { state_ = read_signal(); }
  std::vector<std::string> check_across_ranks(
      const std::vector<gpu::ProtocolWords>& all) const override;
  std::string describe(const gpu::ProtocolWords& words) const override;

 private:
  // The signal area of my slab as words.
  struct Signal {
    std::vector<std::int32_t> words;
    std::vector<std::int32_t> ce_wait;  // the copy-engine ring's wait counts
  };
  Signal read_signal() const;
  PcieWorkspace& ws() const { return *current_; }
  kernels::HangRecord record_hang(const PendingCall& call, double seconds);
  kernels::HangRecord record_ce_hang(const PendingCall& call, double seconds);
  void release_stuck_call();

  kernels::Bootstrap& bootstrap_;
  const PcieInstance& instance_;
  int ranks_ = 0;
  std::vector<PcieVariant> variants_;
  std::map<std::int64_t, std::unique_ptr<PcieWorkspace>> workspaces_;  // by max_numel
  PcieWorkspace* current_ = nullptr;
  Signal state_;  // the state the next checked calls start from
  std::uint32_t calls_ = 0;
  HostBoundedWait waiter_{"FlashInfer PCIe allreduce kernel"};
};

}  // namespace fusioncheck::adapters::fi
