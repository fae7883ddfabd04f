// Releases of one package side by side (release_diff.hpp).
#include "fusioncheck/audit/release_diff.hpp"

#include "fusioncheck/audit/cuobjdump.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace fusioncheck::audit {
namespace {

// A kernel's sync classes per (arch, source), over every file of a release (a wheel's members
// may hold the same kernel: their classes are united).
using CodeKey = std::tuple<int, std::string, CodeSource>;  // arch number first: sm_90 < sm_100
using KernelClasses = std::map<CodeKey, std::set<std::string>>;

std::map<std::string, KernelClasses> kernels_of(const Release& release) {
  std::map<std::string, KernelClasses> out;
  for (const FileReport& file : release.files)
    for (const KernelReport& kernel : file.kernels)
      for (const FunctionCode& code : kernel.code) {
        auto& classes = out[kernel.name][{arch_number(code.arch), code.arch, code.source}];
        for (const auto& [name, count] : code.sync_counts)
          if (count > 0) classes.insert(name);
      }
  return out;
}

std::vector<std::string> minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::vector<std::string> out;
  for (const std::string& x : a)
    if (!b.contains(x)) out.push_back(x);
  return out;
}

ReleaseStep diff_pair(const Release& from, const Release& to) {
  ReleaseStep step{from.label, to.label};
  const auto before = kernels_of(from);
  const auto after = kernels_of(to);
  for (const auto& [name, codes] : before) {
    const auto it = after.find(name);
    if (it == after.end()) {
      step.gone.push_back(name);
      continue;
    }
    ++step.matched;
    for (const auto& [key, classes] : codes) {
      const auto& [number, arch, source] = key;
      const auto other = it->second.find(key);
      if (other == it->second.end()) {
        step.codes_changed.push_back(
            fmt::format("{}: {} {} dropped", name, arch, source_name(source)));
        continue;
      }
      KernelChange change{name, arch, source, minus(classes, other->second),
                          minus(other->second, classes)};
      if (change.lost.empty() && change.gained.empty()) continue;
      for (const std::string& lost : change.lost) change.finding |= lost_class_is_finding(lost);
      step.changes.push_back(std::move(change));
    }
    for (const auto& [key, classes] : it->second)
      if (!codes.contains(key))
        step.codes_changed.push_back(
            fmt::format("{}: {} {} added", name, std::get<1>(key), source_name(std::get<2>(key))));
  }
  for (const auto& [name, codes] : after)
    if (!before.contains(name)) step.added.push_back(name);
  return step;
}

// The member `key` of `object` (at `where`), of the type `is` checks; else AuditInputError.
const nlohmann::json& member(const nlohmann::json& object, const char* key,
                             const std::string& where, bool (nlohmann::json::*is)() const noexcept,
                             const char* type) {
  const auto it = object.find(key);
  if (it == object.end() || !((*it).*is)())
    throw AuditInputError(fmt::format("{}: no {} \"{}\"", where, type, key));
  return *it;
}

FunctionCode code_from_json(const nlohmann::json& code, const std::string& where) {
  if (!code.is_object()) throw AuditInputError(where + ": not an object");
  FunctionCode out;
  out.arch = member(code, "arch", where, &nlohmann::json::is_string, "string").get<std::string>();
  if (arch_number(out.arch) <= 0)
    throw AuditInputError(fmt::format("{}: \"{}\" names no architecture", where, out.arch));
  const std::string source =
      member(code, "source", where, &nlohmann::json::is_string, "string").get<std::string>();
  if (source == source_name(CodeSource::kSass)) out.source = CodeSource::kSass;
  else if (source == source_name(CodeSource::kPtx)) out.source = CodeSource::kPtx;
  else
    throw AuditInputError(fmt::format("{}: source \"{}\" is neither SASS nor PTX", where, source));
  for (const auto& [name, count] :
       member(code, "sync", where, &nlohmann::json::is_object, "object").items()) {
    if (!count.is_number_integer() || count.get<long long>() < 0)
      throw AuditInputError(fmt::format("{}: sync class \"{}\" has no count", where, name));
    out.sync_counts[name] = static_cast<int>(std::min<long long>(count.get<long long>(), 1 << 30));
  }
  return out;
}

}  // namespace

std::vector<FileReport> file_reports_from_json(const nlohmann::json& report) {
  if (!report.is_object()) throw AuditInputError("not an audit report (a JSON object)");
  std::vector<FileReport> files;
  const auto& listed = member(report, "files", "the report", &nlohmann::json::is_array, "array");
  for (std::size_t f = 0; f < listed.size(); ++f) {
    const std::string where = fmt::format("files[{}]", f);
    if (!listed[f].is_object()) throw AuditInputError(where + ": not an object");
    FileReport file;
    file.path =
        member(listed[f], "path", where, &nlohmann::json::is_string, "string").get<std::string>();
    const auto& kernels = member(listed[f], "kernels", where, &nlohmann::json::is_array, "array");
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      const std::string at = fmt::format("{}.kernels[{}]", where, k);
      if (!kernels[k].is_object()) throw AuditInputError(at + ": not an object");
      KernelReport kernel;
      kernel.name =
          member(kernels[k], "name", at, &nlohmann::json::is_string, "string").get<std::string>();
      const auto& codes = member(kernels[k], "code", at, &nlohmann::json::is_array, "array");
      for (std::size_t c = 0; c < codes.size(); ++c)
        kernel.code.push_back(code_from_json(codes[c], fmt::format("{}.code[{}]", at, c)));
      file.kernels.push_back(std::move(kernel));
    }
    files.push_back(std::move(file));
  }
  return files;
}

bool lost_class_is_finding(const std::string& sync_class) {
  return sync_class == kGridDependencyWait || sync_class.rfind("fence", 0) == 0 ||
         sync_class.find("acquire") != std::string::npos;
}

std::vector<ReleaseStep> diff_releases(const std::vector<Release>& releases) {
  if (releases.size() < 2) throw std::invalid_argument("a release diff needs two releases or more");
  std::vector<ReleaseStep> steps;
  for (std::size_t i = 0; i + 1 < releases.size(); ++i)
    steps.push_back(diff_pair(releases[i], releases[i + 1]));
  return steps;
}

std::size_t count_findings(const std::vector<ReleaseStep>& steps) {
  std::size_t total = 0;
  for (const ReleaseStep& step : steps)
    for (const KernelChange& change : step.changes) total += change.finding ? 1 : 0;
  return total;
}

nlohmann::json to_json(const std::vector<ReleaseStep>& steps) {
  auto out = nlohmann::json::array();
  for (const ReleaseStep& step : steps) {
    auto changes = nlohmann::json::array();
    for (const KernelChange& c : step.changes)
      changes.push_back({{"kernel", c.kernel},
                         {"arch", c.arch},
                         {"source", source_name(c.source)},
                         {"lost", c.lost},
                         {"gained", c.gained},
                         {"severity", c.finding ? "finding" : "note"}});
    out.push_back({{"from", step.from},
                   {"to", step.to},
                   {"matched_kernels", step.matched},
                   {"changes", changes},
                   {"gone", step.gone},
                   {"added", step.added},
                   {"codes_changed", step.codes_changed}});
  }
  return out;
}

std::string format_table(const std::vector<ReleaseStep>& steps) {
  std::string out;
  for (const ReleaseStep& step : steps) {
    out += fmt::format("{} -> {}: {} kernels in both, {} gone, {} new\n", step.from, step.to,
                       step.matched, step.gone.size(), step.added.size());
    for (const KernelChange& c : step.changes)
      out +=
          fmt::format("  {:<8} {} [{} {}]{}{}\n", c.finding ? "FINDING" : "note", c.kernel, c.arch,
                      source_name(c.source),
                      c.lost.empty() ? "" : fmt::format(" lost {}", fmt::join(c.lost, ", ")),
                      c.gained.empty() ? "" : fmt::format(" gained {}", fmt::join(c.gained, ", ")));
    for (const std::string& name : step.gone)
      out += fmt::format("  {:<8} gone: {}\n", "note", name);
    for (const std::string& name : step.added)
      out += fmt::format("  {:<8} new: {}\n", "note", name);
    for (const std::string& code : step.codes_changed)
      out += fmt::format("  {:<8} {}\n", "note", code);
  }
  out +=
      fmt::format("total findings: {} (lost waits, fences or acquires)\n", count_findings(steps));
  return out;
}

}  // namespace fusioncheck::audit
