// One-shot instances, f16, correct protocol, plain epilogue (allreduce or residual + RMSNorm
// with fp32 accumulation, EpilogueScope in choice.hpp): ranks 2/4/8/16 x Lamport element
// (f16 or fp32). The instances of every pattern are in oneshot_f16.cu.
#include "oneshot_kernel.cuh"

namespace fusioncheck::kernels::detail {
using device::Instrument;
using device::oneshot_entry;
using protocol::Mutant;

std::span<const OneShotEntry> oneshot_entries_plain_f16() {
  constexpr auto kPlain = EpilogueScope::plain;
  static const OneShotEntry entries[] = {
      oneshot_entry<2, __half, __half, Mutant::none, Instrument::none, kPlain>(DType::f16),
      oneshot_entry<4, __half, __half, Mutant::none, Instrument::none, kPlain>(DType::f16),
      oneshot_entry<8, __half, __half, Mutant::none, Instrument::none, kPlain>(DType::f16),
      oneshot_entry<16, __half, __half, Mutant::none, Instrument::none, kPlain>(DType::f16),
      oneshot_entry<2, __half, float, Mutant::none, Instrument::none, kPlain>(DType::f16),
      oneshot_entry<4, __half, float, Mutant::none, Instrument::none, kPlain>(DType::f16),
      oneshot_entry<8, __half, float, Mutant::none, Instrument::none, kPlain>(DType::f16),
      oneshot_entry<16, __half, float, Mutant::none, Instrument::none, kPlain>(DType::f16),
  };
  return entries;
}

}  // namespace fusioncheck::kernels::detail
