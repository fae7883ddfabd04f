#pragma once
// Buffer rotation of the one-shot Lamport protocol. Call k (flag f = k mod 3) pushes into
// buffer f % 3 and clears (f + 2) % 3, the buffer the previous call used. Mutants that
// break the rotation are parameters here, so the sim and the kernels break it identically.
#include <cstdint>

#include "fusioncheck/protocol/hd.hpp"
#include "fusioncheck/protocol/mutants.hpp"

namespace fusioncheck::protocol {

FC_HD constexpr int lamport_buffer_count(Mutant m = Mutant::none) {
  return m == Mutant::two_buffers ? 2 : 3;
}

// Flags cycle through 0 .. count-1.
FC_HD constexpr std::uint32_t next_flag(std::uint32_t flag, Mutant m = Mutant::none) {
  return (flag + 1u) % static_cast<std::uint32_t>(lamport_buffer_count(m));
}

FC_HD constexpr int data_buffer_index(std::uint32_t flag, Mutant m = Mutant::none) {
  return static_cast<int>(flag % static_cast<std::uint32_t>(lamport_buffer_count(m)));
}

FC_HD constexpr int clear_buffer_index(std::uint32_t flag, Mutant m = Mutant::none) {
  const auto count = static_cast<std::uint32_t>(lamport_buffer_count(m));
  if (m == Mutant::wrong_clear_buffer) return static_cast<int>((flag + 1u) % count);
  return static_cast<int>((flag + count - 1u) % count);  // the previous call's buffer
}

// Elements this call clears. The correct protocol clears what the previous call wrote;
// clear-size-current clears with this call's size instead (misses a shrinking call).
FC_HD constexpr std::uint64_t elements_to_clear(std::uint64_t stored_clear_size,
                                                std::uint64_t this_call_ranks_times_size,
                                                Mutant m = Mutant::none) {
  return m == Mutant::clear_size_current ? this_call_ranks_times_size : stored_clear_size;
}

}  // namespace fusioncheck::protocol
