#pragma once
// The bug catalogue (docs/design.md): each mutant rebuilds a broken protocol on purpose. The
// sim takes the mutant at run time, the kernels as a template argument; both take the
// ids and the meaning from here.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fusioncheck::protocol {

enum class Mutant : std::uint8_t {
  none = 0,
  pdl_wait_missing,
  early_trigger,
  float_sentinel,
  no_canonicalize,
  wrong_clear_buffer,
  clear_size_current,
  counter_not_reset,
  flag_before_arrival,
  two_buffers,
  sentinel_width,
  pointer_stride,
  barrier_no_release,
  divergent_config,
  empty_body,
  no_init_barrier,
  shared_counter,
  torn_element,
  twoshot_gather_overlap,
  no_pdl_wait,
  inputs_before_wait,
  // The +0 sentinel protocol of FlashInfer's PCIe allreduce (the sim's model of it, and
  // patched copies of its header).
  pcie_no_sanitise,
  pcie_tp2_half_from_payload,
  // The PCIe protocol's classes that only the sim's model of it builds (the debug switches
  // and hazards its header names).
  pcie_no_double_buffer,
  pcie_per_block_epoch,
  pcie_reset_other_half,
  pcie_arrive_before_read,
  pcie_state_in_scratch,
  pcie_sentinel_on_barrier_region,
  // FlashInfer's MoE allreduce fusion: a rank reading a peer's own buffer (sim and copies).
  moe_remote_read,
  // vLLM's custom allreduce barrier protocol (the sim's model of it): named after its fixes.
  vllm_one_counter_set,
  vllm_no_end_barrier,
  vllm_no_fence,
  // FlashInfer's MNNVL Lamport allreduce over multicast (the sim's model of it): the hazards
  // its header names and the catalogue's classes.
  mnnvl_two_buffers,
  mnnvl_sentinel_first_word,
  mnnvl_no_sanitize,
  mnnvl_clear_current,
  mnnvl_clear_size_current,
  mnnvl_clear_through_multicast,
  mnnvl_no_arrival_wait,
  mnnvl_flags_before_wait,
  // SGLang's push plane (the sim's model of it): the hazards its header's comments name.
  sglang_no_remap,
  sglang_one_phase,
  sglang_no_rearm,
  sglang_no_bumper,
  sglang_no_cluster_barrier,
  sglang_epoch_before_wait,
  // The copy-engine ring of FlashInfer's PCIe allreduce (the sim's model of it): the hazards
  // its header's comments name.
  ce_copy_before_add,
  ce_publish_before_copy,
  ce_no_fork,
  ce_no_join,
  ce_no_handshake,
  ce_no_join_no_handshake,
  ce_pieces_differ,
  // Our kernels' synchronisation inside one kernel: the blocks of a row's cluster, the warps
  // of a block.
  cluster_one_buffer,
  reduce_scratch_unguarded,
};

// Where the catalogue's mutant is built: our kernels (kInKernel) and the sim's models
// (kInSim: the Lamport protocol; kInSimPcie: FlashInfer's PCIe sentinel protocol; kInSimVllm:
// vLLM's custom allreduce barriers; kInSimMnnvl: FlashInfer's MNNVL Lamport allreduce;
// kInSimSglang: SGLang's push plane; kInSimCeRing: the copy-engine ring of FlashInfer's PCIe
// allreduce). Bits, so a row can name several. Another project's kernels build their negative
// controls as patched copies, registered by their family (gpu::KernelFamily::mutants), which
// may name a catalogue id.
enum MutantLayer : std::uint16_t {
  kInSim = 1u,
  kInKernel = 2u,
  kInSimPcie = 16u,
  kInSimVllm = 64u,
  kInSimMnnvl = 128u,
  kInSimSglang = 256u,
  kInSimCeRing = 512u
};

struct MutantInfo {
  Mutant mutant;
  std::string_view id;          // command-line id, as in docs/design.md
  std::string_view what;        // what the broken protocol does
  std::string_view real_world;  // the report behind it
  std::uint16_t layers;         // MutantLayer bits
};

inline constexpr std::array<MutantInfo, 55> kMutantCatalogue{{
    {Mutant::pdl_wait_missing, "pdl-wait-missing",
     "launched with PDL, grid-dependency wait compiled out",
     "FlashInfer __CUDA_ARCH__ < 1200 guards (PR 3903)", kInSim | kInKernel},
    {Mutant::early_trigger, "early-trigger",
     "dependents triggered before outputs are written, consumer reads them", "vLLM PR 45448",
     kInSim | kInKernel},
    {Mutant::float_sentinel, "float-sentinel", "sentinel tested with float ==", "FlashInfer 1136",
     kInSim | kInKernel | kInSimPcie},
    {Mutant::no_canonicalize, "no-canonicalize", "producer does not map input -0 to +0",
     "TRT-LLM PR 4226 class", kInSim | kInKernel},
    {Mutant::wrong_clear_buffer, "wrong-clear-buffer", "clears (f+1)%3 instead of (f+2)%3",
     "rotation bugs", kInSim | kInKernel},
    {Mutant::clear_size_current, "clear-size-current",
     "clears with the current call's size, not the previous", "TRT-LLM 6237", kInSim | kInKernel},
    {Mutant::counter_not_reset, "counter-not-reset", "arrival counter never reset", "-",
     kInSim | kInKernel | kInSimPcie},
    {Mutant::flag_before_arrival, "flag-before-arrival",
     "flag advanced without waiting for all blocks", "-", kInSim | kInKernel},
    {Mutant::two_buffers, "two-buffers", "double instead of triple buffering", "-",
     kInSim | kInKernel},
    {Mutant::sentinel_width, "sentinel-width", "16-bit sentinel fill read as fp32",
     "use_fp32_lamport mismatch", kInSim | kInKernel},
    {Mutant::pointer_stride, "pointer-stride",
     "host packs peer pointers at one stride, kernel reads another", "FlashInfer PR 3903",
     kInSim | kInKernel},
    {Mutant::barrier_no_release, "barrier-no-release", "two-shot flag without release/acquire",
     "TRT-LLM 8612, vLLM 2760", kInSim | kInKernel},
    {Mutant::divergent_config, "divergent-config", "one rank launches a different grid",
     "vLLM 43616", kInSim},
    {Mutant::empty_body, "empty-body", "kernel body compiled out for one arch",
     "FlashInfer PR 3903", kInSim | kInKernel},
    {Mutant::no_init_barrier, "no-init-barrier",
     "a rank pushes before a peer initialised its buffer", "-", kInSim},
    {Mutant::shared_counter, "shared-counter",
     "one-shot and two-shot share counter state while alternating", "tokenspeed 351", kInSim},
    {Mutant::torn_element, "torn-element", "element stored in pieces smaller than the element",
     "PTX single-copy atomicity", kInSim | kInKernel},
    {Mutant::twoshot_gather_overlap, "twoshot-gather-overlap",
     "two-shot gather region placed right after the current call's scatter slots: a larger "
     "next call's scatter overwrites rows a slower rank still reads",
     "fusioncheck: H200 smoke with injected delays", kInSim | kInKernel},
    {Mutant::no_pdl_wait, "no-pdl-wait",
     "launched with PDL, grid-dependency wait compiled out on every architecture",
     "FlashInfer PR 3903 class, on every GPU", kInKernel},
    {Mutant::inputs_before_wait, "inputs-before-wait",
     "residual and gamma loaded before the grid-dependency wait, launched with PDL behind their producer",
     "FlashInfer 0.7.1 fix (FusedOp before the wait)", kInKernel},
    {Mutant::pcie_no_sanitise, "pcie-no-sanitise",
     "+0 sentinel protocol: a real zero is pushed as +0 (not turned into -0), read as not yet written",
     "FlashInfer pcie_ipc_all_reduce.cuh: sentinel kernels sanitise real zeros", kInSimPcie},
    {Mutant::pcie_tp2_half_from_payload, "pcie-tp2-half-from-payload",
     "2-rank PCIe kernel sizes its epoch halves from the call's payload: a smaller call lands in "
     "the half a lagging peer still drains",
     "FlashInfer pcie_ipc_all_reduce.cuh: rank_stride_packs from max_numel", kInSimPcie},
    {Mutant::pcie_no_double_buffer, "pcie-no-double-buffer",
     "PCIe sentinel kernels pin every call to half 0 of their scratch region",
     "FlashInfer pcie_ipc_all_reduce.cuh: FLASHINFER_PCIE_IPC_DEBUG_NO_BLOCK_EPOCH", kInSimPcie},
    {Mutant::pcie_per_block_epoch, "pcie-per-block-epoch",
     "each block keeps its own epoch parity: after a change of grid size, blocks of one call "
     "disagree on the half",
     "FlashInfer pcie_ipc_all_reduce.cuh: FLASHINFER_PCIE_IPC_DEBUG_PER_BLOCK_EPOCH", kInSimPcie},
    {Mutant::pcie_reset_other_half, "pcie-reset-other-half",
     "consumed slots left as they are, the other half's slots reset to +0 instead",
     "clear of the wrong epoch (the Lamport wrong-clear-buffer class)", kInSimPcie},
    {Mutant::pcie_arrive_before_read, "pcie-arrive-before-read",
     "a block adds its arrival before it reads the epoch: the last arrival may flip the epoch "
     "under a block that has not read it",
     "arrival before the flag (the Lamport flag-before-arrival class)", kInSimPcie},
    {Mutant::pcie_state_in_scratch, "pcie-state-in-scratch",
     "the pack region's {epoch, arrival} pair lands inside the pack scratch (state slots out of "
     "step with the ScratchRegion enum)",
     "FlashInfer pcie_ipc_all_reduce.cuh: kScratchRegionCount comment", kInSimPcie},
    {Mutant::pcie_sentinel_on_barrier_region, "pcie-sentinel-on-barrier-region",
     "a sentinel kernel stages in the block region, where barrier kernels leave raw payload",
     "FlashInfer pcie_ipc_all_reduce.cuh: ScratchRegion comment", kInSimPcie},
    {Mutant::moe_remote_read, "moe-remote-read",
     "a rank polls each peer's slot in that peer's own Lamport buffer, which the peer clears in "
     "its next call: a rank that finishes first clears what a slower one has not read (a hang), "
     "and a buffer not cleared yet shows an older call's data as arrived",
     "FlashInfer 0.7.4 trtllm_moe_allreduce_fusion.cuh: the finalize kernel reads data_bufs[r]",
     kInSim},
    {Mutant::vllm_one_counter_set, "vllm-one-counter-set",
     "the barrier's peer counters in one set, not two alternating ones: a peer already at the "
     "next barrier overwrites the value a slower rank still waits for",
     "vLLM custom_all_reduce.cuh before vllm#8558 (the TP8 hangs of vllm#8404, #8410)", kInSimVllm},
    {Mutant::vllm_no_end_barrier, "vllm-no-end-barrier",
     "the one-stage kernel returns without its end barrier: a rank's next input lands in its "
     "registered buffer while a peer still reads the current one",
     "vLLM custom_all_reduce.cuh: cross_device_reduce_1stage's closing multi_gpu_barrier",
     kInSimVllm},
    {Mutant::vllm_no_fence, "vllm-no-fence",
     "the two-stage kernel's middle barrier without release/acquire: its flag may land before "
     "the reduce-scatter's stores, and a peer gathers a stale chunk",
     "vLLM custom_all_reduce.cuh: multi_gpu_barrier's need_fence (the barrier rework of vllm#2760)",
     kInSimVllm},
    {Mutant::mnnvl_two_buffers, "mnnvl-two-buffers",
     "two Lamport buffers rotated instead of three: a rank clears the buffer of its last call, "
     "which a peer a call ahead already writes its next call into",
     "trtllm_mnnvl_allreduce.cuh: LamportBufferLayout::sNumLamportBuffers = 3", kInSimMnnvl},
    {Mutant::mnnvl_sentinel_first_word, "mnnvl-sentinel-first-word",
     "the poll tests the first word of a packed vector for the sentinel, not every word: a "
     "vector whose store landed in part is read with sentinels in it",
     "trtllm_mnnvl_allreduce.cuh: isLamportDirty tests every 32-bit word", kInSimMnnvl},
    {Mutant::mnnvl_no_sanitize, "mnnvl-no-sanitize",
     "a payload (or a reduced value) equal to -0 is stored as it is: the reader takes it for "
     "the sentinel and polls for ever",
     "trtllm_mnnvl_allreduce.cuh: sanitizeLamportPayload (\"reduced values can round to the "
     "dirty sentinel\")",
     kInSimMnnvl},
    {Mutant::mnnvl_clear_current, "mnnvl-clear-current",
     "the current buffer is cleared instead of the dirty one: peers' stores of this call that "
     "landed are wiped, and the last call's buffer is never cleared",
     "the Lamport rotation (current / dirty index)", kInSimMnnvl},
    {Mutant::mnnvl_clear_size_current, "mnnvl-clear-size-current",
     "the dirty buffer is cleared with the current call's size and stage layout, not what the "
     "previous call wrote: a smaller call leaves the tail of a larger one for a later call to "
     "read",
     "trtllm_mnnvl_allreduce.cuh: the bytes to clear carried in the flags (TRT-LLM 6237 class)",
     kInSimMnnvl},
    {Mutant::mnnvl_clear_through_multicast, "mnnvl-clear-through-multicast",
     "the dirty buffer is cleared through the multicast pointer instead of the rank's own: a "
     "rank a call ahead clears the buffer a slower peer still polls",
     "trtllm_mnnvl_allreduce.cuh: clearDirtyLamportBuf(inputPtrs[rank]), own memory only",
     kInSimMnnvl},
    {Mutant::mnnvl_no_arrival_wait, "mnnvl-no-arrival-wait",
     "waitAndUpdate rotates the flags without waiting for every CTA's arrival: a block that "
     "reads the flags later uses the next call's buffer",
     "trtllm_mnnvl_allreduce.cuh: LamportFlags::ctaArrive / waitAndUpdate", kInSimMnnvl},
    {Mutant::mnnvl_flags_before_wait, "mnnvl-flags-before-wait",
     "the kernel reads the Lamport flags before its grid-dependency wait: launched early by "
     "PDL, it takes the index the previous call has not rotated yet",
     "trtllm_mnnvl_allreduce.cuh: LamportFlags built after cudaGridDependencySynchronize",
     kInSimMnnvl},
    {Mutant::sglang_no_remap, "sglang-no-remap",
     "a payload word equal to +0 is pushed as it is: the consumer takes it for the empty "
     "marker and polls for ever",
     "SGLang communicator.cuh: LamportTrait::clear_pos_zero (\"a producer rewrites any +0.0 in "
     "its payload to -0.0\")",
     kInSimSglang},
    {Mutant::sglang_one_phase, "sglang-one-phase",
     "every call uses the same half of the push plane: a rank a call ahead pushes into the slot "
     "a peer still drains (or the peer's re-arm erases the new push)",
     "SGLang communicator.cuh: PushEpoch (\"a peer still draining the previous round must not "
     "see them refilled\")",
     kInSimSglang},
    {Mutant::sglang_no_rearm, "sglang-no-rearm",
     "the consumer leaves the payload in its slots: the next call on that half reads it as "
     "arrived",
     "SGLang communicator.cuh: PushPlaneObj (\"every kernel MUST restore the marker on its way "
     "out\")",
     kInSimSglang},
    {Mutant::sglang_no_bumper, "sglang-no-bumper",
     "the fused MoE-finalize kernel flips only its rows' phase counters: the counters past its "
     "tokens keep the old phase, and the generic kernel's blocks on them reuse the half the last "
     "call used",
     "SGLang all_reduce_fusion.cuh: the bumper cluster (\"the whole array keeps one parity\")",
     kInSimSglang},
    {Mutant::sglang_no_cluster_barrier, "sglang-no-cluster-barrier",
     "the fused kernel's cluster leader flips the row's phase counter without the cluster "
     "barrier: a sibling block that reads it later takes the next call's half",
     "SGLang all_reduce_fusion.cuh: barrier_cluster_arrive / wait (\"ensure epoch is consumed, "
     "so flipping it won't lead to error\")",
     kInSimSglang},
    {Mutant::sglang_epoch_before_wait, "sglang-epoch-before-wait",
     "the fused kernel reads its phase counter before its grid-dependency wait while the kernel "
     "before it is an all-reduce on the same plane (prefetch_metadata against its precondition)",
     "SGLang all_reduce_fusion.cuh: prefetch_metadata (\"reading the epoch before the PDL wait "
     "can see a predecessor all-reduce mid-flip\")",
     kInSimSglang},
    {Mutant::ce_copy_before_add, "ce-copy-before-add",
     "a ring step's copy does not wait for the add of the chunk it forwards: the copy engine "
     "sends the output before this rank added its input to it",
     "pcie_ipc_ce_ring.cuh: cudaStreamWaitEvent(copy_stream, add_done[p])", kInSimCeRing},
    {Mutant::ce_publish_before_copy, "ce-publish-before-copy",
     "the readiness flag is published without waiting for the copy's event (or the binary "
     "write is issued before the copy): the peer adds a landing slot that has not landed",
     "pcie_ipc_ce_ring.cuh: \"this kernel runs on a stream that already waited on the memcpy's "
     "event\"",
     kInSimCeRing},
    {Mutant::ce_no_fork, "ce-no-fork",
     "the side streams do not wait for the caller's stream at the start of a call: the first "
     "copy reads the input before the caller's producer wrote it",
     "pcie_ipc_ce_ring.cuh: the fork (\"an eager call races the caller's producer\")",
     kInSimCeRing},
    {Mutant::ce_no_join, "ce-no-join",
     "the caller's stream does not wait for the side streams at the end of a call",
     "pcie_ipc_ce_ring.cuh: the join (\"Mandatory\")", kInSimCeRing},
    {Mutant::ce_no_handshake, "ce-no-handshake",
     "the end-of-call rendezvous with the next rank is dropped (the header: unreachable skew "
     "under the copy gating, kept for the island schedule's shared slots)",
     "pcie_ipc_ce_ring.cuh: the end-of-call rendezvous (\"deleting it leaves every test "
     "passing\")",
     kInSimCeRing},
    {Mutant::ce_no_join_no_handshake, "ce-no-join-no-handshake",
     "neither the join nor the end-of-call rendezvous: the caller's stream starts the next call "
     "while its copy stream still forwards this call's output",
     "pcie_ipc_ce_ring.cuh: the join and the end-of-call rendezvous together", kInSimCeRing},
    {Mutant::ce_pieces_differ, "ce-pieces-differ",
     "one rank derives another piece count: it uses other flag and landing slots",
     "pcie_ipc_ce_ring.cuh: ce_pick_pieces (\"a rank that picks a different depth uses "
     "different flag slots and the group hangs\")",
     kInSimCeRing},
    {Mutant::cluster_one_buffer, "cluster-one-buffer",
     "the blocks of a row's cluster exchange their partial sums through one slot buffer, not "
     "two: a block's next send overwrites a value a slower sibling has not read yet",
     "cluster_exchange.cuh's double buffer (a block may send its next value while a slower "
     "block still reads the last one); a block reusing a cluster-shared slot early",
     kInKernel},
    {Mutant::reduce_scratch_unguarded, "reduce-scratch-unguarded",
     "a block reduction writes its warps' partial values into the shared scratch without the "
     "barrier before: a warp starting the next reduction overwrites a value a slower warp of "
     "the last one has not read yet",
     "common.cuh's block_reduce (\"scratch may still be read by a previous reduction\"); a "
     "reduction that drops a barrier",
     kInKernel},
}};

constexpr std::string_view mutant_id(Mutant m) {
  if (m == Mutant::none) return "none";
  for (const auto& info : kMutantCatalogue)
    if (info.mutant == m) return info.id;
  return "?";
}

constexpr const MutantInfo* find_mutant_info(Mutant m) {
  for (const auto& info : kMutantCatalogue)
    if (info.mutant == m) return &info;
  return nullptr;
}

// "none" names the correct protocol; any other id must be in the catalogue.
constexpr std::optional<Mutant> parse_mutant(std::string_view id) {
  if (id == "none") return Mutant::none;
  for (const auto& info : kMutantCatalogue)
    if (info.id == id) return info.mutant;
  return std::nullopt;
}

}  // namespace fusioncheck::protocol
