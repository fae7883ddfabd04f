// `fusioncheck gpu smoke|check|kill-table|bench|kernels|repro`: the gpu command line of the
// fusioncheck binary, over the kernels it ships (builtin_kernels()). The subcommands but repro
// are the gpu_main library's (gpu_subcommands.cpp), shared with run_gpu_main; repro exports
// FlashInfer's cases, which only this binary drives.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>

#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/gpu_main.hpp"
#include "fusioncheck/cli/options.hpp"
#include "fusioncheck/cli/paths.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "gpu_cli.hpp"

namespace fusioncheck::cli {
namespace {

// A replay file as a stand-alone CUDA program: no MPI, no GPU.
void add_repro(CLI::App& gpu, int& exit_code) {
  auto request = std::make_shared<adapters::ReproRequest>();
  auto* repro = gpu.add_subcommand(
      "repro",
      "Export a FlashInfer replay file as a stand-alone CUDA program upstream can run "
      "(its folder: sources, CMakeLists.txt, README.md, inputs, expected outputs)");
  repro->add_option("--replay", request->replay_path, "The replay file of a failing case")
      ->required();
  repro->add_option("--out", request->out_dir, "The folder to write (new, or empty)")->required();
  repro->add_option("--known", request->known_path,
                    "A ledger of known findings: the entry the case matches names the finding");
  repro->add_option("--runs", request->runs, "Runs of the case in the program (default 20)")
      ->check(integer_in<int>(1, 1000));
  repro->callback([request, &exit_code] {
    require_readable_file("--replay", request->replay_path);
    if (!request->known_path.empty()) require_readable_file("--known", request->known_path);
    if (request->out_dir.empty()) throw UsageError("--out: empty path");
    adapters::ReproExport done;
    try {
      done = adapters::export_flashinfer_repro(*request);
    } catch (const gpu::BadInput& e) {
      throw UsageError(std::string("gpu repro: ") + e.what());
    } catch (const gpu::RunFailure& e) {
      throw WriteError(std::string("gpu repro: ") + e.what());
    }
    fmt::print(
        "gpu repro: {} ({}) in {}: {} files\n  cmake -S {} -B {}/build "
        "-DFLASHINFER_INCLUDE=<FlashInfer include tree> && cmake --build {}/build && "
        "{}/build/repro   # exit 3: reproduced, 0: not, 2: cannot run\n",
        done.finding, done.kernel, request->out_dir, done.files.size(), request->out_dir,
        request->out_dir, request->out_dir, request->out_dir);
    exit_code = kExitClean;
  });
}

}  // namespace

void add_gpu_command(CLI::App& app, int& exit_code) {
  auto* gpu = app.add_subcommand(
      "gpu", "Run the real kernels on N ranks (one process per rank, under mpirun)");
  add_gpu_subcommands(*gpu, std::make_shared<const gpu::KernelRegistry>(builtin_kernels()),
                      "fusioncheck gpu", exit_code);
  add_repro(*gpu, exit_code);
}

}  // namespace fusioncheck::cli
