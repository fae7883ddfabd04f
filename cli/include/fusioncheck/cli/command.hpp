#pragma once
// The error model and registration hook of the `fusioncheck` command line.
// Each module adds its own subcommand with a function of the shape
//   void add_<name>_command(CLI::App& app, int& exit_code);
// whose callback stores the subcommand's exit code: 0 clean, 1 findings, 2 bad input.
// Bad input anywhere below a subcommand throws UsageError; main() turns it into one line
// on stderr and exit code 2. An output that could not be written (a file, or stdout) throws
// WriteError: one line naming the path, exit code 3.
#include <stdexcept>
#include <string>

namespace CLI {
class App;
}

namespace fusioncheck::cli {

// The exit codes of every subcommand.
inline constexpr int kExitClean = 0;          // ran, found nothing
inline constexpr int kExitFindings = 1;       // a counterexample, a failed check, a hang diagnosis
inline constexpr int kExitBadInput = 2;       // refused before the work, with a one-line error
inline constexpr int kExitInternalError = 3;  // a bug of fusioncheck itself, or a failed write

struct UsageError : std::runtime_error {
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

// An output file or stdout could not be written; the message names the path and the reason.
struct WriteError : std::runtime_error {
  explicit WriteError(const std::string& what) : std::runtime_error(what) {}
};

void add_mutants_command(CLI::App& app, int& exit_code);

}  // namespace fusioncheck::cli
