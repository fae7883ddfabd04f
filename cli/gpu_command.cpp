// `fusioncheck gpu smoke|check|kill-table|bench|kernels`: the gpu command line of the
// fusioncheck binary, over the kernels it ships (builtin_kernels()). The subcommands are the
// gpu_main library's (gpu_subcommands.cpp), shared with run_gpu_main.
#include <CLI/CLI.hpp>

#include <memory>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/gpu_main.hpp"
#include "gpu_cli.hpp"

namespace fusioncheck::cli {

void add_gpu_command(CLI::App& app, int& exit_code) {
  auto* gpu = app.add_subcommand(
      "gpu", "Run the real kernels on N ranks (one process per rank, under mpirun)");
  add_gpu_subcommands(*gpu, std::make_shared<const gpu::KernelRegistry>(builtin_kernels()),
                      "fusioncheck gpu", exit_code);
}

}  // namespace fusioncheck::cli
