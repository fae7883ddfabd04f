#include "fusioncheck/audit/user_regex.hpp"

#include <re2/re2.h>

#include "fusioncheck/audit/cuobjdump.hpp"

namespace fusioncheck::audit {
namespace {

// RE2's own memory bound (its default is 8 MB); a pattern past it fails to compile.
RE2::Options options() {
  RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(8 << 20);
  return o;
}

}  // namespace

bool UserRegex::search(std::string_view text) const {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

std::string user_regex_problem(const std::string& p) {
  if (p.size() > kMaxUserRegexLength)
    return std::to_string(p.size()) + " characters; at most " + std::to_string(kMaxUserRegexLength);
  const RE2 re(p, options());
  if (!re.ok()) return "not a valid regular expression (RE2 syntax): " + re.error();
  return "";
}

UserRegex compile_user_regex(const std::string& option, const std::string& pattern) {
  if (pattern.empty()) throw AuditInputError(option + ": empty pattern");
  if (const std::string problem = user_regex_problem(pattern); !problem.empty())
    throw AuditInputError(option + ": pattern refused: " + problem);
  UserRegex r;
  r.re_ = std::make_shared<const RE2>(pattern, options());
  r.pattern_ = pattern;
  return r;
}

}  // namespace fusioncheck::audit
