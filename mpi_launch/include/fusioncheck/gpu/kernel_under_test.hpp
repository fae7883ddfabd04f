#pragma once
// The kernel under test, behind one small interface: prepare a workspace, launch a call,
// read the protocol state back for the invariant checks. Our kernels implement it
// (OurKernels); an adapter for another project's kernels implements the same four calls,
// mapping its control state onto kernels::ControlState (flag, counter, clear size, buffers).
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <functional>
#include <utility>
#include <vector>

#include "fusioncheck/gpu/mutant_id.hpp"
#include "fusioncheck/gpu/protocol_checks.hpp"
#include "fusioncheck/gpu/wait_start.hpp"
#include "fusioncheck/kernels/lamport_scan.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/kernels/workspace.hpp"
#include "fusioncheck/reference/fused.hpp"

namespace fusioncheck::gpu {

struct GpuPlacement;  // rank_placement.hpp

// One launch variant of a kernel (a kernel function with its grid): how it sums, which the
// reference follows, and what its protocol does to zeros.
struct KernelVariant {
  std::string name;  // one line, for reports
  reference::SumOrder sum_order = reference::SumOrder::rank_order;
  // Its sentinel is +0: it pushes every +0 input as -0 (the reference reads them so).
  bool sanitises_pos_zero = false;
  // A zero result may come out as +0 or -0, differently on each rank (the rank that owns a
  // chunk keeps its raw sum, the others receive it sanitised): outputs are compared with the
  // reference, and across ranks, with the sign of zeros ignored.
  bool zero_sign_free = false;
  // Its one-shot path reads -0 inputs as +0 (the Lamport sentinel), as a kernel without
  // variants does.
  bool neg_zero_sentinel = false;
  // Compiled with -use_fast_math: the reference flushes subnormals as it does
  // (reference::FusedConfig::fast_math).
  bool fast_math = false;
  // A MoE kernel's variant: the finalize kernel (permuted rows), else the reduction kernel.
  bool moe_finalize = false;
  // A launcher that picks its kernel by size: calls of at least this many bytes per rank run
  // its other kernel, which sums in large_sum_order (0: one kernel at every size).
  std::uint64_t large_from_bytes = 0;
  reference::SumOrder large_sum_order = reference::SumOrder::rank_order;
  // Its calls' tokens x hidden must be a multiple of this (a ring's shards of whole packs); 0:
  // any the kernel runs.
  std::uint64_t elems_multiple = 0;
  // Its calls of at least this many elements (tokens x hidden) take a deeper path (the
  // copy-engine ring's chunks cut into pieces), which only the largest calls reach: a quarter
  // of its calls are drawn at the largest size the case limits allow (0: no such path).
  std::uint64_t deep_from_elems = 0;
};

// What a kernel under test can run, so that cases draw only what it supports (a refused
// case is wasted; a smoke case it cannot run is not a failure of the build).
struct KernelTraits {
  bool fp32_lamport = true;                     // fp32 Lamport elements with 16-bit inputs
  bool unfused = true;                          // launch_unfused
  bool forced_cluster = true;                   // ClusterMode::force_cluster / force_no_cluster
  bool twoshot = true;                          // the two-shot path
  bool twoshot_more_tokens_than_ranks = false;  // two-shot calls need tokens > ranks
  // A consumer may read the output before its own grid-dependency wait once an at-end
  // trigger has fired (our kernels fence before it; the PDL contract alone promises only
  // what is visible after the wait).
  bool outputs_visible_at_trigger = true;
  // Preconditions of a kernel narrower than ours (FlashInfer's older Lamport kernel):
  int max_tokens = 0;             // tokens per call at most; 0: no limit
  std::vector<int> hidden_sizes;  // the hidden sizes it runs; empty: any multiple of 16
  // The patterns it runs; empty: every pattern (the block-scaled FP8 ones only with
  // block_scaled_fp8).
  std::vector<kernels::Pattern> patterns;
  bool block_scaled_fp8 = false;      // mxfp8 and group_fp8 (FlashInfer's patterns 8, 9, 13, 14)
  bool fp32_accumulation = true;      // it can sum in fp32 and round once
  bool per_step_accumulation = true;  // it can round the rank sum after every add
  bool weight_bias = true;            // a weight_bias added to gamma (Gemma's 1 + gamma)
  bool early_trigger = true;          // Trigger::early (else it triggers at its end)
  bool graph_replay = true;           // a captured graph replays correctly
  // Calls of different tokens x hidden may follow each other without a host sync between
  // them (else the workspace is re-initialised, all ranks idle, when the shape changes).
  bool shape_changes_without_sync = true;
  // Inputs may hold -0; else -0 is the kernel's sentinel in the input too (it hangs its
  // peers), a precondition: the suite draws none (GpuCase::neg_zero_inputs).
  bool neg_zero_inputs = true;
  // Rank r sums the ranks' inputs from its own: r, r + 1, ... (mod N), rounding after every
  // add; the reference follows each rank's order (FusedConfig::sum_from), and the ranks'
  // outputs agree bitwise only for N <= 2 (invariant 8 is not expected beyond).
  bool rotated_reduction = false;
  // Its quantising patterns also run without writing norm_out (CallSpec::norm_out).
  bool quant_without_norm_out = false;
  // FlashInfer's MoE allreduce fusion: every call is a MoE call (CallSpec::moe_experts > 0).
  bool moe = false;
  // Its launch variants (CallSpec::variant indexes them); empty: one, summed in rank order.
  std::vector<KernelVariant> variants;
  // Where a held rank may pause inside a call (GpuCase::hold). At the points of
  // in_kernel_holds the kernel pauses itself (FusedParams::hold_point, hold_ns), in calls of
  // the element types of in_kernel_hold_dtypes (empty: every one); anywhere else a rank is
  // held before its push by a pause kernel the case runner puts ahead of the call.
  // holds_through_params: the kernel's own holds enqueue nothing ahead of the call, so a held
  // call may follow its PDL producer (our kernels); else, as with the pause kernel, it may not.
  std::vector<kernels::HoldPoint> in_kernel_holds;
  std::vector<kernels::DType> in_kernel_hold_dtypes;
  bool holds_through_params = false;
  bool holds_in_kernel(kernels::HoldPoint point, kernels::DType dtype) const;
  // The points a call of this element type may be held at: before its push, and the kernel's own.
  std::vector<kernels::HoldPoint> hold_points(kernels::DType dtype) const;
  // Whether a held call may follow its PDL producer (nothing enqueued between them).
  bool holds_behind_pdl_producer(kernels::HoldPoint point, kernels::DType dtype) const {
    return holds_through_params && holds_in_kernel(point, dtype);
  }

  bool runs_hidden(int hidden) const;
  bool runs_pattern(kernels::Pattern pattern) const;
};

// One block's polls at one source line of a kernel built to time them (gpu bench
// --wait-profile --kernel): thread 0's polls there, how many and their cycles.
struct PollSiteTime {
  int block = 0;
  int line = 0;  // in the kernel's header
  std::uint64_t polls = 0;
  std::uint64_t cycles = 0;
};

class KernelUnderTest {
 public:
  virtual ~KernelUnderTest() = default;
  virtual std::string name() const = 0;
  virtual KernelTraits traits() const { return {}; }
  // The negative controls this build has for the kernel: every mutant (or patched copy)
  // it can run, and whether one lives in the two-shot path alone (the kill table then runs
  // it on mostly two-shot calls).
  virtual std::vector<MutantId> mutants() const { return {}; }
  // Negative controls this build could not make for the kernel (a patch that does not apply
  // to the tree it was built from), each with why: the kill table lists them as not built.
  virtual std::vector<std::pair<MutantId, std::string>> mutants_not_built() const { return {}; }
  virtual bool mutant_in_twoshot_only(const MutantId& m) const {
    (void)m;
    return false;
  }
  // Whether a mutant shows only when some blocks of a call start after others have finished
  // (a kernel without injected delays of its own, started block by block by its adapter):
  // the kill table then runs it on cases that provoke that (DrawSettings::focus_late_blocks).
  virtual bool mutant_needs_late_blocks(const MutantId& m) const {
    (void)m;
    return false;
  }
  // Whether a mutant shows only when one rank is held inside a call while its peers run ahead
  // into the next one (a barrier that let a fast rank leave early): the kill table then runs
  // it on cases that hold a rank in a call that is followed by another (DrawSettings::
  // focus_held_rank).
  virtual bool mutant_needs_held_rank(const MutantId& m) const {
    (void)m;
    return false;
  }
  // The one launch variant a mutant changes (KernelTraits::variants), or -1 when it changes
  // them all: the kill table then draws only that variant for it (the others' calls would be
  // cases that cannot kill it), beside a control at the same focus.
  virtual int mutant_variant(const MutantId& m) const {
    (void)m;
    return -1;
  }
  // Why one of its mutants may survive the kill table in this placement ("": it must die), for
  // what the catalogue's rules (expected_survival) do not know: the family's own copies.
  virtual std::string mutant_may_survive(const MutantId& m, const GpuPlacement& placement) const {
    (void)m, (void)placement;
    return "";
  }
  // Collective: every rank calls it with the same arguments before a case's calls.
  virtual void prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) = 0;
  // After prepare, with no call in flight: what the kernel sets up per case beyond its
  // workspace (the in-kernel delays of a header's sync-delay copy, say). Not collective.
  virtual void begin_case(const GpuCase& c) { (void)c; }
  // Lines for a failing case's report: what the kernel does with the case beyond its fields
  // (the blocks it holds inside the kernel, say), for every rank; none by default.
  virtual std::vector<std::string> case_notes(const GpuCase& c) const {
    (void)c;
    return {};
  }
  // Collective: every rank's calls of a case were captured into a graph (ended, not yet
  // instantiated): a kernel that shares its captured inputs' addresses after the capture (vLLM's
  // custom allreduce) registers them here. Not called when the capture failed.
  virtual void after_capture() {}
  // Enqueues one call. Throws kernels::InvalidLaunch for what it does not support.
  virtual void launch(const kernels::FusedParams& params, bool twoshot, cudaStream_t stream) = 0;
  // The unfused baseline on the same workspace (allreduce-only call, then a separate
  // residual + RMSNorm kernel; `allreduced` receives the sum). Optional: refused by default.
  virtual void launch_unfused(const kernels::FusedParams& params, void* allreduced,
                              cudaStream_t stream) {
    (void)params, (void)allreduced, (void)stream;
    throw kernels::InvalidLaunch(name() + " has no unfused baseline");
  }
  // The protocol state after a call: control block, guard words, two-shot barrier flags,
  // and the Lamport buffers when asked for.
  virtual kernels::ControlState read_state(kernels::LamportCopy lamport) = 0;
  // Invariants 4-6 after a one-shot call. By default the Lamport buffers are copied back and
  // scanned on the host; our kernels scan them on the GPU. An override that builds its own
  // slot scans fills each LamportSlotScan's first_expected (what the rank pushed at the first
  // mismatch): the report prints it.
  virtual kernels::LamportScan scan_lamport(const kernels::LamportScanRequest& request) {
    return kernels::scan_lamport_on_host(read_state(kernels::LamportCopy::with_buffers), request);
  }
  // Whether scan_lamport takes SlotScan::my_slot_everywhere: each rank compares the slot it
  // pushed in every rank's buffer, so it needs no peer's whole input (else every_slot_here).
  virtual bool scans_my_slot_everywhere() const { return false; }
  // The control block alone (the state a case starts from); override where it is cheaper.
  virtual protocol::ControlBlock read_control() {
    return read_state(kernels::LamportCopy::without_buffers).control;
  }
  // Waits for the calls enqueued on `stream`. Our kernels bound their own polls (a hang is
  // recorded, the kernel exits); an adapter for a kernel whose polls are unbounded bounds
  // the wait here (HostBoundedWait, wait_budget(budget)), records the hang and releases the
  // kernel.
  virtual void wait(cudaStream_t stream, const WaitBudget& budget);
  virtual kernels::HangRecord hang_record() = 0;
  virtual void clear_hang_record() = 0;
  // Collective: drops the protocol state the failing case left (after a failure it is not
  // trusted), so the next case starts from an initial state.
  virtual void reset() = 0;
  // The kernel's synchronisation protocol as the case runner checks it (protocol_checks.hpp),
  // owned by the kernel and made on first use for this rank. By default the Lamport protocol
  // of docs/design.md (LamportChecks, over read_state, read_control and scan_lamport above); a
  // kernel of another protocol returns its own.
  virtual ProtocolChecks& protocol_checks(int rank);
  // The polls' time since the last call of it, then zeroed (synchronises the device); only a
  // kernel made by KernelChoice::make_poll_profiled has one.
  virtual std::vector<PollSiteTime> take_poll_profile() {
    throw kernels::InvalidLaunch(name() + " has no build that times its polls");
  }

 private:
  std::unique_ptr<ProtocolChecks> lamport_checks_;  // the default protocol_checks
};

// fusioncheck's own kernels, optionally a mutant instance. Workspaces come in size classes
// (powers of two from 64 KiB), created on first use and kept, so that the invariant read-back
// of a small case copies a small buffer.
// What fusioncheck's kernels run: everything the suite draws, a held rank at every point.
inline KernelTraits our_traits() {
  KernelTraits t;
  t.in_kernel_holds = {std::begin(kernels::kHoldPoints), std::end(kernels::kHoldPoints)};
  t.holds_through_params = true;
  return t;
}

// A mutant id as our kernels' catalogue mutant; throws BadInput (errors.hpp) for an id our
// kernels do not build.
protocol::Mutant our_mutant(const MutantId& mutant);
// Our kernels' negative controls for the registry: the catalogue's kernel mutants.
std::vector<FamilyMutant> our_mutants();

class OurKernels final : public KernelUnderTest {
 public:
  OurKernels(kernels::Bootstrap& bootstrap, protocol::Mutant mutant)
      : bootstrap_(bootstrap), mutant_(mutant) {
    for (auto m : kernels::oneshot_mutants_compiled()) mutant_in_oneshot_ |= m == mutant;
    for (auto m : kernels::twoshot_mutants_compiled()) mutant_in_twoshot_ |= m == mutant;
  }
  // Whether the mutant has a compiled instance at all (else the run is refused).
  bool mutant_compiled() const {
    return mutant_ == protocol::Mutant::none || mutant_in_oneshot_ || mutant_in_twoshot_;
  }
  bool mutant_in_oneshot() const { return mutant_in_oneshot_; }
  bool mutant_in_twoshot() const { return mutant_in_twoshot_; }
  KernelTraits traits() const override { return our_traits(); }
  std::string name() const override;
  std::vector<MutantId> mutants() const override;
  bool mutant_in_twoshot_only(const MutantId& m) const override;
  void prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) override;
  void launch(const kernels::FusedParams& params, bool twoshot, cudaStream_t stream) override;
  void launch_unfused(const kernels::FusedParams& params, void* allreduced,
                      cudaStream_t stream) override;
  kernels::ControlState read_state(kernels::LamportCopy lamport) override {
    return kernels::read_control_state(*current_, lamport);
  }
  kernels::LamportScan scan_lamport(const kernels::LamportScanRequest& request) override;
  bool scans_my_slot_everywhere() const override { return true; }
  protocol::ControlBlock read_control() override { return kernels::read_control_block(*current_); }
  kernels::HangRecord hang_record() override { return current_->hang_record(); }
  void clear_hang_record() override { current_->clear_hang_record(); }
  void reset() override;

 private:
  kernels::Bootstrap& bootstrap_;
  protocol::Mutant mutant_;
  std::map<std::pair<std::uint64_t, bool>, std::unique_ptr<kernels::Workspace>> workspaces_;
  kernels::Workspace* current_ = nullptr;
  bool mutant_in_oneshot_ = false;  // mutants apply to the kernel that has an instance
  bool mutant_in_twoshot_ = false;
  std::unique_ptr<kernels::DeviceLamportScanner> scanner_;  // made on first use, on this rank's GPU
};

// Which kernel a run drives: its name on the command line and in replay files, and how
// each rank makes it (a mutant id: none, or one of the kernel's mutants()).
struct KernelChoice {
  std::string name = "ours";
  // The upstream release its code is ("0.7.4"), for a ledger of known findings; "" where it
  // has none or it is not known (a tree given at configure time).
  std::string release;
  // Every block of its grid spins on its peers' blocks, and the grid does not shrink where
  // ranks share a GPU (as ours does): sized from the SM count, or as large as the GPU holds at
  // once (vLLM's 36 blocks of one SM each). Ranks sharing a GPU under MPS then get a share of
  // the SMs each, so that the others' grids cannot fill the GPU before a rank's first block.
  bool share_sms = false;
  // The rank counts its kernels run at: check, smoke and bench refuse a job of another size
  // before any work.
  std::vector<int> rank_counts = {2, 4, 8, 16};
  // The rank counts its mutant instances (or patched copies) are compiled for: the kill table's.
  std::vector<int> mutant_ranks = {2};
  std::function<std::unique_ptr<KernelUnderTest>(kernels::Bootstrap&, const MutantId&)> make =
      [](kernels::Bootstrap& bootstrap,
         const MutantId& mutant) -> std::unique_ptr<KernelUnderTest> {
    return std::make_unique<OurKernels>(bootstrap, our_mutant(mutant));
  };
  // The build whose polls time themselves (take_poll_profile), for `gpu bench --wait-profile
  // --kernel`; empty when the family has none (ours has its own profile instance).
  std::function<std::unique_ptr<KernelUnderTest>(kernels::Bootstrap&)> make_poll_profiled;
  // Where its poll sites' lines point (the header the profiled build rewrote), for the report.
  std::string poll_profiled_source;
  // What its kernels run at a rank count, known without a GPU (its launch variants and
  // patterns, for options refused before a GPU is assigned); empty: known only once the
  // kernel is made on a GPU (KernelUnderTest::traits).
  std::function<KernelTraits(int ranks)> host_traits;
  // Writes a stand-alone reproducer of a replay file into a new folder (the family's own
  // format; empty when it has none); returns one line saying what it wrote. Throws BadInput
  // for a case it cannot export (then the replay file stands alone).
  std::function<std::string(const std::string& replay_file, const std::string& out_dir)>
      export_reproducer;
};

}  // namespace fusioncheck::gpu
