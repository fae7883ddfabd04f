#include "fusioncheck/audit/user_regex.hpp"

#include <cctype>
#include <vector>

#include "fusioncheck/audit/cuobjdump.hpp"

namespace fusioncheck::audit {
namespace {

// What an open group holds so far.
struct Group {
  bool quantifier = false;
  bool alternation = false;
  std::size_t at = 0;  // where it opens
};

// The length of the quantifier at `i` (*, +, ?, {n}, {n,}, {n,m}, each maybe followed by the
// lazy ?); 0 if none starts there.
std::size_t quantifier_length(const std::string& p, std::size_t i) {
  if (i >= p.size()) return 0;
  std::size_t n = 0;
  if (p[i] == '*' || p[i] == '+' || p[i] == '?') {
    n = 1;
  } else if (p[i] == '{') {
    std::size_t j = i + 1;
    while (j < p.size() && (std::isdigit(static_cast<unsigned char>(p[j])) || p[j] == ',')) ++j;
    if (j == i + 1 || j >= p.size() || p[j] != '}') return 0;
    n = j - i + 1;
  }
  if (n > 0 && i + n < p.size() && p[i + n] == '?') ++n;
  return n;
}

// The end of the character class that opens at `i` (one past its ']').
std::size_t class_end(const std::string& p, std::size_t i) {
  std::size_t j = i + 1;
  if (j < p.size() && p[j] == '^') ++j;
  for (; j < p.size() && p[j] != ']'; ++j)
    if (p[j] == '\\') ++j;
  return j + 1;
}

}  // namespace

std::string user_regex_problem(const std::string& p) {
  if (p.size() > kMaxUserRegexLength)
    return std::to_string(p.size()) + " characters; at most " + std::to_string(kMaxUserRegexLength);
  std::vector<Group> open(1);  // the whole pattern is the outermost group
  for (std::size_t i = 0; i < p.size();) {
    const char c = p[i];
    if (c == '\\') {
      i += 2;
    } else if (c == '[') {
      i = class_end(p, i);
    } else if (c == '(') {
      open.push_back(Group{false, false, i});
      i += (i + 1 < p.size() && p[i + 1] == '?') ? 3 : 1;  // (?: (?= (?!
    } else if (c == ')' && open.size() > 1) {
      const Group inner = open.back();
      open.pop_back();
      const std::size_t q = quantifier_length(p, i + 1);
      if (q > 0 && (inner.quantifier || inner.alternation))
        return "the group at offset " + std::to_string(inner.at) + " is quantified and holds " +
               (inner.quantifier ? "a quantifier" : "an alternation") +
               ": matching could take exponential time (drop the outer quantifier)";
      open.back().quantifier |= inner.quantifier || q > 0;
      open.back().alternation |= inner.alternation;
      i += 1 + q;
    } else if (c == '|') {
      open.back().alternation = true;
      ++i;
    } else if (const std::size_t q = quantifier_length(p, i); q > 0) {
      open.back().quantifier = true;
      i += q;
    } else {
      ++i;
    }
  }
  try {
    std::regex(p, std::regex::ECMAScript);
  } catch (const std::regex_error&) {
    return "not a valid regular expression";
  }
  return "";
}

std::regex compile_user_regex(const std::string& option, const std::string& pattern) {
  if (pattern.empty()) throw AuditInputError(option + ": empty pattern");
  if (const std::string problem = user_regex_problem(pattern); !problem.empty())
    throw AuditInputError(option + ": " +
                          (problem == "not a valid regular expression"
                               ? problem + ": " + pattern
                               : "pattern refused: " + problem));
  return std::regex(pattern, std::regex::ECMAScript);
}

}  // namespace fusioncheck::audit
