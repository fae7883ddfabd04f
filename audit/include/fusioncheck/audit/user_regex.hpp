#pragma once
// Regular expressions given by the user (--kernels, --pdl-kernels, --empty-kernels), matched
// with RE2: its automata take time linear in the name's length whatever the pattern, where
// std::regex backtracks (side-by-side .* take time polynomial in the name's length with the
// repeats as exponent, nested quantifiers exponential time). RE2's syntax is Perl's without
// backreferences and lookaround.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace fusioncheck::audit {

inline constexpr std::size_t kMaxUserRegexLength = 256;

// A compiled user pattern; copies share it.
class UserRegex {
 public:
  // Whether the pattern occurs anywhere in `text`.
  bool search(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  friend UserRegex compile_user_regex(const std::string& option, const std::string& pattern);
  std::shared_ptr<const re2::RE2> re_;
  std::string pattern_;
};

// Why `pattern` is refused (one line), or "" when RE2 compiles it within its memory budget.
std::string user_regex_problem(const std::string& pattern);

// The compiled pattern; throws AuditInputError (cuobjdump.hpp) naming `option` and the reason.
UserRegex compile_user_regex(const std::string& option, const std::string& pattern);

}  // namespace fusioncheck::audit
