#pragma once
// What a kernel sees of one rank's workspace: plain pointers and sizes, filled by
// workspace.cpp, passed by value in the kernel arguments. No CUDA headers needed.
#include <cstdint>

#include "fusioncheck/kernels/types.hpp"
#include "fusioncheck/protocol/hd.hpp"
#include "fusioncheck/protocol/workspace.hpp"

namespace fusioncheck::kernels::detail {

// Device pointer table of a rank (same contents on every rank), 5*N entries:
//   [b * N + r]      Lamport buffer b (0..2) of rank r   (host packs buffer-major)
//   [3N + r]         two-shot data buffer of rank r
//   [4N + r]         two-shot barrier flags of rank r
inline constexpr int kPointerKinds = 5;
FC_HD constexpr int table_lamport(int buffer, int rank, int ranks) { return buffer * ranks + rank; }
FC_HD constexpr int table_twoshot_data(int rank, int ranks) { return 3 * ranks + rank; }
FC_HD constexpr int table_barrier(int rank, int ranks) { return 4 * ranks + rank; }

// How many ranks share the SM count this process sees: where an MPS thread-percentage limit
// gives each rank on the GPU its own share (gpu::share_sms_before_cuda), the count the device
// reports is already this rank's share; otherwise every rank on the GPU sees all of them.
// Defined in automatic.cu.
int ranks_sharing_reported_sms(int ranks_on_device);

// Two-shot barrier flags per rank: [2 phases][kMaxTwoShotBlocks][kMaxRanks] uint32.
inline constexpr int kMaxTwoShotBlocks = 256;
inline constexpr int kBarrierPhases = 2;
FC_HD constexpr int barrier_index(int phase, int block, int rank) {
  return (phase * kMaxTwoShotBlocks + block) * protocol::kMaxRanks + rank;
}
inline constexpr std::uint64_t kBarrierFlagWords =
    std::uint64_t{kBarrierPhases} * kMaxTwoShotBlocks * protocol::kMaxRanks;

struct DeviceWorkspace {
  protocol::ControlBlock* control = nullptr;
  const std::uint64_t* pointer_table = nullptr;
  // The Lamport part of the table again, by value: a kernel reads it from its parameters
  // (constant cache) rather than with a dependent global load on the path of every push.
  // Entries [table_lamport(b, r, N)] for N ranks; the rest are 0.
  std::uint64_t lamport[protocol::kLamportBuffers * protocol::kMaxRanks] = {};
  std::uint32_t* hang_claim = nullptr;       // device word: first expiring thread takes it
  HangRecord* hang_record = nullptr;         // host-mapped, device address
  WaitProfileEntry* wait_profile = nullptr;  // per block, only with FUSIONCHECK_WAIT_PROFILE
  std::uint64_t comm_size = 0;               // bytes per Lamport buffer
  std::uint64_t twoshot_bytes = 0;           // bytes of the two-shot data buffer
  int twoshot_blocks = 0;                    // the two-shot grid, fixed per workspace
};

}  // namespace fusioncheck::kernels::detail
