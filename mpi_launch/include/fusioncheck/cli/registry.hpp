#pragma once
// Every subcommand of `fusioncheck`, in the order `--help` lists them. A module that adds
// a subcommand declares its add_*_command here and calls it from add_all_commands.
#include "fusioncheck/cli/command.hpp"

namespace fusioncheck::cli {

inline void add_all_commands(CLI::App& app, int& exit_code) {
  add_mutants_command(app, exit_code);
}

}  // namespace fusioncheck::cli
