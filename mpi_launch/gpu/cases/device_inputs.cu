#include "fusioncheck/gpu/device_inputs.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/reference/generator_elements.hpp"

namespace fusioncheck::gpu {
namespace {

namespace el = reference::elements;

// One element per thread and grid-stride: generation runs once per call, far off the
// kernels' critical path, so the plainest loop is the right one.
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

}  // namespace fusioncheck::gpu
