#include "fusioncheck/gpu/device_inputs.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/reference/generator_elements.hpp"
#include "fusioncheck/reference/moe_elements.hpp"

namespace fusioncheck::gpu {
namespace {

namespace el = reference::elements;

// One element per thread and grid-stride: generation runs once per call, far off the
// kernels' critical path, so the plainest loop is the right one. Compiled with --fmad=false:
// a MoE product rounded to T and then added must not become a fused multiply-add.
__global__ void exact_kernel(std::uint64_t stream_pre, std::uint64_t common_pre, std::int64_t max_m,
                             bool neg_zeros, protocol::DType dtype, std::size_t elems,
                             std::uint16_t* out, std::uint16_t* copy) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < elems;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint16_t bits =
        el::float_to_bits16(dtype, el::exact_element(stream_pre, common_pre, k, max_m, neg_zeros));
    out[k] = bits;
    if (copy != nullptr) copy[k] = bits;
  }
}

__global__ void random_kernel(reference::SpecialsSpec spec, protocol::DType dtype,
                              std::uint64_t stream_pre, std::size_t elems, std::uint16_t* out,
                              std::uint16_t* copy) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < elems;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint16_t bits =
        el::float_to_bits16(dtype, el::random_element(spec, dtype, stream_pre, k));
    out[k] = bits;
    if (copy != nullptr) copy[k] = bits;
  }
}

constexpr int kThreads = 256;
int blocks_for(std::size_t elems) {
  return static_cast<int>(std::clamp<std::size_t>((elems + kThreads - 1) / kThreads, 1, 4096));
}

// The runner validates cases before it generates: these are the caller's errors.
void require_16_bit(protocol::DType dtype) {
  if (dtype == protocol::DType::f32)
    throw std::invalid_argument(
        "generating inputs on the GPU: fp32 is not one of the GPU suite's element types");
}

__device__ std::size_t first_index() {
  return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
}
__device__ std::size_t grid_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

namespace me = reference::moe_elements;

// Reduction: [E][tokens][hidden], element u drawn for the token element u % (tokens x hidden).
__global__ void expert_rows_kernel(me::Draws d, std::uint64_t pre, std::size_t elems,
                                   std::size_t count, std::uint16_t* out) {
  for (std::size_t u = first_index(); u < count; u += grid_stride())
    out[u] = d.value(pre, u, u % elems);
}

__global__ void permuted_rows_kernel(me::Draws d, std::uint64_t pre, const int* row_tokens,
                                     std::size_t hidden, std::size_t count, std::uint16_t* out) {
  for (std::size_t u = first_index(); u < count; u += grid_stride())
    out[u] = me::permuted_row_element(d, pre, row_tokens, hidden, u);
}

__global__ void token_rows_kernel(me::Draws d, std::uint64_t pre, std::size_t count,
                                  std::uint16_t* out) {
  for (std::size_t u = first_index(); u < count; u += grid_stride()) out[u] = d.value(pre, u, u);
}

__global__ void reduce_kernel(me::ReductionView v, std::uint16_t* out) {
  const std::size_t count = v.tokens * v.hidden;
  for (std::size_t i = first_index(); i < count; i += grid_stride())
    out[i] = me::reduce_element(v, i);
}

__global__ void finalize_kernel(me::FinalizeView v, std::size_t count, std::uint16_t* out) {
  for (std::size_t i = first_index(); i < count; i += grid_stride())
    out[i] = me::finalize_element(v, i);
}

void check_launch(const char* what) { kernels::cuda_check(cudaGetLastError(), what); }

}  // namespace

void generate_on_device(const reference::ExactSpec& spec, int input_stream, protocol::DType dtype,
                        std::size_t elems, std::uint16_t* out, std::uint16_t* copy,
                        cudaStream_t stream) {
  require_16_bit(dtype);
  if (spec.ranks < 1)
    throw std::invalid_argument("generating inputs on the GPU: " + std::to_string(spec.ranks) +
                                " ranks");
  if (elems == 0) return;
  exact_kernel<<<blocks_for(elems), kThreads, 0, stream>>>(
      el::stream_prefix(spec.seed, spec.call_index, input_stream),
      el::stream_prefix(spec.seed, spec.call_index, el::kCommonStream),
      el::exact_max_m(dtype, spec.ranks), el::exact_has_neg_zeros(spec.with_neg_zero, input_stream),
      dtype, elems, out, copy);
  kernels::cuda_check(cudaGetLastError(), "the exact input generator's launch");
}

void generate_on_device(const reference::SpecialsSpec& spec, int input_stream,
                        protocol::DType dtype, std::size_t elems, std::uint16_t* out,
                        std::uint16_t* copy, cudaStream_t stream) {
  require_16_bit(dtype);
  if (elems == 0) return;
  random_kernel<<<blocks_for(elems), kThreads, 0, stream>>>(
      spec, dtype, el::stream_prefix(spec.seed, spec.call_index, input_stream), elems, out, copy);
  kernels::cuda_check(cudaGetLastError(), "the random input generator's launch");
}

void generate_moe_on_device(const MoeOnDevice& c, cudaStream_t stream) {
  reference::validate(c.moe, c.draws.dtype);
  const bool finalize = c.moe.kind == reference::MoeKind::finalize;
  const bool token_rows = !finalize || c.moe.shared_expert;
  if (c.tokens < 1 || c.hidden < 1 || c.expert_rows == nullptr || c.reduction == nullptr ||
      (token_rows && c.token_rows == nullptr) ||
      (finalize ? c.permuted_index == nullptr || c.row_tokens == nullptr || c.rows < 1 ||
                      (c.moe.expert_scales && c.topk_scales == nullptr)
                : c.reduction_scales == nullptr))
    throw std::invalid_argument("generating MoE inputs on the GPU: a buffer or size is missing");
  const auto tokens = static_cast<std::size_t>(c.tokens);
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const std::size_t elems = tokens * hidden;
  if (finalize) {
    const std::size_t count = static_cast<std::size_t>(c.rows) * hidden;
    permuted_rows_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        c.draws, c.rows_pre, c.row_tokens, hidden, count, c.expert_rows);
  } else {
    const std::size_t count = static_cast<std::size_t>(c.moe.experts) * elems;
    expert_rows_kernel<<<blocks_for(count), kThreads, 0, stream>>>(c.draws, c.rows_pre, elems,
                                                                   count, c.expert_rows);
  }
  check_launch("the MoE expert rows' generator");
  if (token_rows) {
    token_rows_kernel<<<blocks_for(elems), kThreads, 0, stream>>>(c.draws, c.token_rows_pre, elems,
                                                                  c.token_rows);
    check_launch("the MoE token rows' generator");
  }
  const protocol::DType dtype = c.draws.dtype;
  if (finalize) {
    const me::FinalizeView v{dtype,
                             c.moe.experts,
                             hidden,
                             c.expert_rows,
                             c.permuted_index,
                             c.moe.expert_scales ? c.topk_scales : nullptr,
                             c.moe.routed_scaling,
                             c.moe.shared_expert ? c.token_rows : nullptr};
    finalize_kernel<<<blocks_for(elems), kThreads, 0, stream>>>(v, elems, c.reduction);
  } else {
    const me::ReductionView v{dtype,         c.moe.experts,      tokens,      hidden,
                              c.expert_rows, c.reduction_scales, c.token_rows};
    reduce_kernel<<<blocks_for(elems), kThreads, 0, stream>>>(v, c.reduction);
  }
  check_launch("the MoE reduction");
}

}  // namespace fusioncheck::gpu
