// The `fusioncheck` driver: one binary, one subcommand per job. Runs alone or under mpirun.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/options.hpp"
#include "fusioncheck/cli/error_line.hpp"
#include "fusioncheck/cli/registry.hpp"

#ifndef FUSIONCHECK_VERSION
#define FUSIONCHECK_VERSION "unknown"
#endif

namespace {

int bad_input(const std::string& message) {
  return fusioncheck::cli::report_bad_input("fusioncheck", message);
}

std::string one_line(const std::string& text) {
  return fusioncheck::cli::one_line_message(text, "fusioncheck");
}

// A failed write (an output file): one line naming it, exit code 3.
int write_error(const std::string& message) {
  fusioncheck::cli::print_error_line("fusioncheck", message);
  return fusioncheck::cli::kExitInternalError;
}

// "fusioncheck sim" for the deepest subcommand the command line selected.
std::string command_path(const CLI::App& app) {
  std::string path = "fusioncheck";
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += " " + at->get_name();
  }
  return path;
}

// The first argument some (sub)command did not take, as an error; empty when none. `path` is
// "fusioncheck" or "fusioncheck sim".
std::string leftover_error(const CLI::App& app, const std::string& path) {
  const std::vector<std::string> left = app.remaining(false);
  if (!left.empty()) {
    const std::string& arg = left.front();
    const std::string where = path == "fusioncheck" ? "" : path.substr(path.find(' ') + 1) + ": ";
    const std::string see = " (see " + path + " --help)";
    if (arg.size() > 1 && arg[0] == '-') return where + "unknown option '" + arg + "'" + see;
    const bool takes_subcommand = !app.get_subcommands({}).empty() && app.get_subcommands().empty();
    if (takes_subcommand) return where + "unknown subcommand '" + arg + "'" + see;
    return where + "unexpected argument '" + arg + "'" + see;
  }
  for (const CLI::App* sub : app.get_subcommands()) {
    std::string error = leftover_error(*sub, path + " " + sub->get_name());
    if (!error.empty()) return error;
  }
  return {};
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "fusioncheck: proves fused allreduce + residual + RMSNorm kernels correct, "
      "or shows how they break"};
  app.formatter(std::make_shared<fusioncheck::cli::SwitchFormatter>());
  // Every option of every subcommand shows its default in --help.
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", std::string("fusioncheck ") + FUSIONCHECK_VERSION,
                       "Print the version and exit");
  // At most one subcommand; none is refused after parsing, so that an unknown subcommand or
  // option is named instead of "a subcommand is required".
  app.require_subcommand(0, 1);
  int exit_code = fusioncheck::cli::kExitClean;
  fusioncheck::cli::add_all_commands(app, exit_code);
  // After the subcommands, which would inherit it.
  app.footer(
      "Exit codes: 0 clean, 1 findings, 2 bad input (one line on stderr), 3 internal "
      "error or a failed write (one line on stderr).\nRun `fusioncheck COMMAND --help` for the options of each command.");
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty())
      return bad_input("a subcommand is required (see fusioncheck --help)");
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Arguments nobody took explain a missing subcommand better than "a subcommand is required".
    const std::string path = command_path(app);
    const std::string left = leftover_error(app, "fusioncheck");
    if (!left.empty()) return bad_input(left);
    return bad_input(std::string(e.what()) + " (see " + path + " --help)");
  } catch (const fusioncheck::cli::UsageError& e) {
    return bad_input(e.what());
  } catch (const fusioncheck::cli::WriteError& e) {
    return write_error(e.what());
  } catch (const std::system_error& e) {
    // fmt::print throws when a write to stdout fails.
    if (std::ferror(stdout))
      return fusioncheck::cli::report_stdout_error("fusioncheck", e.code().value());
    std::cerr << "fusioncheck: internal error: " << one_line(e.what()) << "\n";
    return fusioncheck::cli::kExitInternalError;
  } catch (const std::exception& e) {
    std::cerr << "fusioncheck: internal error: " << one_line(e.what()) << "\n";
    return fusioncheck::cli::kExitInternalError;
  }
  return exit_code;
}

int main(int argc, char** argv) {
  return fusioncheck::cli::finish_stdout("fusioncheck", run(argc, argv));
}
