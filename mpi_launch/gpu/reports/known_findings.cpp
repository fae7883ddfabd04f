#include "fusioncheck/gpu/known_findings.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <regex>
#include <set>

#include "fusioncheck/files/json_file.hpp"
#include "fusioncheck/gpu/case_runner.hpp"
#include "fusioncheck/gpu/errors.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;

constexpr int kLedgerFormat = 1;
constexpr std::uintmax_t kMaxLedgerBytes = 1 << 20;
constexpr std::size_t kMaxEntries = 1000;
// Reads one entry; every error names the file and the entry.
class EntryReader {
 public:
  EntryReader(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {}

  BadInput bad(const std::string& why) const { return BadInput(where_ + ": " + why); }

  void only_fields(const std::set<std::string>& allowed) const {
    for (const auto& [key, value] : j_.items())
      if (!allowed.count(key))
        throw bad(fmt::format("unknown field '{}' (fields: {})", key, fmt::join(allowed, ", ")));
  }
  bool has(const char* name) const { return j_.contains(name); }
  std::string text(const char* name, bool required) const {
    if (!j_.contains(name)) {
      if (required) throw bad(fmt::format("{} is missing", name));
      return "";
    }
    const auto& v = j_.at(name);
    if (!v.is_string() || v.get<std::string>().empty())
      throw bad(fmt::format("{} = {}: not a non-empty string", name, files::quote_json(v)));
    return v.get<std::string>();
  }
  int integer(const char* name, int lo, int hi) const {
    const auto& v = j_.at(name);
    if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
      throw bad(
          fmt::format("{} = {}: not an integer in [{}, {}]", name, files::quote_json(v), lo, hi));
    return static_cast<int>(v.get<long long>());
  }
  bool boolean(const char* name) const {
    const auto& v = j_.at(name);
    if (!v.is_boolean())
      throw bad(fmt::format("{} = {}: not true or false", name, files::quote_json(v)));
    return v.get<bool>();
  }
  // A non-empty array of strings, each one of `names` (or any, where names is empty).
  std::vector<std::string> names(const char* name, const std::vector<std::string>& allowed) const {
    const auto& v = j_.at(name);
    if (!v.is_array() || v.empty())
      throw bad(fmt::format("{} = {}: not a non-empty array", name, files::quote_json(v)));
    std::vector<std::string> out;
    for (const auto& item : v) {
      if (!item.is_string())
        throw bad(fmt::format("{}: {} is not a string", name, files::quote_json(item)));
      const std::string s = item.get<std::string>();
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), s) == allowed.end())
        throw bad(fmt::format("{}: '{}' is none of {}", name, s, fmt::join(allowed, ", ")));
      out.push_back(s);
    }
    return out;
  }
  const nlohmann::json& object(const char* name) const {
    const auto& v = j_.at(name);
    if (!v.is_object()) throw bad(fmt::format("{} is not an object", name));
    return v;
  }
  const nlohmann::json& at(const char* name) const { return j_.at(name); }
  // The object field `name`, read with errors that name it.
  EntryReader child(const char* name) const {
    return EntryReader(object(name), where_ + ": " + name);
  }

 private:
  const nlohmann::json& j_;
  std::string where_;
};

std::vector<std::string> pattern_names() {
  std::vector<std::string> out;
  for (auto p : protocol::kAllPatterns) out.emplace_back(protocol::pattern_name(p));
  return out;
}

// The checks a class of finding is reported by.
std::vector<std::string> checks_of(FindingClass c) {
  switch (c) {
    case FindingClass::hang: return {"hang"};
    case FindingClass::launch_refused: return {"launch"};
    case FindingClass::wrong_answer: break;
  }
  return {"reference", "agreement", "invariant", "pdl-consumer"};
}

FindingSignature read_signature(const EntryReader& entry, FindingClass cls) {
  const EntryReader s = entry.child("signature");
  const auto bad = [&](const std::string& why) { return s.bad(why); };
  s.only_fields({"checks", "message_contains", "hidden_not_multiple_of", "min_calls", "modes",
                 "variants", "patterns", "pdl_producer", "twoshot", "min_tokens"});
  FindingSignature sig;
  const std::vector<std::string> class_checks = checks_of(cls);
  if (!s.has("checks")) throw bad("checks is missing");
  sig.checks = s.names("checks", {std::begin(kFindingChecks), std::end(kFindingChecks)});
  for (const auto& check : sig.checks)
    if (std::find(class_checks.begin(), class_checks.end(), check) == class_checks.end())
      throw bad(fmt::format("check '{}' never reports a {} finding (it is reported by {})", check,
                            finding_class_name(cls), fmt::join(class_checks, ", ")));
  if (s.has("message_contains")) sig.message_contains = s.text("message_contains", true);
  if (s.has("hidden_not_multiple_of")) {
    // Every hidden size the suite draws is a multiple of 16: a divisor of 16 matches none.
    sig.hidden_not_multiple_of = s.integer("hidden_not_multiple_of", 2, CaseLimits::kMaxHidden);
    if (16 % sig.hidden_not_multiple_of == 0)
      throw bad(
          fmt::format("hidden_not_multiple_of {}: every hidden size drawn is a multiple of 16",
                      sig.hidden_not_multiple_of));
  }
  if (s.has("min_calls")) sig.min_calls = s.integer("min_calls", 1, kMaxCallsPerCase);
  if (s.has("modes"))
    for (const auto& m : s.names("modes", {std::begin(kIssueModeNames), std::end(kIssueModeNames)}))
      sig.modes.push_back(static_cast<IssueMode>(
          std::find(std::begin(kIssueModeNames), std::end(kIssueModeNames), m) -
          std::begin(kIssueModeNames)));
  if (s.has("variants")) {
    const auto& v = s.at("variants");
    if (!v.is_array() || v.empty()) throw bad("variants: not a non-empty array");
    for (const auto& item : v) {
      if (!item.is_number_integer() || item.get<long long>() < 0 ||
          item.get<long long>() > kMaxVariant)
        throw bad(fmt::format("variants: {} is not a launch variant (0 to {})",
                              files::quote_json(item), kMaxVariant));
      sig.variants.push_back(static_cast<int>(item.get<long long>()));
    }
  }
  if (s.has("patterns"))
    for (const auto& name : s.names("patterns", pattern_names()))
      for (auto p : protocol::kAllPatterns)
        if (protocol::pattern_name(p) == name) sig.patterns.push_back(p);
  if (s.has("pdl_producer")) sig.pdl_producer = s.boolean("pdl_producer");
  if (s.has("twoshot")) sig.twoshot = s.boolean("twoshot");
  if (s.has("min_tokens")) sig.min_tokens = s.integer("min_tokens", 1, CaseLimits::kMaxTokens);
  return sig;
}

KnownFinding read_entry(const nlohmann::json& j, const std::string& where,
                        const std::vector<std::string>& families) {
  if (!j.is_object()) throw BadInput(where + ": not an object");
  const EntryReader e(j, where);
  e.only_fields({"id", "family", "releases", "class", "title", "upstream", "writeup", "signature"});
  KnownFinding f;
  f.id = e.text("id", true);
  static const std::regex id_form("[a-z0-9][a-z0-9.-]{0,79}");
  if (!std::regex_match(f.id, id_form))
    throw e.bad(fmt::format("id '{}': lowercase letters, digits, '.' and '-', at most 80", f.id));
  const EntryReader named(j, where + " (" + f.id + ")");
  f.family = named.text("family", true);
  if (!families.empty() && std::find(families.begin(), families.end(), f.family) == families.end())
    throw named.bad(fmt::format("family '{}' is not a kernel family (families: {})", f.family,
                                fmt::join(families, ", ")));
  const std::string cls = named.text("class", true);
  if (cls == "wrong-answer") f.finding_class = FindingClass::wrong_answer;
  else if (cls == "hang") f.finding_class = FindingClass::hang;
  else if (cls == "launch-refused") f.finding_class = FindingClass::launch_refused;
  else throw named.bad("class '" + cls + "': one of wrong-answer, hang, launch-refused");
  f.title = named.text("title", true);
  f.upstream = named.text("upstream", true);
  f.writeup = named.text("writeup", true);
  if (named.has("releases")) {
    const EntryReader r = named.child("releases");
    r.only_fields({"from", "through"});
    f.release_from = r.text("from", false);
    f.release_through = r.text("through", false);
    for (const auto* v : {&f.release_from, &f.release_through})
      if (!v->empty() && !is_release(*v))
        throw named.bad("releases: '" + *v + "' is not a release (such as 0.7.4 or 0.2.8.post1)");
    if (!f.release_from.empty() && !f.release_through.empty() &&
        compare_releases(f.release_from, f.release_through) > 0)
      throw named.bad("releases: from " + f.release_from + " is after through " +
                      f.release_through);
  }
  if (!named.has("signature")) throw named.bad("signature is missing");
  f.signature = read_signature(named, f.finding_class);
  return f;
}

std::vector<long long> release_parts(const std::string& r) {
  std::vector<long long> parts;
  std::string rest = r;
  long long post = -1;
  if (const auto at = rest.find(".post"); at != std::string::npos) {
    post = std::stoll(rest.substr(at + 5));
    rest = rest.substr(0, at);
  }
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto dot = rest.find('.', start);
    parts.push_back(std::stoll(rest.substr(start, dot - start)));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  while (parts.size() < 4) parts.push_back(0);
  parts.push_back(post);
  return parts;
}

bool call_triggers(const FindingSignature& s, const CallSpec& call) {
  if (!s.variants.empty() &&
      std::find(s.variants.begin(), s.variants.end(), call.variant) == s.variants.end())
    return false;
  if (!s.patterns.empty() &&
      std::find(s.patterns.begin(), s.patterns.end(), call.pattern) == s.patterns.end())
    return false;
  if (s.pdl_producer && call.pdl_producer != *s.pdl_producer) return false;
  if (s.twoshot && call.twoshot != *s.twoshot) return false;
  return call.tokens >= s.min_tokens;
}

}  // namespace

std::string_view finding_class_name(FindingClass c) {
  switch (c) {
    case FindingClass::wrong_answer: return "wrong-answer";
    case FindingClass::hang: return "hang";
    case FindingClass::launch_refused: return "launch-refused";
  }
  return "?";
}

bool is_release(const std::string& text) {
  static const std::regex form(R"([0-9]{1,9}(\.[0-9]{1,9}){0,3}(\.post[0-9]{1,9})?)");
  return std::regex_match(text, form);
}

int compare_releases(const std::string& a, const std::string& b) {
  const auto pa = release_parts(a), pb = release_parts(b);
  return pa < pb ? -1 : pa > pb ? 1 : 0;
}

KnownFindings known_findings_from_json(const nlohmann::json& j, const std::string& path,
                                       const std::vector<std::string>& families) {
  const std::string where = "--known " + path;
  if (!j.is_object()) throw BadInput(where + ": not a ledger (a JSON object)");
  for (const auto& [key, value] : j.items())
    if (key != "fusioncheck_known_findings" && key != "findings")
      throw BadInput(
          fmt::format("{}: unknown field '{}' (fields: fusioncheck_known_findings, "
                      "findings)",
                      where, key));
  const auto format = j.find("fusioncheck_known_findings");
  if (format == j.end() || *format != kLedgerFormat)
    throw BadInput(where + ": not a ledger of format " + std::to_string(kLedgerFormat) +
                   " (\"fusioncheck_known_findings\": 1)");
  const auto list = j.find("findings");
  if (list == j.end() || !list->is_array())
    throw BadInput(where + ": findings is missing or not an array");
  if (list->size() > kMaxEntries)
    throw BadInput(fmt::format("{}: {} findings; at most {}", where, list->size(), kMaxEntries));
  KnownFindings ledger;
  ledger.path = path;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < list->size(); ++i) {
    KnownFinding f = read_entry((*list)[i], fmt::format("{}: findings[{}]", where, i), families);
    if (!ids.insert(f.id).second)
      throw BadInput(fmt::format("{}: findings[{}]: id '{}' is used twice", where, i, f.id));
    ledger.entries.push_back(std::move(f));
  }
  return ledger;
}

KnownFindings read_known_findings(const std::string& path,
                                  const std::vector<std::string>& families) {
  std::string text;
  if (const std::string why = files::read_small_file(path, kMaxLedgerBytes, text); !why.empty())
    throw BadInput("--known " + path + ": " + why);
  nlohmann::json j;
  if (const std::string why = files::parse_json(text, j); !why.empty())
    throw BadInput("--known " + path + ": " + why);
  return known_findings_from_json(j, path, families);
}

std::vector<KnownFinding> entries_for(const KnownFindings& ledger, const std::string& kernel,
                                      const std::string& release) {
  const std::string family = kernel.substr(0, kernel.find('@'));
  std::vector<KnownFinding> out;
  for (const auto& e : ledger.entries) {
    if (e.family != family) continue;
    if (!release.empty() && is_release(release)) {
      if (!e.release_from.empty() && compare_releases(release, e.release_from) < 0) continue;
      if (!e.release_through.empty() && compare_releases(release, e.release_through) > 0) continue;
    }
    out.push_back(e);
  }
  return out;
}

bool triggered_by(const KnownFinding& entry, const GpuCase& c) {
  const FindingSignature& s = entry.signature;
  if (s.hidden_not_multiple_of > 0 && c.hidden % s.hidden_not_multiple_of == 0) return false;
  if (static_cast<int>(c.calls.size()) < s.min_calls) return false;
  if (!s.modes.empty() && std::find(s.modes.begin(), s.modes.end(), c.mode) == s.modes.end())
    return false;
  return std::any_of(c.calls.begin(), c.calls.end(),
                     [&](const CallSpec& call) { return call_triggers(s, call); });
}

bool matches(const KnownFinding& entry, const GpuCase& c, const std::vector<Finding>& findings) {
  if (findings.empty() || !triggered_by(entry, c)) return false;
  const FindingSignature& s = entry.signature;
  return std::all_of(findings.begin(), findings.end(), [&](const Finding& f) {
    return std::find(s.checks.begin(), s.checks.end(), f.check) != s.checks.end() &&
           f.message.find(s.message_contains) != std::string::npos;
  });
}

std::string KnownFindingTally::state() const {
  if (failed_cases > 0) return "known";
  return trigger_cases > 0 ? "absent" : "not drawn";
}

std::string describe_tallies(const std::vector<KnownFindingTally>& tallies) {
  std::string out;
  for (const auto& t : tallies) {
    if (t.state() == "not drawn") continue;
    out += out.empty() ? "" : ", ";
    out += t.state() == "known"
               ? fmt::format("{} ({} of {} cases)", t.id, t.failed_cases, t.trigger_cases)
               : fmt::format("{} (ABSENT: {} cases drew its trigger, none failed)", t.id,
                             t.trigger_cases);
  }
  return out;
}

KnownFindingRun::KnownFindingRun(std::vector<KnownFinding> applicable)
    : entries(std::move(applicable)) {
  for (const auto& e : entries) tallies.push_back({.id = e.id, .finding_class = e.finding_class});
}

void KnownFindingRun::count_trigger(const GpuCase& c) {
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (triggered_by(entries[i], c)) ++tallies[i].trigger_cases;
}

int KnownFindingRun::match(const GpuCase& c, const std::vector<Finding>& findings) const {
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (matches(entries[i], c, findings)) return static_cast<int>(i);
  return -1;
}

int KnownFindingRun::absent() const {
  return static_cast<int>(std::count_if(tallies.begin(), tallies.end(),
                                        [](const auto& t) { return t.state() == "absent"; }));
}

}  // namespace fusioncheck::gpu
