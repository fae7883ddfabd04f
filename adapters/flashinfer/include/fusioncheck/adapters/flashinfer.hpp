#pragma once
// FlashInfer's TRT-LLM allreduce fusion (include/flashinfer/comm/trtllm_allreduce_fusion.cuh:
// the one-shot Lamport and the two-shot kernel behind allreduce_fusion_op) as a
// KernelUnderTest, built against FlashInfer's headers (ci/fetch_flashinfer.sh, or
// -DFUSIONCHECK_FLASHINFER_INCLUDE=DIR for another tree). Its negative controls are patched
// copies of the header (adapters/flashinfer/fusion/patches), one per catalogue mutant id.
// docs/flashinfer.md has the facts of FlashInfer's layout and behaviour that the adapter
// and the reference follow.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fusioncheck/gpu/kernel_registry.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"

namespace fusioncheck::adapters {

// Whether this build has the adapter; if not, why (one line, with what to do).
bool flashinfer_available();
std::string flashinfer_unavailable_reason();
// The FlashInfer version or include tree the adapter was built against.
std::string flashinfer_source();
// The nvcc flags of its fast-math instances (FlashInfer's JIT flags, read from the wheel; the
// kernel's launch variant 1), or "" when this build has none; then why (one line).
std::string flashinfer_fast_math_flags();
std::string flashinfer_fast_math_refused();

// The patched copies this build has (mutant ids of the catalogue), and those of them also
// built with FlashInfer's JIT flags (launch variant 1 of the copy).
std::vector<gpu::MutantId> flashinfer_patches();
std::vector<gpu::MutantId> flashinfer_fast_math_patches();
// The patches that do not apply to the tree this build uses (never the pinned release, where
// the configuration stops instead) or that -DFUSIONCHECK_FLASHINFER_COPIES=OFF left
// uncompiled, each with why.
std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_patches_not_built();

// Other flashinfer-python releases built beside the main tree (-DFUSIONCHECK_FLASHINFER_RELEASES,
// ci/flashinfer_history.sh), driven as --kernel flashinfer@<release>; and the releases asked
// for that the adapter cannot drive (compile probes), each with why.
std::vector<std::string> flashinfer_releases();
std::vector<std::pair<std::string, std::string>> flashinfer_releases_refused();
// The choice for --kernel flashinfer@<release>; throws kernels::InvalidLaunch, naming the
// releases it has, for one this build lacks.
gpu::KernelChoice flashinfer_release_choice(const std::string& release);

// Why a patched copy of the fusion header may survive the kill table in this placement ("": it
// must die): the copies of fixes whose bug the GPU cannot show.
std::string flashinfer_mutant_may_survive(const gpu::MutantId& m,
                                          const gpu::GpuPlacement& placement);

// Throws kernels::InvalidLaunch when the adapter is unavailable or the patch is not built.
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer(kernels::Bootstrap& bootstrap,
                                                      const gpu::MutantId& patch);

// The choice for gpu::CheckOptions / SmokeOptions ("flashinfer").
gpu::KernelChoice flashinfer_choice();

// FlashInfer's older Lamport kernel (flashinfer/comm/trtllm_allreduce.cuh,
// lamport_style_one_shot_all_reduce_norm_kernel: residual + RMSNorm, at most 16 tokens) from
// the same headers, as a second kernel under test ("flashinfer-legacy"; docs/flashinfer.md).
// Throws kernels::InvalidLaunch when the adapter is unavailable or for a mutant (it has none).
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_legacy(kernels::Bootstrap& bootstrap,
                                                             const gpu::MutantId& mutant);
gpu::KernelChoice flashinfer_legacy_choice();

// Its host-side rules, without a GPU (legacy_rules.cpp):
// whether its launcher covers a row of `hidden` elements exactly (each thread one 16-byte
// vector, no bounds check: hidden == cluster x block x 8 with the launcher's cluster of at
// most 8 blocks); the same for every rank count it is built for.
bool flashinfer_legacy_runs_hidden(int hidden);
// What it supports, for the case generators (hidden sizes up to gpu::CaseLimits::kMaxHidden).
gpu::KernelTraits flashinfer_legacy_traits();
// Why it cannot run this call (one line), or "" if it can; `cc_major` is the device's compute
// capability (0: not checked).
std::string flashinfer_legacy_refusal(const kernels::FusedParams& params, bool twoshot,
                                      int cc_major);

// FlashInfer's PCIe allreduce (flashinfer/comm/pcie_ipc_all_reduce.cuh: the SM kernels of
// pcie_ipc::all_reduce for 2, 4 and 8 ranks, allreduce only, with their +0 sentinel protocol)
// from the same headers ("flashinfer-pcie"; docs/flashinfer.md). Its negative controls are
// patched copies of that header (adapters/flashinfer/pcie/patches). Throws
// kernels::InvalidLaunch when this build lacks it or the patched copy.
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_pcie(kernels::Bootstrap& bootstrap,
                                                           const gpu::MutantId& patch);
// The original header with its poll loops timed (gpu bench --wait-profile); throws
// kernels::InvalidLaunch when this build lacks that copy.
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_pcie_poll_profiled(
    kernels::Bootstrap& bootstrap);
gpu::KernelChoice flashinfer_pcie_choice();
std::vector<gpu::MutantId> flashinfer_pcie_patches();
std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_pcie_patches_not_built();
// Why this build has no flashinfer-pcie kernel; "" when it has one.
std::string flashinfer_pcie_unavailable_reason();

// Its host-side rules, without a GPU (pcie_rules.cpp). A launch variant: FlashInfer's
// pcie_ipc::Variant with a grid, and how that kernel sums (KernelTraits::variants).
struct PcieVariant {
  int kernel_variant = 0;  // pcie_ipc::Variant: 0 unstaged, 1 staged, 2 staged ring, 3 flat staged
  int blocks = 1;
  int threads = 256;
  bool barriers = false;  // a kernel with per-block barrier generations (the ring, the topology
                          // kernels of 8 ranks)
  // The copy-engine ring (ce_ring_all_reduce_flat; kernel_variant 4: flag kernels, 6: stream
  // memory operations), with the pieces per chunk asked for (ce_pick_pieces may take fewer).
  bool copy_engine = false;
  int pieces_hint = 0;
  gpu::KernelVariant info;
};
// Every SM variant of its all_reduce() for `ranks` (2, 4, 8; empty for another count), each
// kernel with a few grids: FlashInfer's untuned defaults and others its tuner tries; then the
// copy-engine ring's flat variants (with_copy_engine: the tree has pcie_ipc_ce_ring.cuh).
std::vector<PcieVariant> flashinfer_pcie_variants(int ranks, bool with_copy_engine = true);
// The copy-engine ring's pieces per chunk for a call of `numel` 16-bit elements (its
// ce_pick_pieces: a pure function of the shape).
int flashinfer_pcie_ce_pieces(int ranks, std::int64_t numel, int pieces_hint);
// Whether a ring wait for `count` passes with its flag at `flag`: the header's wrap-safe
// comparison (generation_reached).
bool flashinfer_pcie_ce_flag_reached(std::int32_t flag, std::int32_t count);
// The ring's flag slots as the host's release writes them (`flag_stride` bytes apart): each
// flag 2^30 past its slot's wait count, so that every wait queued on the slot passes at once
// under the header's wrap-safe comparison (a wait adds one to the count, then spins).
std::vector<std::uint8_t> flashinfer_pcie_ce_release_flags(const std::vector<std::int32_t>& waits,
                                                           int flag_stride);
// Which scratch region a kernel variant stages in (its all_reduce(): 0 block, 1 pack; -1: the
// copy-engine ring, its own area) and whether that region is left all +0 after every call
// (only sentinel kernels stage there).
int flashinfer_pcie_region(int ranks, int kernel_variant);
bool flashinfer_pcie_region_sentinel_only(int ranks, int region);
gpu::KernelTraits flashinfer_pcie_traits(int ranks);
// Why it cannot run this call (one line), or "" if it can.
std::string flashinfer_pcie_refusal(const kernels::FusedParams& params, bool twoshot);
// The largest grid it is drawn with (blocks): the workspace's max_blocks.
inline constexpr int kPcieMaxBlocks = 128;  // FlashInfer's AR_MAX_BLOCKS

// Its signal words (pcie_ipc_all_reduce.cuh, 0.7.4: phase_offset, flag_offset), for a workspace
// of kPcieMaxBlocks blocks: barrier slot (phase, block, peer) and block b's generation.
struct PcieSignalLayout {
  int ranks = 2;
  int phases = 8;            // kSignalPhases
  int block_state_word = 0;  // {epoch, arrival} of the block region (scratch_state_offset)
  int pack_state_word = 0;   // and of the pack region
  int phase_word(int phase, int block, int peer) const {
    return kPcieMaxBlocks + phase * kPcieMaxBlocks * ranks + block * ranks + peer;
  }
  int flag_word(int block) const {
    return kPcieMaxBlocks + phases * kPcieMaxBlocks * ranks + block;
  }
  int state_word(int region) const { return region == 1 ? pack_state_word : block_state_word; }
};

// The state after calls, as read back, and what the calls were: the input of the P1-P6
// checks of one rank (docs/protocols.md, "PCIe sentinel protocol").
struct PcieStateAfterCalls {
  PcieSignalLayout layout;
  std::vector<std::int32_t> before;  // the signal words before the calls
  std::vector<std::int32_t> after;   // and after them
  std::vector<int> variants;         // each call's index into flashinfer_pcie_variants(ranks)
  // Each region (0 block, 1 pack) where only sentinel kernels stage, scanned where it lies:
  // its size and its first byte that is not +0 (first == bytes: none; bytes 0: not scanned).
  struct RegionScan {
    std::uint64_t bytes = 0;
    std::uint64_t first_nonzero = 0;
    std::uint8_t value = 0;
  };
  RegionScan regions[2];
  std::vector<std::int64_t> numels;  // each call's elements
  // The copy-engine area: each flag slot's flag (written by its publisher), this rank's send
  // and wait counts, the wait counts before the calls, and this rank's binary flags (empty:
  // none). Empty flags: the tree has no copy-engine ring.
  int ce_handshake_slot = 0;
  std::vector<std::int32_t> ce_flags, ce_send, ce_wait, ce_wait_before, ce_binary;
  bool guards_intact = true;
};
// This rank's violations of P1-P5 and of the copy-engine ring's C1-C2, one line each ("PCIe
// invariant P<n>: ...", "copy-engine invariant C<n>: ...").
std::vector<std::string> pcie_state_violations(const PcieStateAfterCalls& state);
// FlashInfer's MoE allreduce fusion (flashinfer/comm/trtllm_moe_allreduce_fusion.cuh: the MoE
// reduction and finalize kernels, one-shot Lamport on the fusion kernel's workspace) from the
// same headers ("flashinfer-moe"; docs/flashinfer.md). Its negative controls are patched copies
// of that header (adapters/flashinfer/moe/patches). Throws kernels::InvalidLaunch where this
// build has none.
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_moe(kernels::Bootstrap& bootstrap,
                                                          const gpu::MutantId& patch);
gpu::KernelChoice flashinfer_moe_choice();
std::vector<gpu::MutantId> flashinfer_moe_patches();
// The blocks the MoE kernels hold inside the kernel for a case (one line per held rank: rank,
// block, header line, time), where its calls run on a copy with hooks (the original's
// sync-delay copy for bf16 cases with delays, or a patched copy); none otherwise.
std::vector<std::string> flashinfer_moe_case_notes(const gpu::GpuCase& c,
                                                   const gpu::MutantId& patch);
// Patched copies of the MoE header this build applied but did not compile, each with why.
std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_moe_patches_not_built();
// Why this build has no flashinfer-moe kernel; "" when it has one.
std::string flashinfer_moe_unavailable_reason();

// Registers FlashInfer's families: flashinfer, flashinfer-legacy and flashinfer@VERSION. They
// are registered in every build; where this build lacks the adapter or a release, choosing
// one throws gpu::BadInput with the reason.
// `gpu repro`: a replay file of flashinfer, flashinfer-moe or flashinfer-legacy as a
// stand-alone CUDA program in an empty (or new) folder: sources, CMakeLists.txt, README.md,
// the case's inputs and the reference's expected outputs (adapters/flashinfer/repro/). Needs
// no GPU. `known_path`: a ledger whose matching entry names the finding ("" : the replay's
// findings). Throws gpu::BadInput for a replay it cannot export, naming why; gpu::RunFailure
// when a file cannot be written.
struct ReproRequest {
  std::string replay_path;
  std::string out_dir;
  std::string known_path;
  int runs = 20;  // runs of the case in the program (as gpu check --replay-runs)
};
struct ReproExport {
  std::string finding;             // the ledger id, or "the finding of <replay file>"
  std::string kernel;              // the family
  std::vector<std::string> files;  // relative to out_dir
};
ReproExport export_flashinfer_repro(const ReproRequest& request);
// The release of the main tree ("0.7.4"), "" for a tree given at configure time; the include
// tree it was built from; the SHA-256 of one of its headers (relative to the tree; "" unknown).
std::string flashinfer_main_release();
std::string flashinfer_include_dir();
std::string flashinfer_header_sha256(const std::string& header);

void add_flashinfer_kernels(gpu::KernelRegistry& registry);

}  // namespace fusioncheck::adapters
