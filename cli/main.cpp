// The `fusioncheck` driver: one binary, one subcommand per job. Runs alone or under mpirun.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/registry.hpp"

#ifndef FUSIONCHECK_VERSION
#define FUSIONCHECK_VERSION "unknown"
#endif

namespace {

constexpr std::string_view kErrorPrefix = "fusioncheck: error: ";

// Help without CLI11's "{false}" after a flag declared as "!--no-x": every flag is a switch.
class Formatter : public CLI::Formatter {
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

// One line: without a prefix that a lower layer already added (main adds it once), with
// inner line breaks folded.
std::string one_line(std::string text) {
  for (bool again = true; again;) {
    again = false;
    for (std::string_view prefix : {kErrorPrefix, std::string_view("fusioncheck: ")})
      if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size()), again = true;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at))
    text.replace(at, 1, "; ");
  return text;
}

int bad_input(const std::string& message) {
  std::cerr << kErrorPrefix << one_line(message) << "\n";
  return fusioncheck::cli::kExitBadInput;
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

int main(int argc, char** argv) {
  CLI::App app{"fusioncheck: proves fused allreduce + residual + RMSNorm kernels correct, "
               "or shows how they break"};
  app.formatter(std::make_shared<Formatter>());
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
  app.footer("Exit codes: 0 clean, 1 findings, 2 bad input (one line on stderr), 3 internal "
             "error.\nRun `fusioncheck COMMAND --help` for the options of each command.");
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
  } catch (const std::exception& e) {
    std::cerr << "fusioncheck: internal error: " << one_line(e.what()) << "\n";
    return fusioncheck::cli::kExitInternalError;
  }
  return exit_code;
}
