#pragma once
// Reports of the GPU suite: a summary line per run, JSON, JUnit XML, the kill table.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fusioncheck/gpu/gpu_check.hpp"

namespace fusioncheck::gpu {

std::string summary_line(const CheckResult& r, int ranks);
// With a ledger: "known findings: N reproduced, M new, K absent: id (cases), ..."; "" without.
std::string known_findings_line(const CheckResult& r);
// Where rank 0's time went, per case (what bounds the checked-cases rate).
std::string time_breakdown(const CheckResult& r);
// "" unless the longest wait that ended without a hang came within 4x of the host's hang
// bound; then one line with that wait, the bound and the case (a slower or busier GPU may
// turn such a case into a false hang).
std::string wait_margin_note(const CheckResult& r);
// A failed run as one labelled block: the setup (ranks, GPUs), the minimal case field by
// field and call by call, the findings, the replay file and the command that replays it.
std::string failure_report(const CheckResult& r, const GpuPlacement& placement, int ranks);
nlohmann::json to_json(const CheckResult& r);
// JUnit XML, one <testcase> per run. A check run fails on findings; in a kill table
// (kill_table: its placement) a mutant run fails when the mutant survives, unless this setup
// cannot kill it (CheckResult::survival_excuse), which is <skipped> with the reason.
std::string junit_xml(const std::string& suite, const std::vector<CheckResult>& runs,
                      const GpuPlacement* kill_table);
// One run of the kill table: the mutant, its share of two-shot calls, and whether its cases
// start blocks late (CheckOptions::focus_late_blocks) or hold a rank a call behind its peers
// (CheckOptions::focus_held_rank).
struct KillTableRun {
  MutantId mutant;
  int twoshot_percent = 0;
  bool late_blocks = false;
  int variant = -1;  // the one launch variant drawn (KernelUnderTest::mutant_variant); -1: all
  bool held_rank = false;
  bool operator==(const KillTableRun&) const = default;
};
// The kill table's runs, in order. A mutant of the two-shot kernel alone runs at
// kTwoShotMutantPercent; a mutant that needs late blocks (or a held rank, held_rank when given)
// runs on such cases; a mutant of one
// launch variant (variant_of, when given, >= 0) draws that variant alone. When `none`
// leads the list, the correct kernels also run under each focus a mutant uses (each
// combination once, in the order the mutants first use it), as its control: a focus that
// made correct code fail would be a false positive.
std::vector<KillTableRun> kill_table_plan(
    const std::vector<MutantId>& mutants, int default_percent,
    const std::function<bool(const MutantId&)>& twoshot_only,
    const std::function<bool(const MutantId&)>& late_blocks,
    const std::function<int(const MutantId&)>& variant_of = {},
    const std::function<bool(const MutantId&)>& held_rank = {});
// Markdown: mutant -> killed?, by which check, time and cases to detect, minimal case size.
// Why `mutant` may survive in this setup ("" if it must be killed): the arch-guard mutants
// are wrong only in sm_120 code; a missing release/acquire is seldom observable between
// ranks on one GPU; a torn element is not seen by time-sliced ranks, which never run together.
std::string expected_survival(const MutantId& mutant, const GpuPlacement& placement);
// `not_built`: the kernel's negative controls this build lacks (KernelUnderTest::
// mutants_not_built), listed after the runs as not built for this tree.
std::string kill_table_markdown(
    const std::vector<CheckResult>& runs, const std::string& setup, const GpuPlacement& placement,
    const std::vector<std::pair<MutantId, std::string>>& not_built = {});

// The kill table (`fusioncheck gpu kill-table`): the correct kernels and every mutant,
// each a check run without shrinking (time to detect = the first failure).
struct KillTableOptions {
  CheckOptions check;             // replay_out is set per mutant
  std::vector<MutantId> mutants;  // empty: none, then every mutant the kernel has
};
struct KillTableResult {
  std::vector<CheckResult> runs;
  GpuPlacement placement;
  std::string setup;   // one line: ranks, GPUs, MPS
  int unexpected = 0;  // false positives plus survivors this setup can kill
  std::vector<std::pair<MutantId, std::string>> not_built;  // negative controls this build lacks
};
// Collective. 2 ranks only (the mutant instances are 2-rank); bad input throws BadInput.
KillTableResult run_kill_table(mpi::MpiComm& comm, const KillTableOptions& options);

}  // namespace fusioncheck::gpu
