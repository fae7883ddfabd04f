// One-shot mutant instances (negative controls): bf16, 2 ranks, bf16 Lamport buffer, except
// sentinel-width, which needs an fp32 Lamport buffer to be wrong at all.
#include "oneshot_kernel.cuh"

namespace fusioncheck::kernels::detail {
using device::oneshot_entry;
using protocol::Mutant;
using B = __nv_bfloat16;

std::span<const OneShotEntry> oneshot_entries_mutants() {
  static const OneShotEntry entries[] = {
      oneshot_entry<2, B, B, Mutant::pdl_wait_missing>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::early_trigger>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::float_sentinel>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::no_canonicalize>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::wrong_clear_buffer>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::clear_size_current>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::counter_not_reset>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::flag_before_arrival>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::two_buffers>(DType::bf16),
      oneshot_entry<2, B, float, Mutant::sentinel_width>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::pointer_stride>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::empty_body>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::torn_element>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::no_pdl_wait>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::inputs_before_wait>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::cluster_one_buffer>(DType::bf16),
      oneshot_entry<2, B, B, Mutant::reduce_scratch_unguarded>(DType::bf16),
  };
  return entries;
}

}  // namespace fusioncheck::kernels::detail
