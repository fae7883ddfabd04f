#pragma once
// A rank's own input and the residual generated on its GPU, where the kernel reads them, by
// the per-element definitions the host generators use (reference/generator_elements.hpp):
// the same bits as reference::exact_input / random_with_specials for the same arguments.
// The case runner then generates on the host only the rows it checks against the reference
// and uploads only gamma (at 8 ranks that is about a third of the host's generation), except
// where a kernel's Lamport scan needs every input whole on the host (case_runner.cpp).
// property_tests/mpi/device_inputs_gpu_test.cpp compares the two bit for bit.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "fusioncheck/protocol/vocabulary.hpp"
#include "fusioncheck/reference/generator_elements.hpp"
#include "fusioncheck/reference/moe.hpp"

namespace fusioncheck::gpu {

// Elements [0, elems) of one stream of a call (the rank, or reference::kResidualStream) as
// T bits (f16 or bf16) into out and, when copy is not null, into copy as well; ordered on
// `stream`: reference::exact_input / random_with_specials with tokens x hidden = elems.
// std::invalid_argument for fp32 or ranks < 1 (the caller's error: cases are validated
// before); CudaError when the launch fails.
void generate_on_device(const reference::ExactSpec& spec, int input_stream, protocol::DType dtype,
                        std::size_t elems, std::uint16_t* out, std::uint16_t* copy,
                        cudaStream_t stream);
void generate_on_device(const reference::SpecialsSpec& spec, int input_stream,
                        protocol::DType dtype, std::size_t elems, std::uint16_t* out,
                        std::uint16_t* copy, cudaStream_t stream);

// A MoE call's big inputs on the GPU: one rank's expert rows and token rows, the parts
// reference::make_moe_inputs makes whole on the host (MoeParts::all), and the rank's reduction
// of them (reference::moe_combine), by the same per-element functions (moe_elements.hpp). The
// small parts (scales, routing) come from the host (MoeParts::small_only), uploaded before.
// property_tests/mpi/moe_device_inputs_gpu_test.cpp compares the two bit for bit.
struct MoeOnDevice {
  reference::MoeConfig moe;
  reference::moe_elements::Draws draws;  // reference::moe_draws
  std::uint64_t rows_pre = 0;            // reference::moe_stream_prefix of the expert rows
  std::uint64_t token_rows_pre = 0;      // and of the token rows
  int tokens = 0, hidden = 0;
  int rows = 0;  // finalize: the permuted rows (MoeInputs::rows)
  // Written: the expert rows, the token rows (null where the call has none: a finalize call
  // without a shared expert), the reduction [tokens][hidden].
  std::uint16_t* expert_rows = nullptr;
  std::uint16_t* token_rows = nullptr;
  std::uint16_t* reduction = nullptr;
  // Read: the reduction kernel's scales [E][tokens]; the finalize kernel's routing
  // [tokens][top_k], its scales (null: none) and each permuted row's token
  // (reference::moe_row_tokens).
  const float* reduction_scales = nullptr;
  const std::int32_t* permuted_index = nullptr;
  const std::uint16_t* topk_scales = nullptr;
  const int* row_tokens = nullptr;
};
// Ordered on `stream`. std::invalid_argument for a call whose buffers are missing (the
// caller's error); CudaError when a launch fails.
void generate_moe_on_device(const MoeOnDevice& call, cudaStream_t stream);

}  // namespace fusioncheck::gpu
