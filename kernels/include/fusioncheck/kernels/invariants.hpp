#pragma once
// docs/design.md invariants 1-7 and 11, checked on the ControlStates read back from every rank
// before and after one call (all ranks idle). Plain C++: the CPU tests feed it synthetic
// states, the GPU tests real ones. Each violation is one line starting "invariant <n>:";
// at most a few lines per invariant and rank (the first mismatch and a count).
#include <cstdint>
#include <string>
#include <vector>

#include "fusioncheck/kernels/lamport_scan.hpp"
#include "fusioncheck/kernels/types.hpp"
#include "fusioncheck/kernels/workspace.hpp"

namespace fusioncheck::kernels {

// inputs[r]: rank r's input of the call as T bits (tokens * hidden elements).
std::vector<std::string> check_oneshot_invariants(
    const std::vector<ControlState>& before, const std::vector<ControlState>& after,
    const std::vector<std::vector<std::uint16_t>>& inputs, DType dtype);

// Invariants 2 (two-shot half), 3, 7, 11 after a two-shot call.
std::vector<std::string> check_twoshot_invariants(const std::vector<ControlState>& before,
                                                  const std::vector<ControlState>& after);

// The same checks split for a harness in which every rank checks its own state (no need to
// move the Lamport buffers between processes): one rank's invariants 1, 2, 4-6 and 11 (r is
// its rank, inputs hold every rank's input), or 1, 2, 7 and 11 after a two-shot call; and
// invariant 3 over every rank's control block.
std::vector<std::string> check_oneshot_rank_invariants(
    int r, const ControlState& before, const ControlState& after,
    const std::vector<std::vector<std::uint16_t>>& inputs, DType dtype);
// Invariants 1, 2 and 11 of rank r after a one-shot call of `elems` elements per rank on n
// ranks: the checks that need no Lamport buffer (4-6 are in lamport_scan.hpp).
std::vector<std::string> check_oneshot_control_invariants(int r, const ControlState& before,
                                                          const ControlState& after, int n,
                                                          std::uint64_t elems);
std::vector<std::string> check_twoshot_rank_invariants(int r, const ControlState& before,
                                                       const ControlState& after);
std::vector<std::string> check_same_control_state(
    const std::vector<protocol::ControlBlock>& blocks);
std::vector<protocol::ControlBlock> control_blocks(const std::vector<ControlState>& states);

}  // namespace fusioncheck::kernels
