// One-shot instances, bf16, correct protocol, every pattern (EpilogueScope::full): ranks
// 2/4/8/16 x Lamport element (bf16 or fp32).
#include "oneshot_kernel.cuh"

namespace fusioncheck::kernels::detail {
using device::oneshot_entry;
using protocol::Mutant;

std::span<const OneShotEntry> oneshot_entries_bf16() {
  static const OneShotEntry entries[] = {
      oneshot_entry<2, __nv_bfloat16, __nv_bfloat16, Mutant::none>(DType::bf16),
      oneshot_entry<4, __nv_bfloat16, __nv_bfloat16, Mutant::none>(DType::bf16),
      oneshot_entry<8, __nv_bfloat16, __nv_bfloat16, Mutant::none>(DType::bf16),
      oneshot_entry<16, __nv_bfloat16, __nv_bfloat16, Mutant::none>(DType::bf16),
      oneshot_entry<2, __nv_bfloat16, float, Mutant::none>(DType::bf16),
      oneshot_entry<4, __nv_bfloat16, float, Mutant::none>(DType::bf16),
      oneshot_entry<8, __nv_bfloat16, float, Mutant::none>(DType::bf16),
      oneshot_entry<16, __nv_bfloat16, float, Mutant::none>(DType::bf16),
  };
  return entries;
}

}  // namespace fusioncheck::kernels::detail
