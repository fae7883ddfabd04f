#pragma once
// The `gpu` command line as a library (fusioncheck::gpu_main): fusioncheck's own binary runs
// it over its built-in kernels; another project runs it over a registry that adds its own.
#include "fusioncheck/gpu/kernel_registry.hpp"

namespace fusioncheck::cli {

// The whole `gpu smoke|check|kill-table|bench` command line for the kernels in `registry`
// (argv[1] is the subcommand: smoke, check, kill-table, bench). Returns the exit code.
int run_gpu_main(int argc, char** argv, const gpu::KernelRegistry& registry);

// The families fusioncheck itself ships: ours, and FlashInfer's where the adapter is built.
gpu::KernelRegistry builtin_kernels();

}  // namespace fusioncheck::cli
