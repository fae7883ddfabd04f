// One-shot instances, f16, correct protocol, plain epilogue (allreduce or residual + RMSNorm
// with fp32 accumulation, EpilogueScope in choice.hpp): ranks 2/4/8/16 x Lamport element
// (f16 or fp32). Those with a f16 Lamport element, which the default calls run, also come
// built without the cluster path (ClusterCode in oneshot_kernel.cuh). The instances of every
// pattern are in oneshot_f16.cu.
#include "oneshot_kernel.cuh"

namespace fusioncheck::kernels::detail {
using device::oneshot_entry;
using device::oneshot_entry_with_cluster_free_twin;
using protocol::Mutant;

std::span<const OneShotEntry> oneshot_entries_plain_f16() {
  using T = __half;
  constexpr auto kNone = device::Instrument::none;
  constexpr auto kPlain = EpilogueScope::plain;
  static const OneShotEntry entries[] = {
      oneshot_entry_with_cluster_free_twin<2, T, T, Mutant::none, kNone, kPlain>(DType::f16),
      oneshot_entry_with_cluster_free_twin<4, T, T, Mutant::none, kNone, kPlain>(DType::f16),
      oneshot_entry_with_cluster_free_twin<8, T, T, Mutant::none, kNone, kPlain>(DType::f16),
      oneshot_entry_with_cluster_free_twin<16, T, T, Mutant::none, kNone, kPlain>(DType::f16),
      oneshot_entry<2, T, float, Mutant::none, kNone, kPlain>(DType::f16),
      oneshot_entry<4, T, float, Mutant::none, kNone, kPlain>(DType::f16),
      oneshot_entry<8, T, float, Mutant::none, kNone, kPlain>(DType::f16),
      oneshot_entry<16, T, float, Mutant::none, kNone, kPlain>(DType::f16),
  };
  return entries;
}

}  // namespace fusioncheck::kernels::detail
