// A MoE call's expert rows, token rows and reduction generated on the GPU (device_inputs.hpp).
// Compiled with --fmad=false: a product rounded to T and then added must not become an FMA.
#include <stdexcept>

#include "fusioncheck/gpu/device_inputs.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/reference/moe_elements.hpp"

namespace fusioncheck::gpu {
namespace {

namespace me = reference::moe_elements;

// One element per thread and grid-stride, as device_inputs.cu's generators.
constexpr int kMoeThreads = 256;
int moe_blocks_for(std::size_t elems) {
  const std::size_t blocks = (elems + kMoeThreads - 1) / kMoeThreads;
  return static_cast<int>(blocks < 1 ? 1 : blocks > 4096 ? 4096 : blocks);
}
__device__ std::size_t moe_first_index() {
  return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
}
__device__ std::size_t moe_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

// Reduction: [E][tokens][hidden], element u drawn for the token element u % (tokens x hidden).
__global__ void expert_rows_kernel(me::Draws d, std::uint64_t pre, std::size_t elems,
                                   std::size_t count, std::uint16_t* out) {
  for (std::size_t u = moe_first_index(); u < count; u += moe_stride())
    out[u] = d.value(pre, u, u % elems);
}

__global__ void permuted_rows_kernel(me::Draws d, std::uint64_t pre, const int* row_tokens,
                                     std::size_t hidden, std::size_t count, std::uint16_t* out) {
  for (std::size_t u = moe_first_index(); u < count; u += moe_stride())
    out[u] = me::permuted_row_element(d, pre, row_tokens, hidden, u);
}

__global__ void token_rows_kernel(me::Draws d, std::uint64_t pre, std::size_t count,
                                  std::uint16_t* out) {
  for (std::size_t u = moe_first_index(); u < count; u += moe_stride()) out[u] = d.value(pre, u, u);
}

__global__ void reduce_kernel(me::ReductionView v, std::uint16_t* out) {
  const std::size_t count = v.tokens * v.hidden;
  for (std::size_t i = moe_first_index(); i < count; i += moe_stride())
    out[i] = me::reduce_element(v, i);
}

__global__ void finalize_kernel(me::FinalizeView v, std::size_t count, std::uint16_t* out) {
  for (std::size_t i = moe_first_index(); i < count; i += moe_stride())
    out[i] = me::finalize_element(v, i);
}

void check_moe_launch(const char* what) { kernels::cuda_check(cudaGetLastError(), what); }

}  // namespace

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
    permuted_rows_kernel<<<moe_blocks_for(count), kMoeThreads, 0, stream>>>(
        c.draws, c.rows_pre, c.row_tokens, hidden, count, c.expert_rows);
  } else {
    const std::size_t count = static_cast<std::size_t>(c.moe.experts) * elems;
    expert_rows_kernel<<<moe_blocks_for(count), kMoeThreads, 0, stream>>>(
        c.draws, c.rows_pre, elems, count, c.expert_rows);
  }
  check_moe_launch("the MoE expert rows' generator");
  if (token_rows) {
    token_rows_kernel<<<moe_blocks_for(elems), kMoeThreads, 0, stream>>>(c.draws, c.token_rows_pre,
                                                                         elems, c.token_rows);
    check_moe_launch("the MoE token rows' generator");
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
    finalize_kernel<<<moe_blocks_for(elems), kMoeThreads, 0, stream>>>(v, elems, c.reduction);
  } else {
    const me::ReductionView v{dtype,         c.moe.experts,      tokens,      hidden,
                              c.expert_rows, c.reduction_scales, c.token_rows};
    reduce_kernel<<<moe_blocks_for(elems), kMoeThreads, 0, stream>>>(v, c.reduction);
  }
  check_moe_launch("the MoE reduction");
}

}  // namespace fusioncheck::gpu
