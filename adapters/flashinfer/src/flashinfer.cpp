// The adapter's public face (flashinfer.hpp): whether it was built, and the factory.
#include "fusioncheck/adapters/flashinfer.hpp"

#include <algorithm>

#if defined(FUSIONCHECK_HAVE_FLASHINFER)
#include "flashinfer_kernels.hpp"
#include "legacy_kernels.hpp"
#endif

namespace fusioncheck::adapters {

#if defined(FUSIONCHECK_HAVE_FLASHINFER)

bool flashinfer_available() { return true; }
std::string flashinfer_unavailable_reason() { return ""; }
std::string flashinfer_source() { return fi::kSource; }

std::vector<protocol::Mutant> flashinfer_patches() {
  std::vector<protocol::Mutant> out;
  for (const fi::Instance& i : fi::kInstances)
    if (i.mutant != protocol::Mutant::none && std::find(out.begin(), out.end(), i.mutant) == out.end())
      out.push_back(i.mutant);
  return out;
}

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer(kernels::Bootstrap& bootstrap, protocol::Mutant patch) {
  const fi::Instance* bf16 = nullptr;
  const fi::Instance* f16 = nullptr;
  for (const fi::Instance& i : fi::kInstances)
    if (i.mutant == patch) (i.bf16 ? bf16 : f16) = &i;
  if (bf16 == nullptr)
    throw kernels::InvalidLaunch("FlashInfer: no patched copy for mutant " + std::string(protocol::mutant_id(patch)) +
                                 " in this build (adapters/flashinfer/patches)");
  return std::make_unique<fi::FlashInferKernels>(bootstrap, *bf16, f16, patch);
}

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_legacy(kernels::Bootstrap& bootstrap, protocol::Mutant mutant) {
  if (mutant != protocol::Mutant::none)
    throw kernels::InvalidLaunch("FlashInfer's older Lamport kernel has no patched copies (mutant " +
                                 std::string(protocol::mutant_id(mutant)) + ")");
  return std::make_unique<fi::FlashInferLegacyKernels>(bootstrap);
}

#else

bool flashinfer_available() { return false; }
std::string flashinfer_unavailable_reason() { return FUSIONCHECK_FLASHINFER_UNAVAILABLE; }
std::string flashinfer_source() { return ""; }
std::vector<protocol::Mutant> flashinfer_patches() { return {}; }

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer(kernels::Bootstrap&, protocol::Mutant) {
  throw kernels::InvalidLaunch("this build has no FlashInfer adapter: " + flashinfer_unavailable_reason());
}
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_legacy(kernels::Bootstrap& bootstrap, protocol::Mutant mutant) {
  return make_flashinfer(bootstrap, mutant);
}

#endif

gpu::KernelChoice flashinfer_choice() {
  gpu::KernelChoice choice;
  choice.name = "flashinfer";
  choice.make = make_flashinfer;
  choice.share_sms = true;  // its grid is min(SM count, clusters) and every block spins
  return choice;
}

gpu::KernelChoice flashinfer_legacy_choice() {
  gpu::KernelChoice choice;
  choice.name = "flashinfer-legacy";
  choice.make = make_flashinfer_legacy;
  choice.share_sms = true;  // every block of its grid (tokens x cluster) spins
  return choice;
}

}  // namespace fusioncheck::adapters
