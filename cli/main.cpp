// The `fusioncheck` driver: one binary, one subcommand per job. Runs alone or under mpirun.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/registry.hpp"

int main(int argc, char** argv) {
  CLI::App app{"fusioncheck: proves fused allreduce + residual + RMSNorm kernels correct, "
               "or shows how they break"};
  app.require_subcommand(1);
  int exit_code = fusioncheck::cli::kExitClean;
  fusioncheck::cli::add_all_commands(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "fusioncheck: error: " << e.what() << " (see fusioncheck --help)\n";
    return fusioncheck::cli::kExitBadInput;
  } catch (const fusioncheck::cli::UsageError& e) {
    std::cerr << "fusioncheck: error: " << e.what() << "\n";
    return fusioncheck::cli::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "fusioncheck: internal error: " << e.what() << "\n";
    return fusioncheck::cli::kExitInternalError;
  }
  return exit_code;
}
