#pragma once
// The example kernel's host entry points (my_kernel.cu): one call as the device sees it, and
// the launchers. No device code here; the adapter (adapter.cpp) fills a Launch from the
// suite's FusedParams and its workspace.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "fusioncheck/kernels/types.hpp"
#include "fusioncheck/protocol/protocol.hpp"

namespace my_kernel {

inline constexpr int kMaxThreads = 256;  // per block

struct Launch {
  // The call's tensors (device pointers, bf16 or f16 as `bf16` says).
  const void* input = nullptr;        // [tokens x hidden]
  const void* residual_in = nullptr;  // [tokens x hidden]; residual_rmsnorm only
  const void* gamma = nullptr;        // [hidden]; residual_rmsnorm only
  void* allreduce_out = nullptr;      // allreduce only
  void* residual_out = nullptr;       // residual_rmsnorm only
  void* norm_out = nullptr;           // residual_rmsnorm only
  // Rank r's three Lamport buffers (3 x comm_size bytes, contiguous) as mapped in this process.
  std::uint8_t* buffers[fusioncheck::protocol::kMaxRanks] = {};
  std::uint64_t comm_size = 0;
  fusioncheck::protocol::ControlBlock* control = nullptr;  // this rank's, device memory
  unsigned* hang_claim = nullptr;                          // device word: 0 until a wait expired
  fusioncheck::kernels::HangRecord* hang = nullptr;        // host-mapped, device address
  int ranks = 2;
  int rank = 0;
  int tokens = 1;
  int hidden = 16;
  bool bf16 = true;
  bool allreduce_only = false;  // Pattern::allreduce, else residual_rmsnorm
  bool fp32_accumulation = true;
  bool early_trigger = false;
  bool use_pdl = true;
  float eps = 1e-6f;
  float weight_bias = 0.0f;
  std::uint64_t spin_budget_cycles = 1ull << 31;
  std::uint32_t call_index = 0;
  std::uint32_t delay_seed = 0;  // seeded pauses (FusedParams::delay_seed); 0: none
  std::uint32_t delay_max_ns = 0;
  int blocks = 1;    // the grid (rules.hpp: grid_blocks)
  int threads = 32;  // per block (rules.hpp: block_threads)
};

// Enqueues one call. cudaErrorNotSupported: no instance for this (dtype, mutant).
cudaError_t launch(const Launch& call, fusioncheck::protocol::Mutant mutant, cudaStream_t stream);

// Writes the 16-bit sentinel over `bytes` (a multiple of 16) at `dst`.
cudaError_t fill_sentinel(void* dst, std::uint64_t bytes, cudaStream_t stream);

}  // namespace my_kernel
