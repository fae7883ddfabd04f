#pragma once
// FlashInfer's TRT-LLM allreduce fusion (include/flashinfer/comm/trtllm_allreduce_fusion.cuh:
// the one-shot Lamport and the two-shot kernel behind allreduce_fusion_op) as a
// KernelUnderTest, built against FlashInfer's headers (ci/fetch_flashinfer.sh, or
// -DFUSIONCHECK_FLASHINFER_INCLUDE=DIR for another tree). Its negative controls are patched
// copies of the header (adapters/flashinfer/patches), one per catalogue mutant id.
// docs/flashinfer.md has the facts of FlashInfer's layout and behaviour that the adapter
// and the reference follow.
#include <memory>
#include <string>
#include <vector>

#include "fusioncheck/gpu/kernel_under_test.hpp"

namespace fusioncheck::adapters {

// Whether this build has the adapter; if not, why (one line, with what to do).
bool flashinfer_available();
std::string flashinfer_unavailable_reason();
// The FlashInfer version or include tree the adapter was built against.
std::string flashinfer_source();

// The patched copies this build has (mutant ids of the catalogue).
std::vector<protocol::Mutant> flashinfer_patches();

// Throws kernels::InvalidLaunch when the adapter is unavailable or the patch is not built.
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer(kernels::Bootstrap& bootstrap, protocol::Mutant patch);

// The choice for gpu::CheckOptions / SmokeOptions ("flashinfer").
gpu::KernelChoice flashinfer_choice();

}  // namespace fusioncheck::adapters
