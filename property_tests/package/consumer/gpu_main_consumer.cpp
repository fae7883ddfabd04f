// Links the installed gpu command line (fusioncheck::gpu_main) and runs its cheapest
// subcommand over fusioncheck's own kernels: `kernels` lists them without MPI or a GPU.
#include <cstdio>
#include <string>
#include <vector>

#include "fusioncheck/cli/gpu_main.hpp"

int main() {
  const fusioncheck::gpu::KernelRegistry registry = fusioncheck::cli::builtin_kernels();
  if (registry.find("ours") == nullptr) {
    std::puts("consumer-gpu-main: builtin_kernels() has no ours");
    return 1;
  }
  std::string program = "consumer_gpu_main", command = "kernels";
  std::vector<char*> argv{program.data(), command.data()};
  const int rc =
      fusioncheck::cli::run_gpu_main(static_cast<int>(argv.size()), argv.data(), registry);
  std::printf("consumer-gpu-main: %s\n", rc == 0 ? "ok" : "kernels failed");
  return rc;
}
