// my_kernel_check: fusioncheck's GPU suite (smoke, check, kill-table, bench) over the example
// kernel, one process per rank under mpirun. The whole command line is the library's
// (fusioncheck::gpu_main); this binary only says which kernels it may drive.
#include "adapter.hpp"
#include "fusioncheck/cli/gpu_main.hpp"

int main(int argc, char** argv) {
  fusioncheck::gpu::KernelRegistry registry;
  // The only family, so the default of --kernel; comparable, for `bench --compare my-kernel`.
  registry.add(my_kernel::family());
  return fusioncheck::cli::run_gpu_main(argc, argv, registry);
}
