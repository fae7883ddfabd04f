#pragma once
// The `gpu` subcommands, shared by the fusioncheck binary (`fusioncheck gpu ...`, under its
// top-level app) and run_gpu_main (another project's binary, at its top level). Private to cli/.
#include <memory>
#include <string>

#include "fusioncheck/gpu/kernel_registry.hpp"

namespace CLI {
class App;
}

namespace fusioncheck::cli {

// Adds smoke, check, kill-table, bench and kernels to `gpu`, choosing kernels from `registry`.
// `program` is how users start these commands ("fusioncheck gpu"), for help and errors.
// Each callback stores its exit code in `exit_code` and throws UsageError on bad input.
void add_gpu_subcommands(CLI::App& gpu, std::shared_ptr<const gpu::KernelRegistry> registry,
                         const std::string& program, int& exit_code);

}  // namespace fusioncheck::cli
