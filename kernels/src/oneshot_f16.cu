// One-shot instances, f16, correct protocol, every pattern (EpilogueScope::full): ranks
// 2/4/8/16 x Lamport element (f16 or fp32).
#include "oneshot_kernel.cuh"

namespace fusioncheck::kernels::detail {
using device::oneshot_entry;
using protocol::Mutant;

std::span<const OneShotEntry> oneshot_entries_f16() {
  static const OneShotEntry entries[] = {
      oneshot_entry<2, __half, __half, Mutant::none>(DType::f16),
      oneshot_entry<4, __half, __half, Mutant::none>(DType::f16),
      oneshot_entry<8, __half, __half, Mutant::none>(DType::f16),
      oneshot_entry<16, __half, __half, Mutant::none>(DType::f16),
      oneshot_entry<2, __half, float, Mutant::none>(DType::f16),
      oneshot_entry<4, __half, float, Mutant::none>(DType::f16),
      oneshot_entry<8, __half, float, Mutant::none>(DType::f16),
      oneshot_entry<16, __half, float, Mutant::none>(DType::f16),
  };
  return entries;
}

}  // namespace fusioncheck::kernels::detail
