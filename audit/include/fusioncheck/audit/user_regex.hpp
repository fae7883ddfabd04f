#pragma once
// Regular expressions given by the user (--pdl-kernels, --empty-kernels). std::regex
// backtracks: a quantified group that holds a quantifier or an alternation, such as
// ((.)*)*x$ or (a|a)*b, takes time exponential in the kernel name's length. Such patterns,
// and overlong ones, are refused before any matching; what remains (concatenations,
// alternations, quantified atoms and classes) matches a name in polynomial time.
#include <cstddef>
#include <regex>
#include <string>

namespace fusioncheck::audit {

inline constexpr std::size_t kMaxUserRegexLength = 256;

// Why `pattern` is refused (one line), or "" when it is a valid ECMAScript pattern without
// a nested quantifier.
std::string user_regex_problem(const std::string& pattern);

// The compiled pattern; throws AuditInputError (cuobjdump.hpp) naming `option` and the reason.
std::regex compile_user_regex(const std::string& option, const std::string& pattern);

}  // namespace fusioncheck::audit
