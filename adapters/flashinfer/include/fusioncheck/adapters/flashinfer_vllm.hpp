#pragma once
// FlashInfer's copy of vLLM's custom allreduce (flashinfer/comm/vllm_custom_all_reduce.cuh: the
// one-stage and two-stage kernels behind CustomAllreduce, with its counter barriers) as a
// KernelUnderTest ("flashinfer-vllm"), from the same headers as the other FlashInfer families.
// Its protocol and invariants V1-V4: docs/protocols.md, "vLLM barrier protocol". Its negative
// controls are patched copies of that header (adapters/flashinfer/vllm/patches).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fusioncheck/gpu/kernel_under_test.hpp"

namespace fusioncheck::adapters {

// Throws kernels::InvalidLaunch when this build lacks the family or the patched copy.
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_vllm(kernels::Bootstrap& bootstrap,
                                                           const gpu::MutantId& patch);
gpu::KernelChoice flashinfer_vllm_choice();
std::vector<gpu::MutantId> flashinfer_vllm_patches();
std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_vllm_patches_not_built();
// Why a patched copy may survive the kill table in this placement ("": it must die).
std::string flashinfer_vllm_mutant_may_survive(const gpu::MutantId& m,
                                               const gpu::GpuPlacement& placement);
// Whether a patched copy shows only with a rank held inside a call while its peer runs into
// the next one (the one-stage end barrier removed: the peer's next staging copy overwrites the
// registered input the held rank has yet to read).
bool flashinfer_vllm_mutant_needs_held_rank(const gpu::MutantId& m);
// Why this build has no flashinfer-vllm kernel; "" when it has one.
std::string flashinfer_vllm_unavailable_reason();

// Its host-side rules, without a GPU (vllm_rules.cpp).
inline constexpr int kVllmThreads = 512;     // allreduce()'s default block
inline constexpr int kVllmBlockLimit = 36;   // the header's kMaxBlocks, FlashInfer's default
inline constexpr int kVllmCounterLanes = 8;  // a Signal's counters per block: one per peer
// A launch variant: which kernel (0: allreduce() picks by size, 1: one stage, 2: two stages)
// with which block limit, and how it sums.
struct VllmVariant {
  int stage = 0;
  int block_limit = kVllmBlockLimit;
  gpu::KernelVariant info;
};
std::vector<VllmVariant> flashinfer_vllm_variants(int ranks);
// The bytes per rank from which allreduce() runs the two-stage kernel (the header's thresholds
// for a full NVLink mesh); 0: never (2 ranks).
std::uint64_t flashinfer_vllm_two_stage_from_bytes(int ranks);
// The kernel a call of `bytes` per rank runs under a variant (1 or 2), and its grid.
int flashinfer_vllm_stage(int ranks, const VllmVariant& variant, std::uint64_t bytes);
int flashinfer_vllm_grid(std::uint64_t numel, int block_limit);
// Its traits; `barrier_hooks` > 0: the instance is a sync-delay copy with that many barrier
// hooks, and a rank may be held inside the kernel after its start barrier, before its loads
// (HoldPoint::before_poll: every block of it at every barrier hook, plans set ahead of the
// call); any other hold is a pause before the call.
gpu::KernelTraits flashinfer_vllm_traits(int ranks, int barrier_hooks = 0);
// Why it cannot run this call (one line), or "" if it can.
std::string flashinfer_vllm_refusal(const kernels::FusedParams& params, bool twoshot);

// One rank's state after a group of calls, as its checks read it: the counters of its Signal
// (self[block][8], peer[2][block][8]) before and after, the grids of the calls, and the last
// call's buffers where an invariant compares them (empty: not compared).
struct VllmStateAfterCalls {
  int ranks = 2;
  int rank = 0;
  int max_blocks = kVllmBlockLimit;
  std::vector<std::uint32_t> self_before, self_after, peer_after;
  std::vector<int> grids;            // each call's blocks
  int last_stage = 1;                // the kernel of the last call
  std::uint64_t last_packs = 0;      // its 16-byte packs
  std::vector<std::uint8_t> tmp;     // my temporary buffer's first part (two-stage last call)
  std::vector<std::uint8_t> output;  // the last call's output, whole
  std::vector<std::uint8_t> registered, input;  // the registered buffer it read, my input
  bool guards_intact = true;
};
// Violations of V1-V4 on this rank, one line each ("vLLM invariant V<n>: ...").
std::vector<std::string> vllm_state_violations(const VllmStateAfterCalls& state);

}  // namespace fusioncheck::adapters
