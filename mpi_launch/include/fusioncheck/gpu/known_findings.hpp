#pragma once
// A ledger of known findings: upstream bugs the suite has already found, minimised and written
// up, so that a run on a kernel that still has them is told "known <id>, reproduced" and goes
// on drawing cases, while a finding that matches no entry is new. Each entry names a kernel
// family, the releases it applies to, and a signature: the checks that report it and the shape
// of the cases that trigger it. The generator is never narrowed: a known finding's cases are
// drawn and run like any other, only the verdict reads the ledger.
//
// File format (JSON, docs/usage.md "Known findings"):
//   {"fusioncheck_known_findings": 1,
//    "findings": [{"id": "...", "family": "flashinfer-moe",
//                  "releases": {"from": "0.2.7", "through": "0.7.4"},
//                  "class": "wrong-answer" | "hang" | "launch-refused",
//                  "title": "...", "upstream": "...", "writeup": "docs/...",
//                  "signature": {"checks": [...], "message_contains": "...",
//                                "hidden_not_multiple_of": 256, "min_calls": 2,
//                                "modes": [...], "variants": [...], "patterns": [...],
//                                "pdl_producer": true, "twoshot": true, "min_tokens": 2}}]}
// The case-level conditions (hidden, calls, modes) hold for the case; the call-level ones
// (variants, patterns, pdl_producer, twoshot, min_tokens) for one call of it.
#include <optional>
#include <string>
#include <vector>

#include "fusioncheck/gpu/gpu_case.hpp"

namespace fusioncheck::gpu {

struct Finding;

enum class FindingClass { wrong_answer, hang, launch_refused };
std::string_view finding_class_name(FindingClass c);

// The checks of the case runner a finding may come from (Finding::check).
inline constexpr const char* kFindingChecks[] = {"reference", "agreement",    "invariant",
                                                 "hang",      "pdl-consumer", "launch"};

struct FindingSignature {
  std::vector<std::string> checks;  // every finding of the case comes from one of these
  std::string message_contains;     // and, if set, says this
  // Case-level conditions.
  int hidden_not_multiple_of = 0;  // 0: any hidden size
  int min_calls = 0;
  std::vector<IssueMode> modes;  // empty: any
  // Call-level conditions: one call of the case meets all of them.
  std::vector<int> variants;               // empty: any
  std::vector<kernels::Pattern> patterns;  // empty: any
  std::optional<bool> pdl_producer;
  std::optional<bool> twoshot;
  int min_tokens = 0;
};

struct KnownFinding {
  std::string id;
  std::string family;           // a --kernel family (without a release suffix)
  std::string release_from;     // "" : from the first release
  std::string release_through;  // "" : up to the newest
  FindingClass finding_class = FindingClass::wrong_answer;
  std::string title;
  std::string upstream;  // the upstream reference (an issue, a PR, or "not yet filed: ...")
  std::string writeup;   // where it is written up
  FindingSignature signature;
};

struct KnownFindings {
  std::string path;  // the file it was read from
  std::vector<KnownFinding> entries;
};

// Reads and checks a ledger: unknown fields, values of the wrong type, signatures that can
// match nothing the suite reports, duplicate ids, families not in `families` (when given) are
// BadInput naming the file and the entry.
KnownFindings read_known_findings(const std::string& path,
                                  const std::vector<std::string>& families = {});
KnownFindings known_findings_from_json(const nlohmann::json& j, const std::string& path,
                                       const std::vector<std::string>& families = {});

// "0.7.4" < "0.7.10" < "0.8.0"; a ".postN" counts after its release. Both must be releases
// (digits and dots, an optional .postN).
int compare_releases(const std::string& a, const std::string& b);
bool is_release(const std::string& text);

// The entries for a kernel: its family (the --kernel value up to '@'), and its release when
// known ("" : a tree of no known release, to which every entry of the family applies).
std::vector<KnownFinding> entries_for(const KnownFindings& ledger, const std::string& kernel,
                                      const std::string& release);

// Whether a case meets the entry's case- and call-level conditions (it may trigger it).
bool triggered_by(const KnownFinding& entry, const GpuCase& c);
// Whether a failed case's findings are this entry's: triggered_by, and every finding from
// one of its checks (and saying message_contains).
bool matches(const KnownFinding& entry, const GpuCase& c, const std::vector<Finding>& findings);

// What one run saw of one entry.
struct KnownFindingTally {
  std::string id;
  FindingClass finding_class = FindingClass::wrong_answer;
  int trigger_cases = 0;    // drawn cases that met its conditions
  int failed_cases = 0;     // cases that failed with it
  std::string replay_file;  // its shrunk case, where the run shrank one
  // "known" (reproduced), "absent" (its trigger was drawn, it never failed), "not drawn".
  std::string state() const;
};

// The entries a run met, one phrase each: "id (4 of 10 cases)", or "id (ABSENT: 7 cases drew
// its trigger, none failed)"; entries never drawn are left out. "" when none was met.
std::string describe_tallies(const std::vector<KnownFindingTally>& tallies);

// The tallies of a run's entries, in ledger order; the index of the entry a failed case
// matches (or -1).
struct KnownFindingRun {
  std::vector<KnownFinding> entries;
  std::vector<KnownFindingTally> tallies;

  explicit KnownFindingRun(std::vector<KnownFinding> applicable = {});
  void count_trigger(const GpuCase& c);  // a drawn case
  int match(const GpuCase& c, const std::vector<Finding>& findings) const;
  int absent() const;  // entries whose trigger was drawn and never failed
};

}  // namespace fusioncheck::gpu
