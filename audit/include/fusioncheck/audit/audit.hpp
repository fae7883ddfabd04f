#pragma once
// The audit proper: groups a binary's functions into kernels, decides which are launched
// with PDL, and reports findings:
//   sync-differs-between-archs  a kernel's set of sync classes differs between architectures
//   pdl-wait-missing            a PDL-launched kernel lacks griddep.wait on some architecture
//   empty-body                  a kernel is (nearly) empty on one architecture: real on another,
//                               or on none of the binary's (a single-architecture build)
//   missing-vs-baseline         a kernel lacks a sync class that the same kernel has in the
//                               baseline binary (--baseline), same source
//   pdl-trigger-only            (note) a kernel triggers dependents but waits on no
//                               architecture: a PDL primary, not known to be launched with PDL
//   empty-where-read            (note) empty on every architecture read, while the file has
//                               code for others that the selection (--arch) left out
// PDL and griddepcontrol exist from sm_90 on: code of sm_75..89 is never held to them.
// Architectures are only compared within one source (SASS with SASS, PTX with PTX).
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusioncheck/audit/listing.hpp"
#include "fusioncheck/audit/user_regex.hpp"

namespace fusioncheck::audit {

// A body of at most this many instructions (padding and exit excluded) is "empty" ...
inline constexpr int kEmptyBodyMaxInstructions = 2;
// ... when the same kernel has at least this many on another architecture.
inline constexpr int kRealBodyMinInstructions = 8;

struct AuditOptions {
  std::optional<UserRegex> pdl_kernels;  // searched in the demangled (and mangled) name
  bool pdl_all = false;                  // every kernel is launched with PDL
  bool pdl_heuristic = true;             // a kernel with a wait on some arch is PDL
  bool known_pdl = true;  // the built-in list of PDL-launched kernels (known_pdl.hpp)
  std::optional<UserRegex> empty_kernels;  // kernels meant to be empty: never empty-body
};

enum class FindingKind {
  kSyncDiffersBetweenArchs,
  kPdlWaitMissing,
  kEmptyBody,
  kMissingVsBaseline,
  kPdlTriggerOnly,
  kArchStub,         // note: empty where the kernel's name targets other architectures
  kEmptyEverywhere,  // note: empty on every architecture of a multi-architecture binary
  kEmptyWhereRead    // note: empty on every architecture read; the file has others, not read
};
std::string_view finding_kind_name(FindingKind kind);

// A note is shown but does not make the run fail (exit code 1 counts findings only).
enum class Severity { kFinding, kNote };
std::string_view severity_name(Severity severity);  // "finding" / "note"

// Whether code of `arch` can use PDL (sm_90 and later; an unknown arch is held to it).
bool arch_has_pdl(std::string_view arch);

struct Finding {
  FindingKind kind;
  std::string kernel;  // demangled
  std::string mangled;
  std::string arch;
  CodeSource source;
  std::string detail;  // what is missing or different, in words
  Severity severity = Severity::kFinding;
};

struct KernelReport {
  std::string mangled;
  std::string name;  // demangled
  bool is_entry = true;
  bool pdl = false;
  std::string pdl_reason;          // why it is considered PDL-launched; empty when it is not
  std::vector<FunctionCode> code;  // SASS first, then PTX, each by architecture
};

struct FileReport {
  std::string path;
  std::vector<std::string> unread_archs;  // Listing::unread_archs
  std::vector<KernelReport> kernels;      // by demangled name
  std::vector<Finding> findings;          // notes included (Finding::severity)
};

std::string demangle(const std::string& mangled);

FileReport audit_listing(const std::string& path, const Listing& listing,
                         const AuditOptions& options);

// Adds to `report` a missing-vs-baseline finding for every kernel code (arch, source) that
// lacks a sync class the same kernel (by demangled name) has in `baseline`, in any of its
// codes of the same source. Returns how many kernels were found in both.
std::size_t compare_with_baseline(FileReport& report, const FileReport& baseline);

nlohmann::json to_json(const std::vector<FileReport>& reports);
std::string format_table(const std::vector<FileReport>& reports);

// Findings of severity kFinding (what sets the exit code), and notes.
std::size_t count_findings(const std::vector<FileReport>& reports);
std::size_t count_notes(const std::vector<FileReport>& reports);

}  // namespace fusioncheck::audit
