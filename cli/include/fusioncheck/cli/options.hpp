#pragma once
// Parse-time checks shared by the subcommands: strict integer and number ranges (CLI11's own
// conversion of unsigned options wraps "-1" to 2^64-1 and saturates overflowing values) and
// the refusal of options that do not apply to the chosen mode or that are given empty.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <system_error>

#include "fusioncheck/cli/command.hpp"

namespace fusioncheck::cli {

// Help without CLI11's "{false}" after a flag declared as "!--no-x": every flag is a switch.
class SwitchFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    if (opt->get_type_size() != 0) return name;
    for (auto open = name.find('{'); open != std::string::npos; open = name.find('{')) {
      const auto close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
};

// A plain decimal integer in [lo, hi]: no sign on unsigned types, no overflow, no trailing
// text. The accepted value is rewritten in canonical decimal, so that CLI11's own conversion
// (base 0: "010" would be octal) sees exactly what was checked. Help shows `shown`, by
// default "in [lo, hi]".
template <typename T> CLI::Validator integer_in(T lo, T hi, std::string shown = {}) {
  static_assert(std::is_integral_v<T>);
  CLI::Validator v(
      [lo, hi](std::string& input) -> std::string {
        T value{};
        const char* first = input.data();
        const char* last = input.data() + input.size();
        const auto [end, error] = std::from_chars(first, last, value);
        if (error == std::errc::result_out_of_range ||
            (error == std::errc{} && end == last && (value < lo || value > hi)))
          return fmt::format("{} is out of range: expected an integer in [{}, {}]", input, lo, hi);
        if (error != std::errc{} || end != last || input.empty())
          return fmt::format("'{}' is not {}: expected an integer in [{}, {}]", input,
                             std::is_signed_v<T> ? "an integer" : "a non-negative integer", lo, hi);
        input = std::to_string(value);
        return {};
      },
      shown.empty() ? fmt::format("in [{}, {}]", lo, hi) : shown);
  return v;
}

// Any 64-bit seed: 0 to 2^64-1, no sign.
inline CLI::Validator any_seed() {
  return integer_in<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max(), "0 to 2^64-1");
}

// A number of seconds in (0, hi].
inline CLI::Validator seconds_up_to(double hi) {
  return CLI::Validator(
      [hi](std::string& input) -> std::string {
        double value = 0;
        const char* last = input.data() + input.size();
        const auto [end, error] = std::from_chars(input.data(), last, value);
        if (error != std::errc{} || end != last || input.empty() || !std::isfinite(value))
          return fmt::format("'{}' is not a number of seconds", input);
        if (!(value > 0 && value <= hi))
          return fmt::format("{} is out of range: expected seconds in (0, {}]", input, hi);
        return {};
      },
      fmt::format("in (0, {}]", hi));
}

// Throws UsageError naming the first option of `sub` given an empty value (`--calls ''`):
// no option takes "" to mean its default. Positional arguments are left to their own checks.
inline void refuse_empty_values(const CLI::App& sub) {
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->get_type_size() == 0 || opt->get_positional()) continue;
    for (const std::string& value : opt->results())
      if (value.empty()) throw UsageError(opt->get_name() + ": empty value");
  }
}

// Throws UsageError naming the first of `options` given on the command line: it does not
// apply in `mode`, for the reason `why`.
inline void refuse_options(const CLI::App& sub, std::initializer_list<const char*> options,
                           const std::string& mode, const std::string& why) {
  for (const char* name : options)
    if (sub.count(name) > 0)
      throw UsageError(fmt::format("{} does not apply {} ({})", name, mode, why));
}

}  // namespace fusioncheck::cli
