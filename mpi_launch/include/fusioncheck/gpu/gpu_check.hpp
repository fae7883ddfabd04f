#pragma once
// The GPU property suite (`fusioncheck gpu check`) and its result, shared by the kill table.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusioncheck/gpu/case_runner.hpp"
#include "fusioncheck/gpu/known_findings.hpp"
#include "fusioncheck/mpi/mpi_comm.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"

namespace fusioncheck::gpu {

// The share of two-shot calls for a mutant of the two-shot kernel alone (kill table).
inline constexpr int kTwoShotMutantPercent = 75;

struct CheckOptions {
  std::uint64_t seed = 1;
  int cases = 10000;
  CaseLimits limits;
  KernelChoice kernel;  // ours by default; an adapter's kernel (adapters/)
  MutantId mutant;
  bool shrink = true;
  bool delays = true;  // draw seeded injected delays in some cases (stress)
  // Draw PDL producers (kernels that write a call's inputs right before it, late): off, a
  // kernel that reads its inputs before its wait is not seen, and other bugs are.
  bool pdl_producer = true;
  int twoshot_percent = 25;  // share of two-shot calls in cases with 16-bit Lamport buffers
  int variant = -1;          // draw only this launch variant (KernelTraits::variants); -1: all
  // Draw the hidden size from these (a model's shapes); empty: random multiples of 16.
  std::vector<int> hidden_sizes;
  // Cases that provoke two-shot races: only two-shot calls, max_calls of them, back to back
  // or in a graph, of changing sizes (the kill table's runs of two-shot mutants and their
  // control).
  bool focus_twoshot = false;
  // Cases that start some blocks of a call late (KernelUnderTest::mutant_needs_late_blocks):
  // every case delayed with the longest spread, one-shot calls of many tokens, not captured
  // in a graph.
  bool focus_late_blocks = false;
  // Cases that hold a rank inside a call followed by others (KernelUnderTest::
  // mutant_needs_held_rank): every case holds one, in a call that is not its last, of a case of
  // at least two calls issued without a host sync between them.
  bool focus_held_rank = false;
  // Share of cases issued from two streams (IssueMode::two_streams: at least two calls, one
  // stream's calls unordered against the other's); 0: none. A case so drawn that fails is a
  // finding: the family needs its calls ordered on one stream (docs/usage.md).
  int two_streams_percent = 0;
  std::string replay_file;  // run this case only
  // Runs of the replayed case, stopping at the first that fails: a finding that depends on
  // timing (a race under PDL or delays) may need several runs in one process to show again.
  int replay_runs = 20;
  std::string replay_out = "fusioncheck-gpu-counterexample.json";
  // A ledger of known findings: a failing case that matches an entry for the kernel's family
  // and release is counted as known, and the run goes on drawing cases; the entry's first such
  // case is written beside replay_out (named by the id) as drawn, or shrunk first with
  // shrink_known; null: every finding is new.
  std::shared_ptr<const KnownFindings> known;
  bool shrink_known = false;
  // With a ledger: an entry whose trigger was drawn but that never failed fails the run
  // ("absent": fixed upstream?).
  bool strict = false;
};

struct CheckResult {
  MutantId mutant;
  int twoshot_percent = 0;   // the run's CheckOptions::twoshot_percent
  bool late_blocks = false;  // the run's CheckOptions::focus_late_blocks
  bool held_rank = false;    // the run's CheckOptions::focus_held_rank
  int variant = -1;          // the run's CheckOptions::variant
  // Kill table: why this setup may not kill the mutant ("": it must be killed).
  std::string survival_excuse;
  bool failed = false;
  int cases = 0;  // run to completion (refused ones not counted)
  int refused = 0;
  std::map<std::string, int> refusals;  // why the kernel refused cases (reason prefix -> count)
  int calls = 0;                        // kernel calls on this rank
  double seconds = 0;
  double seconds_to_first_failure = 0;
  int cases_to_first_failure = 0;
  int minimal_calls = 0;
  int replay_runs = 0;             // with --replay: the runs asked for
  int replay_failed_run = 0;       // with --replay: the run (from 1) that failed; 0: none did
  std::optional<GpuCase> minimal;  // the smallest failing case (rank 0)
  std::vector<std::string> minimal_notes;  // what the kernel did with it beyond its fields
  std::string replay_file;                 // where it was written ("" if not)
  std::string reproducer;         // the stand-alone reproducer beside it, or why there is none
  std::vector<Finding> findings;  // of the minimal failing case (rank 0)
  std::string replay_command;
  // The ledger's entries for this kernel and what the run saw of each (rank 0); empty without
  // a ledger. `failed` is then a new finding, or (strict) an absent entry.
  std::vector<KnownFindingTally> known;
  bool strict = false;
  bool new_finding = false;  // a finding that matched no entry
  PhaseTimes times;          // this rank's (rank 0's in reports): where the time went
};

// Collective: validates the options (BadInput), then RapidCheck on rank 0 drives every rank
// through the same cases.
CheckResult run_check(mpi::MpiComm& comm, const CheckOptions& options,
                      const GpuPlacement& placement);

// The whole `check` job: every rank agrees on the options, each is placed on a GPU, then
// run_check. Bad input (options, rank counts, ranks that disagree) throws BadInput.
struct CheckJob {
  GpuPlacement placement;
  CheckResult result;
};
CheckJob run_check_job(mpi::MpiComm& comm, const CheckOptions& options);

// The configuration every rank must agree on before a run.
RunConfig run_config(const CheckOptions& options, int ranks, const std::string& mutants);
// BadInput when `variant` (-1: any) is not one of the kernel's launch variants.
void require_variant(int variant, const std::string& kernel, const KernelTraits& traits);

// A rank that meets a CUDA error inside a case (a kernel that faulted leaves no context to
// shrink it in) writes the case as drawn beside --replay-out, named by the rank, so that it
// can be replayed. Returns what the error's message adds: the file and its replay command, why
// it could not be written, or nothing without --replay-out.
std::string keep_case_in_flight(int rank, int ranks, const CheckOptions& o, const GpuCase& c,
                                const std::string& error);

}  // namespace fusioncheck::gpu
