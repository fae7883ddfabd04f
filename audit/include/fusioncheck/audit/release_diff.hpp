#pragma once
// Releases of one package side by side: each kernel (by demangled name) in one release and the
// next, per architecture and code source, with the sync classes it lost and gained. A lost
// grid-dependency wait, fence or acquire is what a refactor drops unnoticed (a finding); every
// other change, a kernel new or gone (renamed, or removed), an architecture added or dropped,
// is a note. The audit of a single binary cannot see a wait that is gone on every
// architecture of a kernel not known to be PDL-launched; the previous release can.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusioncheck/audit/audit.hpp"

namespace fusioncheck::audit {

// One release: its label (e.g. "nccl-cu13 2.28.3") and the audit of every file it has.
struct Release {
  std::string label;
  std::vector<FileReport> files;
};

struct KernelChange {
  std::string kernel;  // demangled
  std::string arch;
  CodeSource source = CodeSource::kSass;
  std::vector<std::string> lost;    // sync classes in the earlier release, not in the later
  std::vector<std::string> gained;  // in the later release, not in the earlier
  bool finding = false;             // a lost wait, fence or acquire
};

struct ReleaseStep {
  std::string from, to;     // labels
  std::size_t matched = 0;  // kernels in both
  std::vector<KernelChange> changes;
  std::vector<std::string> gone;  // kernels of `from` not in `to` (removed, or renamed)
  std::vector<std::string> added;
  // Codes one side has and the other not: "kernel: sm_100 SASS dropped" (notes).
  std::vector<std::string> codes_changed;
};

// Whether losing this sync class is a finding: griddep.wait, a fence of any scope, an acquire.
bool lost_class_is_finding(const std::string& sync_class);

// A release's files as `fusioncheck audit --json` wrote them: each kernel's name, its codes
// (architecture, source) and their sync classes; the stored findings are not read back. A
// report saved per release lets a long history be audited one download at a time. Throws
// AuditInputError (cuobjdump.hpp) naming the first field that is missing or of a wrong type.
std::vector<FileReport> file_reports_from_json(const nlohmann::json& report);

// Each release against the next, in the order given (at least two).
std::vector<ReleaseStep> diff_releases(const std::vector<Release>& releases);

std::size_t count_findings(const std::vector<ReleaseStep>& steps);
nlohmann::json to_json(const std::vector<ReleaseStep>& steps);
std::string format_table(const std::vector<ReleaseStep>& steps);

}  // namespace fusioncheck::audit
