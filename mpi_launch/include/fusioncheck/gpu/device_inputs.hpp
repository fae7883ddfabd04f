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

}  // namespace fusioncheck::gpu
