// run_gpu_main: the `gpu` command line as another project's whole binary, over its registry;
// and fusioncheck's own families. Errors end as fusioncheck's do: one line on stderr and the
// exit codes of command.hpp.
#include "fusioncheck/cli/gpu_main.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>

#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/adapters/sglang_push.hpp"
#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/options.hpp"
#include "fusioncheck/protocol/mutants.hpp"
#include "fusioncheck/cli/error_line.hpp"
#include "gpu_cli.hpp"

namespace fusioncheck::cli {
namespace {

std::string program_name(int argc, char** argv) {
  if (argc < 1 || argv[0] == nullptr || argv[0][0] == '\0') return "gpu";
  const std::string path = argv[0];
  return path.substr(path.find_last_of('/') + 1);
}

int run_gpu_main_unchecked(int argc, char** argv, const gpu::KernelRegistry& registry,
                           const std::string& program) {
  const auto bad_input = [&program](const std::string& message) {
    return report_bad_input(program, message);
  };
  CLI::App app{
      "Runs kernels under test on N ranks (one process per rank, under mpirun): " + registry.help(),
      program};
  app.formatter(std::make_shared<SwitchFormatter>());
  app.option_defaults()->always_capture_default();  // every option shows its default in --help
  int exit_code = kExitClean;
  add_gpu_subcommands(app, std::make_shared<const gpu::KernelRegistry>(registry), program,
                      exit_code);
  app.footer(
      "Exit codes: 0 clean, 1 findings, 2 bad input (one line on stderr), 3 internal error.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return bad_input(std::string(e.what()) + " (see " + program + " --help)");
  } catch (const UsageError& e) {
    return bad_input(e.what());
  } catch (const gpu::BadInput& e) {
    return bad_input(e.what());
  } catch (const std::system_error& e) {
    // fmt::print throws when a write to stdout fails.
    if (std::ferror(stdout)) return report_stdout_error(program, e.code().value());
    std::cerr << program << ": internal error: " << one_line_message(e.what(), program) << "\n";
    return kExitInternalError;
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error: " << one_line_message(e.what(), program) << "\n";
    return kExitInternalError;
  }
  return exit_code;
}

}  // namespace

int run_gpu_main(int argc, char** argv, const gpu::KernelRegistry& registry) {
  const std::string program = program_name(argc, argv);
  return finish_stdout(program, run_gpu_main_unchecked(argc, argv, registry, program));
}

gpu::KernelRegistry builtin_kernels() {
  gpu::KernelRegistry registry;
  registry.add({.name = "ours",
                .description = "fusioncheck's kernels",
                .choose =
                    [](const std::string&) {
                      gpu::KernelChoice ours;
                      // One launch variant, every pattern (OurKernels keeps the default traits).
                      ours.host_traits = [](int) { return gpu::our_traits(); };
                      return ours;
                    },
                // The catalogue's kernel mutants; which of them this build compiled is
                // checked on the GPU.
                .mutants = gpu::our_mutants()});
  adapters::add_flashinfer_kernels(registry);
  adapters::add_sglang_kernels(registry);
  return registry;
}

}  // namespace fusioncheck::cli
