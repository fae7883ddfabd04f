#pragma once
// One call of FlashInfer's PCIe allreduce (pcie_ipc_all_reduce.cuh), in plain types: the adapter
// fills it, an instance library (fi_pcie_instance.cu.in, the only code that includes the header)
// builds the header's peer views and launches all_reduce().
#include <cuda_runtime.h>

#include <cstdint>

namespace fusioncheck::adapters::fi {

struct PcieCall {
  int nranks = 2;
  int rank = 0;
  bool bf16 = true;  // else fp16
  const void* input = nullptr;
  void* output = nullptr;
  std::int64_t numel = 0;      // tokens x hidden, a multiple of 8
  std::int64_t max_numel = 0;  // what the slabs are laid out for
  int max_blocks = 0;
  int blocks = 1;
  int threads = 256;
  int variant = 0;  // FlashInfer's pcie_ipc::Variant value (SM kernels: 0..3)
  bool pdl = false;
  const std::int64_t* slabs = nullptr;  // host: every rank's slab as mapped here, [nranks]
  cudaStream_t stream = nullptr;
};

// The header's layout of one rank's slab (compute_workspace_layout) and the word offsets of the
// scratch regions' {epoch, arrival} pairs (scratch_state_offset), for 16-bit elements.
struct PcieLayout {
  std::uint64_t signal_bytes = 0;
  std::uint64_t scratch_bytes = 0;  // per region: pack at signal_bytes, block after it
  std::uint64_t max_payload_bytes = 0;
  std::uint64_t total_bytes = 0;
  int block_state_word = 0;
  int pack_state_word = 0;
  int signal_phases = 0;
};

// One poll site's time in one block (the poll-profiled instance, fi_poll_profile.cuh): thread 0's
// polls at a source line of the header, how many and their cycles, summed since the last read.
struct PollSiteCycles {
  std::uint32_t line = 0;  // 0: an unused entry
  std::uint32_t polls = 0;
  std::uint64_t cycles = 0;
};
inline constexpr int kPollProfileBlocks = 128;  // the header's AR_MAX_BLOCKS
inline constexpr int kPollProfileSites = 16;

using PcieLaunchFn = cudaError_t (*)(const PcieCall& call);
// Copies [kPollProfileBlocks][kPollProfileSites] entries to `out` (host) and zeroes them.
using PcieProfileFn = cudaError_t (*)(PollSiteCycles* out);
using PcieLayoutFn = void (*)(int nranks, std::int64_t max_numel, int max_blocks, PcieLayout* out);

}  // namespace fusioncheck::adapters::fi
