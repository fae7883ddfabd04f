#include "fusioncheck/audit/audit.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "fusioncheck/audit/cuobjdump.hpp"
#include "fusioncheck/audit/known_pdl.hpp"

namespace fusioncheck::audit {
namespace {

bool code_order(const FunctionCode& a, const FunctionCode& b) {
  return std::tuple(a.source, arch_number(a.arch), a.arch) <
         std::tuple(b.source, arch_number(b.arch), b.arch);
}

std::set<std::string> sync_classes(const FunctionCode& code) {
  std::set<std::string> classes;
  for (const auto& [name, count] : code.sync_counts) classes.insert(name);
  return classes;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string text;
  for (const auto& item : items) {
    if (!text.empty()) text += separator;
    text += item;
  }
  return text;
}

// Several copies of one function for one arch and source (e.g. the same kernel in two
// embedded fatbins) are merged: counts add up, so a sync instruction in any copy shows.
void add_code(KernelReport& kernel, const FunctionCode& code) {
  for (auto& existing : kernel.code) {
    if (existing.arch != code.arch || existing.source != code.source) continue;
    existing.instructions += code.instructions;
    existing.body_instructions += code.body_instructions;
    for (const auto& [name, count] : code.sync_counts) existing.sync_counts[name] += count;
    return;
  }
  kernel.code.push_back(code);
}

std::string pdl_reason(const KernelReport& kernel, const AuditOptions& options) {
  if (options.pdl_all) return "--pdl-all";
  if (options.pdl_kernels &&
      (options.pdl_kernels->search(kernel.name) || options.pdl_kernels->search(kernel.mangled)))
    return "matches --pdl-kernels";
  if (options.known_pdl)
    if (const KnownPdlKernel* known = find_known_pdl_kernel(kernel.name))
      return "known PDL kernel: " + std::string(known->what);
  if (!options.pdl_heuristic) return {};
  // Only a wait shows that the kernel itself is launched with PDL: a trigger alone is what
  // a PDL primary, launched with <<<>>>, does for the kernel after it.
  for (const auto& code : kernel.code)
    if (code.sync_counts.contains(std::string(kGridDependencyWait)))
      return "has " + std::string(kGridDependencyWait) + " on " + code.arch + " (" +
             std::string(source_name(code.source)) + ")";
  return {};
}

std::size_t count_severity(const FileReport& report, Severity severity) {
  return static_cast<std::size_t>(
      std::count_if(report.findings.begin(), report.findings.end(),
                    [&](const Finding& f) { return f.severity == severity; }));
}

// Classes that exist from sm_90 on only (PDL, clusters, bulk copies, multimem): their absence
// from sm_75..89 code is no difference to report.
bool is_sm90_class(const std::string& name) {
  for (std::string_view prefix : {"griddep.", "barrier.cluster", "st.async", "red.async",
                                  "bulk_copy", "multimem.", "mbarrier.arrive.cluster"})
    if (name.starts_with(prefix)) return true;
  return false;
}

// The architectures a kernel's name says it is written for ("Sm80", "Sm90", "sm100_", "SM120":
// CUTLASS's and hand-written kernels), as arch numbers; empty when it names none.
// Whether `n` is the number of an architecture nvcc compiles for.
bool is_arch_number(int n) {
  static const std::set<int> known{70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121};
  return known.contains(n);
}

std::set<int> targeted_archs(const std::string& name) {
  // In a name c++filt cannot demangle a tag runs into the next length prefix ("Sm904Args"):
  // three digits that are no architecture are read as their first two.
  static const std::regex tag("[Ss][Mm]_?([0-9]{2,3})");
  int newest = 0;
  for (auto it = std::sregex_iterator(name.begin(), name.end(), tag); it != std::sregex_iterator();
       ++it) {
    const std::string digits = (*it)[1].str();
    int n = std::stoi(digits);
    if (!is_arch_number(n) && digits.size() == 3) n = std::stoi(digits.substr(0, 2));
    if (is_arch_number(n)) newest = std::max(newest, n);
  }
  // The newest tag only: a kernel names the parts of older architectures it reuses (CUTLASS's
  // Sm100 GEMMs and FlashMLA's sm100 kernels carry Sm90 epilogues and copy atoms).
  return newest == 0 ? std::set<int>{} : std::set<int>{newest};
}

// Code of an architecture the name targets: of the same family (sm_103 runs Sm100 code) and,
// for a tag from sm_90 on, arch-specific (a/f suffix), the only code where arch-conditional
// instructions compile.
bool is_targeted_code(const FunctionCode& code, const std::set<int>& targets) {
  const int arch = arch_number(code.arch);
  const bool specific = code.arch.ends_with('a') || code.arch.ends_with('f');
  for (int t : targets)
    if (arch / 10 == t / 10 && (t < 90 || specific)) return true;
  return false;
}

// Code that exists only because the binary is built for every architecture while the kernel
// is written for some: its name targets architectures, the body is real in targeted code, and
// this code is not targeted. For a kernel specialised for sm_90 or newer such code holds a
// stub, empty or not (often a trap or an "unsupported" message); under older tags (Sm80 names
// a minimum, and its code for newer architectures may be real) only empty code is.
// Stubs are neither compared nor empty bodies.
bool is_arch_stub(const KernelReport& kernel, const FunctionCode& code,
                  const std::vector<const FunctionCode*>& codes) {
  const std::set<int> targets = targeted_archs(kernel.name);
  if (targets.empty() || is_targeted_code(code, targets)) return false;
  const bool specialised = *targets.rbegin() >= 90;
  if (!specialised && code.body_instructions > kEmptyBodyMaxInstructions) return false;
  return std::any_of(codes.begin(), codes.end(), [&](const FunctionCode* other) {
    return other->body_instructions >= kRealBodyMinInstructions &&
           is_targeted_code(*other, targets);
  });
}

void find_sync_differences(const KernelReport& kernel,
                           const std::vector<const FunctionCode*>& codes,
                           std::vector<Finding>& findings) {
  std::vector<const FunctionCode*> compared;  // stubs of arch-specialised kernels left out
  for (const auto* code : codes)
    if (!is_arch_stub(kernel, *code, codes)) compared.push_back(code);
  std::map<std::string, std::vector<std::string>> archs_with_class;
  for (const auto* code : compared)
    for (const auto& name : sync_classes(*code)) archs_with_class[name].push_back(code->arch);
  for (const auto* code : compared) {
    std::vector<std::string> missing;
    for (const auto& [name, archs] : archs_with_class)
      if (!code->sync_counts.contains(name) && (arch_has_pdl(code->arch) || !is_sm90_class(name)))
        missing.push_back(name + " (present on " + join(archs, ", ") + ")");
    if (missing.empty()) continue;
    findings.push_back({FindingKind::kSyncDiffersBetweenArchs, kernel.name, kernel.mangled,
                        code->arch, code->source, "lacks " + join(missing, "; ")});
  }
}

// A kernel whose body is compiled out: against a real body on another architecture, or, where
// no architecture of the binary has one (a single-architecture build, as a JIT makes), on its
// own; kernels meant to be empty are excused by AuditOptions::empty_kernels.
void find_empty_bodies(const KernelReport& kernel, const std::vector<const FunctionCode*>& codes,
                       const AuditOptions& options, const std::vector<std::string>& unread_archs,
                       std::vector<Finding>& findings) {
  if (options.empty_kernels &&
      (options.empty_kernels->search(kernel.name) || options.empty_kernels->search(kernel.mangled)))
    return;
  // CUB's EmptyKernel is empty by design (CUB launches it to learn the PTX version).
  static const std::regex cub_empty(R"(\bcub::(\w+::)*EmptyKernel<)");
  if (std::regex_search(kernel.name, cub_empty)) return;
  const auto largest = *std::max_element(
      codes.begin(), codes.end(),
      [](const auto* a, const auto* b) { return a->body_instructions < b->body_instructions; });
  const bool real_elsewhere = largest->body_instructions >= kRealBodyMinInstructions;
  std::set<std::string> archs;
  for (const auto* code : codes) archs.insert(code->arch);
  for (const auto* code : codes) {
    if (code->body_instructions > kEmptyBodyMaxInstructions) continue;
    if (is_arch_stub(kernel, *code, codes)) {
      findings.push_back({FindingKind::kArchStub, kernel.name, kernel.mangled, code->arch,
                          code->source,
                          "empty here; its name targets other architectures, where it has its "
                          "body (" +
                              std::to_string(largest->body_instructions) + " on " + largest->arch +
                              "): a stub of an arch-specialised kernel",
                          Severity::kNote});
      continue;
    }
    if (!real_elsewhere && !unread_archs.empty()) {
      // Its body may be on an architecture left out (an sm_80 kernel with an sm_90a stub).
      findings.push_back({FindingKind::kEmptyWhereRead, kernel.name, kernel.mangled, code->arch,
                          code->source,
                          "empty on every architecture read; the file also has code for " +
                              join(unread_archs, ", ") + ", not read (--arch all compares them)",
                          Severity::kNote});
      continue;
    }
    if (!real_elsewhere && archs.size() >= 2) {
      findings.push_back({FindingKind::kEmptyEverywhere, kernel.name, kernel.mangled, code->arch,
                          code->source,
                          "empty on every architecture of this binary: an empty kernel in the "
                          "source (a body compiled out everywhere would look the same)",
                          Severity::kNote});
      continue;
    }
    findings.push_back(
        {FindingKind::kEmptyBody, kernel.name, kernel.mangled, code->arch, code->source,
         "body has " + std::to_string(code->body_instructions) + " instruction(s) here" +
             (real_elsewhere
                  ? " but " + std::to_string(largest->body_instructions) + " on " + largest->arch
                  : std::string(" and no architecture of this binary has a real one: "
                                "compiled out? (--empty-kernels excuses kernels meant "
                                "to be empty)"))});
  }
}

// The stub of an arch-specialised kernel (is_arch_stub) never does the kernel's work, so it
// needs no wait.
void find_missing_waits(const KernelReport& kernel, std::vector<Finding>& findings) {
  for (const auto& code : kernel.code) {
    if (code.sync_counts.contains(std::string(kGridDependencyWait))) continue;
    if (!arch_has_pdl(code.arch)) continue;
    std::vector<const FunctionCode*> same_source;
    for (const auto& other : kernel.code)
      if (other.source == code.source) same_source.push_back(&other);
    if (is_arch_stub(kernel, code, same_source)) continue;
    const std::string instruction =
        code.source == CodeSource::kSass ? "ACQBULK" : "griddepcontrol.wait";
    findings.push_back({FindingKind::kPdlWaitMissing, kernel.name, kernel.mangled, code.arch,
                        code.source,
                        "no grid-dependency wait (" + instruction +
                            ") although launched with PDL (" + kernel.pdl_reason + ")"});
  }
}

// A kernel that triggers but is not known to be launched with PDL: a note, so that a
// secondary the heuristic cannot see can still be named (--pdl-kernels).
void note_trigger_only(const KernelReport& kernel, std::vector<Finding>& findings) {
  for (const auto& code : kernel.code)
    if (code.sync_counts.contains(std::string(kGridDependencyTrigger))) {
      findings.push_back({FindingKind::kPdlTriggerOnly, kernel.name, kernel.mangled, code.arch,
                          code.source,
                          "triggers dependents but waits on no architecture: a PDL primary; "
                          "if it is launched with PDL itself, name it in --pdl-kernels",
                          Severity::kNote});
      return;
    }
}

}  // namespace

bool arch_has_pdl(std::string_view arch) {
  const int number = arch_number(arch);
  return number == 0 || number >= 90;
}

std::string_view severity_name(Severity severity) {
  return severity == Severity::kNote ? "note" : "finding";
}

std::string_view finding_kind_name(FindingKind kind) {
  switch (kind) {
    case FindingKind::kSyncDiffersBetweenArchs: return "sync-differs-between-archs";
    case FindingKind::kPdlWaitMissing: return "pdl-wait-missing";
    case FindingKind::kEmptyBody: return "empty-body";
    case FindingKind::kMissingVsBaseline: return "missing-vs-baseline";
    case FindingKind::kPdlTriggerOnly: return "pdl-trigger-only";
    case FindingKind::kArchStub: return "arch-stub";
    case FindingKind::kEmptyEverywhere: return "empty-everywhere";
    case FindingKind::kEmptyWhereRead: return "empty-where-read";
  }
  return "unknown";
}

FileReport audit_listing(const std::string& path, const Listing& listing,
                         const AuditOptions& options) {
  std::map<std::string, KernelReport> by_mangled;
  for (const auto& code : listing.functions) {
    auto& kernel = by_mangled[code.mangled];
    if (kernel.mangled.empty()) {
      kernel.mangled = code.mangled;
      kernel.name = demangle(code.mangled);
    }
    if (!code.is_entry) kernel.is_entry = false;  // only PTX can tell a device function
    add_code(kernel, code);
  }
  FileReport report{path, listing.unread_archs, {}, {}};
  for (auto& [mangled, kernel] : by_mangled) {
    std::sort(kernel.code.begin(), kernel.code.end(), code_order);
    if (kernel.is_entry) kernel.pdl_reason = pdl_reason(kernel, options);
    kernel.pdl = !kernel.pdl_reason.empty();
    for (CodeSource source : {CodeSource::kSass, CodeSource::kPtx}) {
      std::vector<const FunctionCode*> codes;
      for (const auto& code : kernel.code)
        if (code.source == source) codes.push_back(&code);
      if (codes.empty()) continue;
      if (codes.size() >= 2) find_sync_differences(kernel, codes, report.findings);
      if (kernel.is_entry)
        find_empty_bodies(kernel, codes, options, listing.unread_archs, report.findings);
    }
    if (kernel.pdl) find_missing_waits(kernel, report.findings);
    else if (kernel.is_entry && options.pdl_heuristic) note_trigger_only(kernel, report.findings);
    report.kernels.push_back(std::move(kernel));
  }
  std::sort(report.kernels.begin(), report.kernels.end(),
            [](const KernelReport& a, const KernelReport& b) { return a.name < b.name; });
  std::sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
    return std::tuple(a.kernel, a.kind, a.source, arch_number(a.arch), a.arch) <
           std::tuple(b.kernel, b.kind, b.source, arch_number(b.arch), b.arch);
  });
  return report;
}

std::size_t compare_with_baseline(FileReport& report, const FileReport& baseline) {
  std::map<std::string, const KernelReport*> by_name;
  for (const auto& kernel : baseline.kernels) by_name[kernel.name] = &kernel;
  std::size_t matched = 0;
  for (const auto& kernel : report.kernels) {
    const auto it = by_name.find(kernel.name);
    if (it == by_name.end()) continue;
    ++matched;
    for (const auto& code : kernel.code) {
      std::map<std::string, std::vector<std::string>> baseline_classes;  // class -> baseline archs
      for (const auto& base : it->second->code)
        if (base.source == code.source)
          for (const auto& [name, count] : base.sync_counts)
            baseline_classes[name].push_back(base.arch);
      std::vector<std::string> missing;
      for (const auto& [name, archs] : baseline_classes)
        if (!code.sync_counts.contains(name))
          missing.push_back(name + " (baseline: " + join(archs, ", ") + ")");
      if (!missing.empty())
        report.findings.push_back({FindingKind::kMissingVsBaseline, kernel.name, kernel.mangled,
                                   code.arch, code.source,
                                   "lacks " + join(missing, "; ") + " of " + baseline.path});
    }
  }
  std::sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
    return std::tuple(a.kernel, a.kind, a.source, arch_number(a.arch), a.arch) <
           std::tuple(b.kernel, b.kind, b.source, arch_number(b.arch), b.arch);
  });
  return matched;
}

std::size_t count_findings(const std::vector<FileReport>& reports) {
  std::size_t total = 0;
  for (const auto& report : reports) total += count_severity(report, Severity::kFinding);
  return total;
}

std::size_t count_notes(const std::vector<FileReport>& reports) {
  std::size_t total = 0;
  for (const auto& report : reports) total += count_severity(report, Severity::kNote);
  return total;
}

nlohmann::json to_json(const std::vector<FileReport>& reports) {
  auto files = nlohmann::json::array();
  for (const auto& report : reports) {
    auto kernels = nlohmann::json::array();
    for (const auto& kernel : report.kernels) {
      auto code = nlohmann::json::array();
      for (const auto& c : kernel.code)
        code.push_back({{"arch", c.arch},
                        {"source", source_name(c.source)},
                        {"instructions", c.instructions},
                        {"body_instructions", c.body_instructions},
                        {"sync", c.sync_counts}});
      kernels.push_back({{"name", kernel.name},
                         {"mangled", kernel.mangled},
                         {"is_entry", kernel.is_entry},
                         {"pdl", kernel.pdl},
                         {"pdl_reason", kernel.pdl_reason},
                         {"code", code}});
    }
    auto findings = nlohmann::json::array();
    for (const auto& f : report.findings)
      findings.push_back({{"kind", finding_kind_name(f.kind)},
                          {"kernel", f.kernel},
                          {"mangled", f.mangled},
                          {"arch", f.arch},
                          {"source", source_name(f.source)},
                          {"detail", f.detail},
                          {"severity", severity_name(f.severity)}});
    files.push_back({{"path", report.path},
                     {"archs_not_read", report.unread_archs},
                     {"kernels", kernels},
                     {"findings", findings}});
  }
  return {{"files", files},
          {"findings_total", count_findings(reports)},
          {"notes_total", count_notes(reports)}};
}

std::string format_table(const std::vector<FileReport>& reports) {
  std::ostringstream out;
  for (const auto& report : reports) {
    out << "== " << report.path << ": " << report.kernels.size() << " function(s)\n"
        << "  arch     src    body  sync class x instructions\n";
    for (const auto& kernel : report.kernels) {
      out << kernel.name << (kernel.is_entry ? "" : "  [device function]");
      if (kernel.pdl) out << "  [PDL: " << kernel.pdl_reason << "]";
      out << "\n";
      for (const auto& code : kernel.code) {
        std::vector<std::string> counts;
        for (const auto& [name, count] : code.sync_counts)
          counts.push_back(name + " x" + std::to_string(count));
        char row[64];
        std::snprintf(row, sizeof row, "  %-8s %-4s %6d  ", code.arch.c_str(),
                      std::string(source_name(code.source)).c_str(), code.body_instructions);
        out << row << (counts.empty() ? "-" : join(counts, ", ")) << "\n";
      }
    }
    for (Severity severity : {Severity::kFinding, Severity::kNote}) {
      const std::size_t count = count_severity(report, severity);
      if (severity == Severity::kNote && count == 0) continue;
      out << severity_name(severity) << "s: " << count << "\n";
      for (const auto& f : report.findings)
        if (f.severity == severity)
          out << "  " << finding_kind_name(f.kind) << "  " << f.arch << " " << source_name(f.source)
              << "  " << f.kernel << ": " << f.detail << "\n";
    }
  }
  out << "total findings: " << count_findings(reports) << "\n";
  if (const std::size_t notes = count_notes(reports); notes > 0)
    out << "total notes: " << notes << " (they do not fail the run)\n";
  return out.str();
}

}  // namespace fusioncheck::audit
