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
  peers_ = std::make_unique<k::PeerMappings>(bootstrap, allocation_);
  for (int r = 0; r < ranks_; ++r)
    slabs_.push_back(
        static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(peers_->of(r) + kGuardBytes)));
  bootstrap.barrier("FlashInfer PCIe workspace initialised");  // nobody pushes before this
}

PcieWorkspace::~PcieWorkspace() {
  peers_.reset();  // close the peers' mappings before freeing (teardown must not throw)
  if (allocation_ != nullptr && !k::device_stuck()) (void)cudaFree(allocation_);
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
