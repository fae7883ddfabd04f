// BENCHMARK ONLY. One-shot instances whose polls have no time bound
// (Instrument::unbounded_polls): bf16, 16-bit Lamport, 2, 4 and 8 ranks, plain epilogue
// (choice.hpp), what gpu bench measures. They exist so that gpu bench can time what the
// bounded polls cost beside the normal kernel, in the same run ("one-shot unbounded polls"
// column).
// A lost push, a dead peer or a protocol bug makes these instances spin for ever: no hang
// record, no end. No checking job (smoke, check, kill-table, the tests) may launch them.
#include <string>

#include "fusioncheck/kernels/launch.hpp"
#include "oneshot_kernel.cuh"

namespace fusioncheck::kernels {

std::span<const detail::OneShotEntry> detail::oneshot_entries_unbounded_polls() {
  using B = __nv_bfloat16;
  using protocol::Mutant;
  constexpr auto kUnbounded = device::Instrument::unbounded_polls;
  constexpr auto kPlain = EpilogueScope::plain;
  static const detail::OneShotEntry entries[] = {
      device::oneshot_entry_with_cluster_free_twin<2, B, B, Mutant::none, kUnbounded, kPlain>(
          DType::bf16),
      device::oneshot_entry_with_cluster_free_twin<4, B, B, Mutant::none, kUnbounded, kPlain>(
          DType::bf16),
      device::oneshot_entry_with_cluster_free_twin<8, B, B, Mutant::none, kUnbounded, kPlain>(
          DType::bf16),
  };
  return entries;
}

bool oneshot_unbounded_polls_compiled(int ranks) {
  for (const auto& e : detail::oneshot_entries_unbounded_polls())
    if (e.ranks == ranks) return true;
  return false;
}

LaunchInfo launch_oneshot_unbounded_polls(const FusedParams& p, Workspace& ws,
                                          cudaStream_t stream) {
  return detail::launch_matching_oneshot(
      detail::oneshot_entries_unbounded_polls(),
      "unbounded-polls instances (benchmark only) exist for bf16, 16-bit Lamport, 2, 4 or 8 ranks, "
      "allreduce or residual + RMSNorm with fp32 accumulation",
      p, ws, stream);
}

}  // namespace fusioncheck::kernels
