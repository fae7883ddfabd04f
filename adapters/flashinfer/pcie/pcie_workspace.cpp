// One rank's slab of FlashInfer's PCIe allreduce (pcie_kernels.hpp), laid out by the header
// (compute_workspace_layout through the instance library): [signal words][pack scratch][block
// scratch][copy-engine flags, counters, scratch]. Zeroed once, as pcie_ipc_init does: +0 is the
// sentinel ("not yet written") and every epoch, arrival counter and generation starts at 0.
#include <cuda_runtime.h>

#include <cstring>

#include "pcie_kernels.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::adapters::fi {

namespace k = kernels;

PcieWorkspace::PcieWorkspace(k::Bootstrap& bootstrap, const PcieInstance& instance,
                             std::int64_t max_numel)
    : ranks_(bootstrap.size()), rank_(bootstrap.rank()), max_numel_(max_numel) {
  instance.layout(ranks_, max_numel, kPcieMaxBlocks, &layout_);
  const std::uint64_t total = kGuardBytes + layout_.total_bytes + kGuardBytes;
  FC_CUDA_CHECK(cudaMalloc(&allocation_, total));
  std::vector<std::uint8_t> guard(kGuardBytes);
  for (std::uint64_t i = 0; i < kGuardBytes; i += 8)
    std::memcpy(&guard[i], &protocol::kGuardWord, 8);
  auto* base = static_cast<std::uint8_t*>(allocation_);
  FC_CUDA_CHECK(cudaMemcpy(base, guard.data(), kGuardBytes, cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(cudaMemset(base + kGuardBytes, 0, layout_.total_bytes));
  FC_CUDA_CHECK(cudaMemcpy(base + kGuardBytes + layout_.total_bytes, guard.data(), kGuardBytes,
                           cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  scanner_ = std::make_unique<k::DeviceByteScanner>();
  peers_ = std::make_unique<k::PeerMappings>(bootstrap, allocation_);
  for (int r = 0; r < ranks_; ++r)
    slabs_.push_back(
        static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(peers_->of(r) + kGuardBytes)));
  // The copy-engine ring: every rank's binary flags (zeroed, shared), this rank's streams and
  // events over them.
  if (instance.ce != nullptr && instance.ce(&ce_api_) && layout_.ce_flag_slots > 0) {
    binary_flag_bytes_ = ce_api_.binary_flag_bytes(ranks_);
    FC_CUDA_CHECK(cudaMalloc(&binary_allocation_, binary_flag_bytes_));
    FC_CUDA_CHECK(cudaMemset(binary_allocation_, 0, binary_flag_bytes_));
    FC_CUDA_CHECK(cudaDeviceSynchronize());
    binary_peers_ = std::make_unique<k::PeerMappings>(bootstrap, binary_allocation_);
    std::vector<void*> binary(static_cast<std::size_t>(ranks_));
    for (int r = 0; r < ranks_; ++r) binary[static_cast<std::size_t>(r)] = binary_peers_->of(r);
    FC_CUDA_CHECK(ce_api_.create(ranks_, binary.data(), &ce_resources_));
  }
  bootstrap.barrier("FlashInfer PCIe workspace initialised");  // nobody pushes before this
}

PcieWorkspace::~PcieWorkspace() {
  // Close the peers' mappings before freeing (teardown must not throw).
  if (ce_resources_ != nullptr && !k::device_stuck()) ce_api_.destroy(ce_resources_);
  binary_peers_.reset();
  peers_.reset();
  if (k::device_stuck()) return;
  for (void* p : {allocation_, binary_allocation_})
    if (p != nullptr) (void)cudaFree(p);
}

std::uint8_t* PcieWorkspace::binary_flags() const {
  return static_cast<std::uint8_t*>(binary_allocation_);
}

PcieWorkspace::CeCounts PcieWorkspace::read_ce() const {
  CeCounts c;
  const auto slots = static_cast<std::size_t>(layout_.ce_flag_slots);
  if (slots == 0) return c;
  const std::uint64_t ce = layout_.signal_bytes + 2 * layout_.scratch_bytes;
  const auto flags = read(ce, slots * static_cast<std::uint64_t>(layout_.ce_flag_stride));
  const auto counters = read(ce + layout_.ce_flag_bytes, 2 * slots * 4);
  for (std::size_t s = 0; s < slots; ++s) {
    std::int32_t v = 0;
    std::memcpy(&v, flags.data() + s * static_cast<std::size_t>(layout_.ce_flag_stride), 4);
    c.flags.push_back(v);
  }
  c.send.resize(slots);
  c.wait.resize(slots);
  std::memcpy(c.send.data(), counters.data(), slots * 4);
  std::memcpy(c.wait.data(), counters.data() + slots * 4, slots * 4);
  if (binary_allocation_ != nullptr) {
    c.binary.resize(binary_flag_bytes_ / 128);  // a flag per 128-byte line
    std::vector<std::uint8_t> bytes(binary_flag_bytes_);
    FC_CUDA_CHECK(
        cudaMemcpy(bytes.data(), binary_allocation_, bytes.size(), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < c.binary.size(); ++i) std::memcpy(&c.binary[i], &bytes[i * 128], 4);
  }
  return c;
}

std::uint8_t* PcieWorkspace::slab() const {
  return static_cast<std::uint8_t*>(allocation_) + kGuardBytes;
}

std::uint8_t* PcieWorkspace::region(int region) const {
  // make_peer_views: pack at signal_bytes, block right after it.
  return slab() + layout_.signal_bytes + (region == 1 ? 0 : layout_.scratch_bytes);
}

PcieSignalLayout PcieWorkspace::signal_layout() const {
  PcieSignalLayout l;
  l.ranks = ranks_;
  l.phases = layout_.signal_phases;
  l.block_state_word = layout_.block_state_word;
  l.pack_state_word = layout_.pack_state_word;
  return l;
}

std::vector<std::uint8_t> PcieWorkspace::read(std::uint64_t offset, std::uint64_t bytes) const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> out(bytes);
  if (bytes > 0)
    FC_CUDA_CHECK(cudaMemcpy(out.data(), slab() + offset, bytes, cudaMemcpyDeviceToHost));
  return out;
}

PcieStateAfterCalls::RegionScan PcieWorkspace::scan_region(std::uint64_t offset,
                                                           std::uint64_t bytes) const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  const kernels::ByteScan found = scanner_->first_nonzero(slab() + offset, bytes, nullptr);
  return {bytes, found.first_nonzero, found.value};
}

bool PcieWorkspace::guards_intact() const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> guard(kGuardBytes);
  bool intact = true;
  for (const std::uint8_t* at : {slab() - kGuardBytes, slab() + layout_.total_bytes}) {
    FC_CUDA_CHECK(cudaMemcpy(guard.data(), at, kGuardBytes, cudaMemcpyDeviceToHost));
    for (std::uint64_t i = 0; i < kGuardBytes; i += 8)
      intact = intact && std::memcmp(&guard[i], &protocol::kGuardWord, 8) == 0;
  }
  return intact;
}

}  // namespace fusioncheck::adapters::fi
