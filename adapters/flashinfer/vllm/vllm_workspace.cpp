// One rank's workspace of FlashInfer's copy of vLLM's custom allreduce (vllm_kernels.hpp): the
// Signal with the temporary buffer after it (FlashInfer's "meta" buffer), the registered buffer,
// and the rank data, laid out as FlashInfer's binding allocates them for vLLM. Zeroed before the
// first barrier: every counter starts at 0.
#include <cuda_runtime.h>

#include <cstring>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "vllm_kernels.hpp"

namespace fusioncheck::adapters::fi {

namespace k = kernels;

namespace {

void* guarded_allocation(std::uint64_t payload, std::uint64_t guard) {
  void* p = nullptr;
  FC_CUDA_CHECK(cudaMalloc(&p, guard + payload + guard));
  std::vector<std::uint8_t> words(guard);
  for (std::uint64_t i = 0; i < guard; i += 8) std::memcpy(&words[i], &protocol::kGuardWord, 8);
  auto* base = static_cast<std::uint8_t*>(p);
  FC_CUDA_CHECK(cudaMemcpy(base, words.data(), guard, cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(cudaMemset(base + guard, 0, payload));
  FC_CUDA_CHECK(cudaMemcpy(base + guard + payload, words.data(), guard, cudaMemcpyHostToDevice));
  return p;
}

bool guards_at(const std::uint8_t* payload, std::uint64_t bytes, std::uint64_t guard) {
  std::vector<std::uint8_t> words(guard);
  for (const std::uint8_t* at : {payload - guard, payload + bytes}) {
    FC_CUDA_CHECK(cudaMemcpy(words.data(), at, guard, cudaMemcpyDeviceToHost));
    for (std::uint64_t i = 0; i < guard; i += 8)
      if (std::memcmp(&words[i], &protocol::kGuardWord, 8) != 0) return false;
  }
  return true;
}

}  // namespace

// vLLM writes the rank data with a plain cudaMemcpy from pageable memory: it returns once the
// bytes are staged, and the DMA runs on the legacy stream, which the case's non-blocking
// stream does not wait for. A graph launched at once may read the slots before they land
// (old pointers, or none: an illegal address). vLLM replays its graphs long after their
// registration; here the replay follows it at once, so the copy is waited for.
void land_rank_data() { FC_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy)); }

VllmWorkspace::VllmWorkspace(k::Bootstrap& bootstrap, const VllmApi& api, std::uint64_t max_bytes)
    : api_(api), rank_(bootstrap.rank()), max_bytes_(max_bytes) {
  api.layout(&layout_);
  signal_allocation_ = guarded_allocation(layout_.signal_bytes + max_bytes, kGuardBytes);
  registered_allocation_ = guarded_allocation(max_bytes, kGuardBytes);
  FC_CUDA_CHECK(cudaMalloc(&rank_data_, kRankDataBytes));
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  signal_peers_ = std::make_unique<k::PeerMappings>(bootstrap, signal_allocation_);
  registered_peers_ = std::make_unique<k::PeerMappings>(bootstrap, registered_allocation_);
  VllmSetup setup;
  void* registered[kVllmMaxRanks] = {};
  for (int r = 0; r < bootstrap.size(); ++r) {
    setup.signals[r] = signal_peers_->of(r) + kGuardBytes;
    registered[r] = registered_peers_->of(r) + kGuardBytes;
  }
  setup.rank_data = rank_data_;
  setup.rank_data_bytes = kRankDataBytes;
  setup.rank = rank_;
  setup.ranks = bootstrap.size();
  char error[kVllmErrorBytes] = {};
  if (api.create(setup, &handle_, error, sizeof(error)) != 0)
    throw k::InvalidLaunch(std::string("vLLM CustomAllreduce: ") + error);
  if (api.register_buffer(handle_, registered, error, sizeof(error)) != 0)
    throw k::InvalidLaunch(std::string("vLLM CustomAllreduce::register_buffer: ") + error);
  land_rank_data();
  bootstrap.barrier("vLLM custom allreduce workspace initialised");  // no barrier before this
}

VllmWorkspace::~VllmWorkspace() {
  // Stuck or faulted: the header's destructor would throw from a destructor (a CUDA call of a
  // lost context) and end the process before the error is reported. Left to the exit.
  if (k::device_stuck()) return;
  if (handle_ != nullptr) api_.destroy(handle_);  // closes the graph buffers it opened
  signal_peers_.reset();
  registered_peers_.reset();
  for (void* p : {signal_allocation_, registered_allocation_, rank_data_})
    if (p != nullptr) (void)cudaFree(p);
}

std::uint8_t* VllmWorkspace::signal() const {
  return static_cast<std::uint8_t*>(signal_allocation_) + kGuardBytes;
}

std::uint8_t* VllmWorkspace::tmp() const { return signal() + layout_.signal_bytes; }

std::uint8_t* VllmWorkspace::registered() const {
  return static_cast<std::uint8_t*>(registered_allocation_) + kGuardBytes;
}

std::vector<std::uint8_t> VllmWorkspace::read(const void* device, std::uint64_t bytes) const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> out(bytes);
  if (bytes > 0) FC_CUDA_CHECK(cudaMemcpy(out.data(), device, bytes, cudaMemcpyDeviceToHost));
  return out;
}

std::vector<std::uint32_t> VllmWorkspace::read_words(std::uint64_t offset,
                                                     std::size_t count) const {
  const auto bytes = read(signal() + offset, count * 4);
  std::vector<std::uint32_t> out(count);
  std::memcpy(out.data(), bytes.data(), count * 4);
  return out;
}

bool VllmWorkspace::guards_intact() const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  return guards_at(signal(), layout_.signal_bytes + max_bytes_, kGuardBytes) &&
         guards_at(registered(), max_bytes_, kGuardBytes);
}

}  // namespace fusioncheck::adapters::fi
