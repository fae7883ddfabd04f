// Uses the installed package: computes one fused call with the reference and checks the
// allreduce of exact inputs against a naive sum, and (CUDA builds) registers the example
// kernel's family (a failure exits 1).
#include <cstdio>

#include "fusioncheck/kernels/validate.hpp"
#include "fusioncheck/reference/reference.hpp"

#if defined(CONSUMER_HAS_GPU_SUITE)
#include "adapter.hpp"  // examples/my_kernel
#endif

int main() {
  namespace ref = fusioncheck::reference;
  ref::FusedConfig config;
  config.ranks = 4;
  config.tokens = 3;
  config.hidden = 64;
  const ref::FusedInputs inputs = ref::make_exact_inputs(config, 7, 0);
  const ref::FusedOutputs out = ref::compute_fused(config, inputs);
  const ref::Tensor naive = ref::naive_exact_allreduce(inputs, config.dtype);
  if (ref::first_bit_mismatch(naive, out.allreduce, "allreduce")) {
    std::puts("consumer: allreduce differs from the naive sum");
    return 1;
  }
  bool refused = false;
  try {
    fusioncheck::kernels::FusedParams p;
    p.ranks = 3;  // not a compiled rank count: the installed validation must refuse it
    fusioncheck::kernels::validate_oneshot(p, {});
  } catch (const fusioncheck::kernels::InvalidLaunch&) {
    refused = true;
  }
  if (!refused) {
    std::puts("consumer: validate_oneshot accepted 3 ranks");
    return 1;
  }
#if defined(CONSUMER_HAS_GPU_SUITE)
  // The example's family registers with the installed registry (names are checked there).
  fusioncheck::gpu::KernelRegistry registry;
  registry.add(my_kernel::family());
  if (registry.find("my-kernel") == nullptr || my_kernel::choice().name != "my-kernel") {
    std::puts("consumer: the example kernel's family is not found by its name");
    return 1;
  }
  std::printf("consumer: GPU suite linked (%s)\n", registry.help().c_str());
#endif
  std::puts("consumer: ok");
  return 0;
}
