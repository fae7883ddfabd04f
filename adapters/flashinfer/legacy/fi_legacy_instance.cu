// The older Lamport kernel of FlashInfer (flashinfer/comm/trtllm_allreduce.cuh: the one-shot
// lamport_style_one_shot_all_reduce_norm_kernel, up to 16 tokens) behind one C function. The
// only translation unit of its library that includes the header (no include guard,
// non-inline host functions); the library hides everything else. Only the direct launcher is
// instantiated: customAllReduce discards the Lamport launcher's error, and lamportInitialize
// would need spdlog's library (the adapter writes the -0 itself).
#include <cstdio>
#include <exception>

#include "fi_call.hpp"
#include "flashinfer/comm/trtllm_allreduce.cuh"

namespace {

namespace ar = flashinfer::trtllm_allreduce;
using fusioncheck::adapters::fi::LegacyCall;

template <typename T> cudaError_t launch_typed(const LegacyCall& c) {
  ar::AllReduceParams<T> p{};
  p.elts_total = static_cast<std::size_t>(c.tokens) * static_cast<std::size_t>(c.hidden);
  p.ranks_per_node = static_cast<std::size_t>(c.nranks);
  p.local_rank = static_cast<std::size_t>(c.rank);
  p.barrier_flag = c.flag;
  p.local_input_buffer_ptr = c.input;
  p.local_output_buffer_ptr = c.norm_out;
  p.fusion_params.hidden_size = c.hidden;
  p.fusion_params.eps = c.eps;
  p.fusion_params.residual_buffer = c.residual_in;
  p.fusion_params.weight_buffer = c.gamma;
  p.fusion_params.intermediate_buffer = c.residual_out;
  // Index r + 16 b (MAX_RANKS_PER_NODE), not r + N b.
  for (int b = 0; b < 3; ++b)
    for (int r = 0; r < c.nranks; ++r)
      p.fusion_params.lamport_peer_comm_buffer_ptrs[r + b * ar::MAX_RANKS_PER_NODE] =
          c.lamport[b][r];
  namespace rf = ar::reduce_fusion;
  switch (c.nranks) {  // Bias = false (no bias), Affine = true (gamma)
    case 2:
      return rf::lamport_style_one_shot_all_reduce_norm_kernel_launcher<T, 2, false, true>(
          p, c.pdl, c.stream);
    case 4:
      return rf::lamport_style_one_shot_all_reduce_norm_kernel_launcher<T, 4, false, true>(
          p, c.pdl, c.stream);
    case 8:
      return rf::lamport_style_one_shot_all_reduce_norm_kernel_launcher<T, 8, false, true>(
          p, c.pdl, c.stream);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) cudaError_t fc_fi_legacy_launch(
    const LegacyCall& call, char* message, std::size_t message_size) {
  try {
    return call.bf16 ? launch_typed<__nv_bfloat16>(call) : launch_typed<__half>(call);
  } catch (const std::exception& e) {  // FLASHINFER_CHECK throws
    std::snprintf(message, message_size, "%s", e.what());
    return cudaErrorInvalidValue;
  }
}
