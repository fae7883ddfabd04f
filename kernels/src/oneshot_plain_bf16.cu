// One-shot instances, bf16, correct protocol, plain epilogue (allreduce or residual + RMSNorm
// with fp32 accumulation, EpilogueScope in choice.hpp): ranks 2/4/8/16 x Lamport element
// (bf16 or fp32). The instances of every pattern are in oneshot_bf16.cu.
#include "oneshot_kernel.cuh"

namespace fusioncheck::kernels::detail {
using device::Instrument;
using device::oneshot_entry;
using protocol::Mutant;

std::span<const OneShotEntry> oneshot_entries_plain_bf16() {
  constexpr auto kPlain = EpilogueScope::plain;
  static const OneShotEntry entries[] = {
      oneshot_entry<2, __nv_bfloat16, __nv_bfloat16, Mutant::none, Instrument::none, kPlain>(DType::bf16),
      oneshot_entry<4, __nv_bfloat16, __nv_bfloat16, Mutant::none, Instrument::none, kPlain>(DType::bf16),
      oneshot_entry<8, __nv_bfloat16, __nv_bfloat16, Mutant::none, Instrument::none, kPlain>(DType::bf16),
      oneshot_entry<16, __nv_bfloat16, __nv_bfloat16, Mutant::none, Instrument::none, kPlain>(DType::bf16),
      oneshot_entry<2, __nv_bfloat16, float, Mutant::none, Instrument::none, kPlain>(DType::bf16),
      oneshot_entry<4, __nv_bfloat16, float, Mutant::none, Instrument::none, kPlain>(DType::bf16),
      oneshot_entry<8, __nv_bfloat16, float, Mutant::none, Instrument::none, kPlain>(DType::bf16),
      oneshot_entry<16, __nv_bfloat16, float, Mutant::none, Instrument::none, kPlain>(DType::bf16),
  };
  return entries;
}

}  // namespace fusioncheck::kernels::detail
