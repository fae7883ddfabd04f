// The wait-profile instances of the one-shot kernel (Instrument::wait_profile): bf16, 2 and 4
// ranks, the plain epilogue that the normal residual + RMSNorm calls run (choice.hpp).
#include <string>

#include "fusioncheck/kernels/launch.hpp"
#include "oneshot_kernel.cuh"

namespace fusioncheck::kernels {

std::span<const detail::OneShotEntry> detail::oneshot_entries_wait_profile() {
  using B = __nv_bfloat16;
  using protocol::Mutant;
  constexpr auto kProfile = device::Instrument::wait_profile;
  constexpr auto kPlain = EpilogueScope::plain;
  static const detail::OneShotEntry entries[] = {
      device::oneshot_entry_with_cluster_free_twin<2, B, B, Mutant::none, kProfile, kPlain>(
          DType::bf16),
      device::oneshot_entry_with_cluster_free_twin<4, B, B, Mutant::none, kProfile, kPlain>(
          DType::bf16),
  };
  return entries;
}

LaunchInfo launch_oneshot_wait_profile(const FusedParams& p, Workspace& ws, cudaStream_t stream) {
  return detail::launch_matching_oneshot(
      detail::oneshot_entries_wait_profile(),
      "wait profile instances exist for bf16, 16-bit Lamport, 2 or 4 ranks, allreduce or "
      "residual + RMSNorm with fp32 accumulation",
      p, ws, stream);
}

}  // namespace fusioncheck::kernels
