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
  // The copy-engine area after the two scratch regions: flag slots (ce_flag_stride bytes
  // apart; the handshake slot after the ring's), this rank's send then wait counters (an int32
  // per slot), the landing slots.
  std::uint64_t ce_flag_bytes = 0;
  std::uint64_t ce_counter_bytes = 0;
  std::uint64_t ce_scratch_bytes = 0;
  int ce_flag_slots = 0;
  int ce_handshake_slot = 0;
  int ce_flag_stride = 0;
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

// The copy-engine ring of the same instance (pcie_ipc_ce_ring.cuh, ce_ring_all_reduce_flat).
struct PcieCeApi {
  // One rank's streams and events (the header's CeResources); binary_flags: every rank's
  // binary flags as mapped here, [nranks] (the stream-memory-operation variant's).
  cudaError_t (*create)(int nranks, void* const* binary_flags, void** resources);
  void (*destroy)(void* resources);
  // One call: PcieCall::variant 4 (flag kernels) or 6 (stream memory operations; one piece,
  // else the header falls back to flag kernels), pieces_hint 1-4 (ce_pick_pieces).
  cudaError_t (*launch)(const PcieCall& call, void* resources, int pieces_hint);
  std::uint64_t (*binary_flag_bytes)(int nranks);
};
// Fills `out`; false where the tree has no copy-engine ring.
using PcieCeApiFn = bool (*)(PcieCeApi* out);
// Copies [kPollProfileBlocks][kPollProfileSites] entries to `out` (host) and zeroes them.
using PcieProfileFn = cudaError_t (*)(PollSiteCycles* out);
using PcieLayoutFn = void (*)(int nranks, std::int64_t max_numel, int max_blocks, PcieLayout* out);

}  // namespace fusioncheck::adapters::fi
