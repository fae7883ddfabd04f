#pragma once
// Every subcommand of `fusioncheck`, in the order `--help` lists them. A module that adds
// a subcommand declares its add_*_command here and calls it from add_all_commands.
#include "fusioncheck/cli/command.hpp"

namespace fusioncheck::cli {

void add_audit_command(CLI::App& app, int& exit_code);      // kernels/audit/cli
void add_reference_command(CLI::App& app, int& exit_code);  // reference/reference_command.cpp
void add_sim_command(CLI::App& app, int& exit_code);        // sim/src/sim_command.cpp
#if defined(FUSIONCHECK_HAVE_GPU_COMMAND)
void add_gpu_command(CLI::App& app, int& exit_code);  // cli/gpu_command.cpp
#endif

inline void add_all_commands(CLI::App& app, int& exit_code) {
  add_mutants_command(app, exit_code);
  add_audit_command(app, exit_code);
  add_reference_command(app, exit_code);
  add_sim_command(app, exit_code);
#if defined(FUSIONCHECK_HAVE_GPU_COMMAND)
  add_gpu_command(app, exit_code);
#endif
}

}  // namespace fusioncheck::cli
