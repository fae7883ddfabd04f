#pragma once
// SGLang's one-shot and two-shot push allreduce (the JIT sources of the sglang wheel:
// csrc/distributed/custom_all_reduce.cuh over sgl_kernel/distributed/communicator.cuh) as a
// KernelUnderTest ("sglang-push"). Its protocol and invariants S1-S3: docs/protocols.md,
// "SGLang push protocol". Built from the wheel that ci/fetch_sglang.sh unpacks, never from code
// in this repository.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fusioncheck/gpu/kernel_registry.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"

namespace fusioncheck::adapters {

// Registers "sglang-push" (in every build: one without SGLang's sources says why).
void add_sglang_kernels(gpu::KernelRegistry& registry);
// Why this build has no sglang-push kernel; "" when it has one.
std::string sglang_push_unavailable_reason();
// The sglang release its kernels are ("0.5.23"), or the tree given at configure time.
std::string sglang_source();
gpu::KernelChoice sglang_push_choice();
// Its patched copies built here (negative controls, adapters/sglang/patches).
std::vector<gpu::MutantId> sglang_push_patches();
// Throws kernels::InvalidLaunch when this build lacks the family.
std::unique_ptr<gpu::KernelUnderTest> make_sglang_push(kernels::Bootstrap& bootstrap,
                                                       const gpu::MutantId& mutant);

// Its host-side rules, without a GPU (sglang_rules.cpp).
inline constexpr int kSglangVecBytes = 16;  // the kernels move 16-byte vectors
inline constexpr int kSglangMaxRanks = 8;   // the instances: 2, 4, 6 and 8 ranks
// Launch variants: 0 the one-shot kernel, 1 the two-shot kernel (SGLang picks by size and its
// tuned thresholds; both are drawn here, as an explicit algorithm choice does).
std::vector<gpu::KernelVariant> sglang_push_variants();
gpu::KernelTraits sglang_push_traits();
// Why it cannot run this call (one line), or "" if it can.
std::string sglang_push_refusal(const kernels::FusedParams& params, bool twoshot);
// The block size the wheel's host entry picks (choose_block_size, and at least one warp per
// peer for the two-shot kernel) for `vecs` 16-byte vectors on a grid of `blocks` blocks (the
// counter array's length) of a GPU with `sm_count` SMs.
int sglang_push_block_size(std::uint64_t vecs, int sm_count, bool two_shot, int ranks, int blocks);
// Bytes of one slot a call uses: the one-shot kernel its whole input, the two-shot kernel two
// chunks of ceil(vecs / ranks) vectors.
std::uint64_t sglang_push_slot_use(std::uint64_t vecs, bool two_shot, int ranks);

// One phase of a rank's slots after a stuck call: the vectors one slot still awaits (+0 in a
// 4-byte word) while another slot holds them. `slots` holds `ranks` slots of `used` bytes, in
// source order; `unused_slot` (-1: none) is a slot the call never writes (a two-shot call's
// own, whose partial the owner reads from its input).
struct PushSlotScan {
  int first_awaited = -1;  // the slot awaited at the first such vector (-1: none)
  std::uint64_t first_vector = 0;
  std::uint64_t vectors = 0;  // how many such vectors
};
PushSlotScan scan_push_slots(const std::uint8_t* slots, int ranks, std::uint64_t used,
                             int unused_slot);

// A hang record of a stuck call (the adapter's: flag the phase, awaited_slot the peer whose slot
// still holds +0 at vector token while another slot holds it, `ranks` when none does; counter:
// how many vectors await a peer), as a report says it.
std::string sglang_push_hang_text(const kernels::HangRecord& record, int ranks);

// One rank's plane after a group of calls, as its checks read it.
struct SglangStateAfterCalls {
  std::uint64_t calls = 0;              // calls of the workspace so far
  std::vector<std::uint32_t> counters;  // the rank-local phase counters, one per block
  // Both phases of this rank's slots, the bytes the calls used of each: [phase][src][used].
  std::vector<std::uint8_t> slots;
  int ranks = 2;
  std::uint64_t used = 0;
  bool input_untouched = true;  // the last call's input equals what the rank generated
  bool guards_intact = true;
};
// Violations of S1 and S2 on this rank (and of its input and guard words), one line each
// ("SGLang invariant S<n>: ...").
std::vector<std::string> sglang_state_violations(const SglangStateAfterCalls& state);

}  // namespace fusioncheck::adapters
