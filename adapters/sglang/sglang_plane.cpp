// One rank's push plane of SGLang's push allreduce (sglang_kernels.hpp): 2 x ranks slots (two
// phases, one slot per producer), zero-filled as SGLang's Python fills it before first use
// (+0 marks an empty word), guard words around it, and the rank-local phase counters.
#include <cuda_runtime.h>

#include <cstring>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/protocol/workspace.hpp"
#include "sglang_kernels.hpp"

namespace fusioncheck::adapters::sg {

namespace k = kernels;

PushPlane::PushPlane(k::Bootstrap& bootstrap, std::uint64_t slot_bytes, int blocks)
    : ranks_(bootstrap.size()), slot_bytes_(slot_bytes), blocks_(blocks) {
  FC_CUDA_CHECK(cudaMalloc(&allocation_, kGuardBytes + plane_bytes() + kGuardBytes));
  std::vector<std::uint8_t> guard(kGuardBytes);
  for (std::uint64_t i = 0; i < kGuardBytes; i += 8)
    std::memcpy(&guard[i], &protocol::kGuardWord, 8);
  auto* base = static_cast<std::uint8_t*>(allocation_);
  FC_CUDA_CHECK(cudaMemcpy(base, guard.data(), kGuardBytes, cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(cudaMemset(base + kGuardBytes, 0, plane_bytes()));
  FC_CUDA_CHECK(cudaMemcpy(base + kGuardBytes + plane_bytes(), guard.data(), kGuardBytes,
                           cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&counters_), blocks_ * sizeof(std::uint32_t)));
  FC_CUDA_CHECK(cudaMemset(counters_, 0, blocks_ * sizeof(std::uint32_t)));
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  peers_ = std::make_unique<k::PeerMappings>(bootstrap, allocation_);
  bootstrap.barrier("SGLang push plane zeroed");  // no peer pushes before this
}

PushPlane::~PushPlane() {
  peers_.reset();
  if (k::device_stuck()) return;  // freeing would wait for the stuck kernel
  if (allocation_ != nullptr) (void)cudaFree(allocation_);
  if (counters_ != nullptr) (void)cudaFree(counters_);
}

std::uint8_t* PushPlane::mine() const {
  return static_cast<std::uint8_t*>(allocation_) + kGuardBytes;
}

void* PushPlane::of(int rank) const { return peers_->of(rank) + kGuardBytes; }

std::vector<std::uint32_t> PushPlane::read_counters() const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint32_t> out(static_cast<std::size_t>(blocks_));
  FC_CUDA_CHECK(cudaMemcpy(out.data(), counters_, out.size() * 4, cudaMemcpyDeviceToHost));
  return out;
}

std::vector<std::uint8_t> PushPlane::read_slots(std::uint64_t used) const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  const std::uint64_t slots = 2 * static_cast<std::uint64_t>(ranks_);
  std::vector<std::uint8_t> out(slots * used);
  // Slot by slot: the H100 refuses one strided copy of these rows ("invalid pitch argument").
  for (std::uint64_t s = 0; s < slots && used > 0; ++s)
    FC_CUDA_CHECK(
        cudaMemcpy(out.data() + s * used, mine() + s * slot_bytes_, used, cudaMemcpyDeviceToHost));
  return out;
}

bool PushPlane::guards_intact() const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> words(kGuardBytes);
  for (const std::uint8_t* at : {mine() - kGuardBytes, mine() + plane_bytes()}) {
    FC_CUDA_CHECK(cudaMemcpy(words.data(), at, kGuardBytes, cudaMemcpyDeviceToHost));
    for (std::uint64_t i = 0; i < kGuardBytes; i += 8)
      if (std::memcmp(&words[i], &protocol::kGuardWord, 8) != 0) return false;
  }
  return true;
}

}  // namespace fusioncheck::adapters::sg
