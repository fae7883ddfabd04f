#pragma once
// The example kernel's host-side rules, host C++ (tested on the CPU, tests/rules_test.cpp):
// what it runs (its KernelTraits), why it refuses a call, and how the adapter sizes its
// workspace, grid and blocks.
#include <cstdint>
#include <string>
#include <vector>

#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/kernels/types.hpp"

namespace my_kernel {

// One-shot only, 16-bit Lamport elements, allreduce or residual + RMSNorm; everything else
// of the suite's draw (both dtypes, both accumulations, weight_bias, PDL either way, early
// or at-end trigger, graphs, shape changes, -0 inputs, any hidden multiple of 16) it runs.
fusioncheck::gpu::KernelTraits traits();

// The negative controls it is built with (steps.hpp, kMutants).
std::vector<fusioncheck::protocol::Mutant> mutants();

// Why the kernel does not run this call ("" if it does). comm_size: bytes per Lamport
// buffer of the prepared workspace (0: not checked).
std::string refusal(const fusioncheck::kernels::FusedParams& p, bool twoshot,
                    fusioncheck::protocol::Mutant mutant, std::uint64_t comm_size);

// Bytes per Lamport buffer for calls of up to max_elems elements per rank: every rank's slot
// of the largest call, a power of two from 64 KiB (a size class: workspaces are kept by it).
std::uint64_t comm_size_for(int ranks, std::uint64_t max_elems);

// One block per row, at most one block per SM of this rank's share of the GPU, so that every
// block of every rank sharing it is resident at once (the blocks spin on each other's pushes),
// at most max_blocks where the call sets it (> 0).
int grid_blocks(int tokens, int sm_count, int ranks_on_device, int max_blocks);

// Threads per block: one per 16-byte vector of a row, in whole warps, at most kMaxThreads.
int block_threads(int hidden);

}  // namespace my_kernel
