// One instance of the one-shot kernel for the SASS audit (kernels/audit): bf16, 2 ranks,
// the plain epilogue that residual + RMSNorm calls run (choice.hpp), with the cluster path
// (the larger of the two builds, ClusterCode in oneshot_kernel.cuh), launched with PDL
// (programmatic stream serialisation), mutant chosen by -DFC_AUDIT_MUTANT=<enumerator of
// protocol::Mutant>. The kernel's name contains "pdl" (fc_oneshot_pdl_kernel): every kernel
// named *_pdl_* is launched with PDL.
#include "oneshot_kernel.cuh"

#ifndef FC_AUDIT_MUTANT
#define FC_AUDIT_MUTANT none
#endif

namespace fusioncheck::kernels::device {
template __global__ void
fc_oneshot_pdl_kernel<2, __nv_bfloat16, __nv_bfloat16, Mutant::FC_AUDIT_MUTANT, Instrument::none,
                      EpilogueScope::plain, ClusterCode::compiled>(const OneShotArgs);
}  // namespace fusioncheck::kernels::device

// Keeps the instance and its PDL launcher referenced from an exported symbol.
extern "C" __attribute__((visibility("default"))) void* fc_audit_oneshot_launcher() {
  using namespace fusioncheck::kernels::device;
  return reinterpret_cast<void*>(
      &launch_oneshot_instance<2, __nv_bfloat16, __nv_bfloat16, Mutant::FC_AUDIT_MUTANT,
                               Instrument::none, fusioncheck::kernels::EpilogueScope::plain,
                               ClusterCode::compiled>);
}
