#pragma once
// DESIGN.md invariants 1-7 and 11, checked on the ControlStates read back from every rank
// before and after one call (all ranks idle). Plain C++: the CPU tests feed it synthetic
// states, the GPU tests real ones. Each violation is one line starting "invariant <n>:";
// at most a few lines per invariant and rank (the first mismatch and a count).
#include <cstdint>
#include <string>
#include <vector>

#include "fusioncheck/kernels/types.hpp"
#include "fusioncheck/kernels/workspace.hpp"

namespace fusioncheck::kernels {

// inputs[r]: rank r's input of the call as T bits (tokens * hidden elements).
std::vector<std::string> check_oneshot_invariants(const std::vector<ControlState>& before,
                                                  const std::vector<ControlState>& after,
                                                  const std::vector<std::vector<std::uint16_t>>& inputs,
                                                  DType dtype);

// Invariants 2 (two-shot half), 3, 7, 11 after a two-shot call.
std::vector<std::string> check_twoshot_invariants(const std::vector<ControlState>& before,
                                                  const std::vector<ControlState>& after);

// The Lamport element a rank pushes for an input element (T bits): -0 becomes +0; with an
// fp32 Lamport buffer the value is widened first. Returned in the low elem_bytes bytes.
std::uint32_t pushed_lamport_bits(std::uint16_t input_bits, DType dtype, int elem_bytes);

}  // namespace fusioncheck::kernels
