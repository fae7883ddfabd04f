#pragma once
// Workspace layout shared by the kernels (device memory + CUDA IPC) and the sim (its model
// of the same memory). Per rank:
//   Lamport buffer: kLamportBuffers x comm_size bytes, shared with every peer by IPC,
//     buffer b, slot r (the data pushed by rank r), element i at
//     b * comm_size + (r * elems_per_rank + i) * elem_bytes.
//   ControlBlock: private to the rank, framed by guard words (invariant 11).
//   Two-shot: a data buffer and a barrier-flag buffer per rank, shared by IPC.
#include <cstddef>
#include <cstdint>

#include "fusioncheck/protocol/hd.hpp"

namespace fusioncheck::protocol {

inline constexpr int kLamportBuffers = 3;
inline constexpr int kMinRanks = 2;
inline constexpr int kMaxRanks = 16;
inline constexpr int kVectorBytes = 16;  // every push/poll moves 16 bytes per thread
inline constexpr std::uint64_t kGuardWord = 0xFC5AFEC0DEC0FFEEull;

// Rank counts compiled as template instances of the kernels.
FC_HD constexpr bool is_supported_rank_count(int ranks) {
  return ranks == 2 || ranks == 4 || ranks == 8 || ranks == 16;
}

// Aligned to 16 bytes because the one-shot kernel reads the word at offset 16 with one
// 16-byte load.
struct alignas(16) ControlBlock {
  std::uint64_t guard_front;       // kGuardWord
  std::uint64_t comm_size;         // bytes per Lamport buffer
  std::uint64_t clear_size;        // elements the next one-shot call clears
  std::uint32_t flag;              // Lamport flag f in {0,1,2}
  std::uint32_t two_shot_flag;     // barrier flag of the two-shot path, in {0,1,2}
  std::uint32_t arrival_counter;   // blocks of the current one-shot call that arrived
  std::uint32_t two_shot_counter;  // arrival counter of the two-shot path
  std::uint64_t guard_back;        // kGuardWord
};
static_assert(sizeof(ControlBlock) == 48, "ControlBlock layout is part of the protocol");
// The one-shot kernel reads clear_size and flag with one 16-byte load (one memory round trip
// instead of two on the path of every call), so they share the aligned 16-byte word at
// offset 16, flag in the low half of its second 8 bytes and two_shot_flag in the high half.
// The PTX memory model treats that load as two 8-byte loads; whatever writes the word while
// a call reads it must write whole 8-byte halves (step 7 of the same call does: flag and
// two_shot_flag as one 8-byte store, clear_size as another), or partial overlaps would be
// mixed-size races. For the same reason the arrival counters, which other blocks of the
// same call increment while the word is read, stay outside it.
static_assert(
    offsetof(ControlBlock, clear_size) == 16 && offsetof(ControlBlock, flag) == 24 &&
        offsetof(ControlBlock, two_shot_flag) == 28 &&
        offsetof(ControlBlock, arrival_counter) >= 32 &&
        offsetof(ControlBlock, two_shot_counter) >= 32,
    "clear_size and flag share the 16-byte word at offset 16; the counters lie outside it");

FC_HD constexpr ControlBlock initial_control_block(std::uint64_t comm_size) {
  return ControlBlock{kGuardWord, comm_size, 0u, 0u, 0u, 0u, 0u, kGuardWord};
}

FC_HD constexpr bool guards_intact(const ControlBlock& cb) {
  return cb.guard_front == kGuardWord && cb.guard_back == kGuardWord;
}

// Byte offset of element `index` of slot `rank` in Lamport buffer `buffer`.
FC_HD constexpr std::uint64_t lamport_offset(int buffer, int rank, std::uint64_t index,
                                             std::uint64_t elems_per_rank, std::uint64_t comm_size,
                                             int elem_bytes) {
  return static_cast<std::uint64_t>(buffer) * comm_size +
         (static_cast<std::uint64_t>(rank) * elems_per_rank + index) *
             static_cast<std::uint64_t>(elem_bytes);
}

// Invariant 9: one call's data, all ranks' slots, must fit one buffer.
FC_HD constexpr bool fits_lamport_buffer(int ranks, std::uint64_t elems_per_rank, int elem_bytes,
                                         std::uint64_t comm_size) {
  return static_cast<std::uint64_t>(ranks) * elems_per_rank *
             static_cast<std::uint64_t>(elem_bytes) <=
         comm_size;
}

}  // namespace fusioncheck::protocol
