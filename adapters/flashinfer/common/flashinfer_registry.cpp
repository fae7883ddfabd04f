// FlashInfer's kernel families in the registry. They are registered in every build, so that
// asking for one that this build lacks says why (and how to build it) instead of "unknown".
#include <algorithm>
#include <regex>
#include <string>

#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/adapters/flashinfer_vllm.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fi_patch_list.hpp"

namespace fusioncheck::adapters {
namespace {

constexpr const char* kReleasePrefix = "flashinfer@";

void require_adapter() {
  if (!flashinfer_available())
    throw gpu::BadInput("this build has no FlashInfer adapter: " + flashinfer_unavailable_reason());
}

// A family's negative controls: one per patch file of its folders (patch_list.cmake).
std::vector<gpu::FamilyMutant> family_mutants(const std::string& family) {
  std::vector<gpu::FamilyMutant> out;
  for (const fi::PatchEntry& e : fi::kPatchEntries)
    if (e.family != nullptr && family == e.family) out.push_back({e.mutant, e.what, e.real_world});
  return out;
}

// A family's patched copies: this build's, and those it did not compile, with why.
void check_family_patch(const gpu::MutantId& mutant, const std::string& family,
                        const std::vector<gpu::MutantId>& patches,
                        const std::vector<std::pair<gpu::MutantId, std::string>>& not_built) {
  if (std::find(patches.begin(), patches.end(), mutant) != patches.end()) return;
  std::string have, absent;
  for (auto m : patches) have += (have.empty() ? "" : ", ") + m.id();
  for (const auto& [m, why] : not_built) {
    if (m == mutant) throw gpu::BadInput(family + "'s patched copy for this mutant: " + why);
    absent += (absent.empty() ? "" : ", ") + m.id();
  }
  throw gpu::BadInput(family + " has no patched copy for this mutant (patched copies: " +
                      (have.empty() ? std::string("none") : have) +
                      (absent.empty() ? "" : "; not built here: " + absent) + ")");
}

// The patched copies are made of the main tree alone.
void check_patch(const gpu::MutantId& mutant) {
  check_family_patch(mutant, "FlashInfer", flashinfer_patches(), flashinfer_patches_not_built());
}

gpu::KernelChoice choose_release(const std::string& value) {
  static const std::regex version(R"([0-9]+(\.[0-9]+)+(\.post[0-9]+)?)");
  const std::string release = value.substr(std::string(kReleasePrefix).size());
  if (!std::regex_match(release, version))
    throw gpu::BadInput("'" + release +
                        "' is not a flashinfer-python release (such as 0.6.11 or 0.2.8.post1)");
  require_adapter();
  try {
    return flashinfer_release_choice(release);
  } catch (const kernels::InvalidLaunch& e) {
    throw gpu::BadInput(e.what());
  }
}

std::string releases_built() {
  std::string built;
  for (const auto& r : flashinfer_releases()) built += (built.empty() ? "" : ", ") + r;
  return built.empty() ? "none in this build" : "this build: " + built;
}

}  // namespace

void add_flashinfer_kernels(gpu::KernelRegistry& registry) {
  const std::string missing = flashinfer_available() ? "" : "; not in this build";
  const std::string fast = flashinfer_fast_math_flags().empty()
                               ? ""
                               : "; variants: nvcc defaults, FlashInfer's JIT flags";
  registry.add(
      {.name = "flashinfer",
       .description = "FlashInfer's allreduce fusion, adapters/flashinfer" + fast + missing,
       .choose = [](const std::string&) { return require_adapter(), flashinfer_choice(); },
       .mutants = family_mutants("flashinfer"),
       .check_mutant = check_patch,
       .comparable = true});
  registry.add(
      {.name = "flashinfer-legacy",
       .description = "FlashInfer's older Lamport kernel, trtllm_allreduce.cuh" + missing,
       .choose = [](const std::string&) { return require_adapter(), flashinfer_legacy_choice(); }});
  registry.add(
      {.name = "flashinfer-pcie",
       .description = "FlashInfer's PCIe allreduce, pcie_ipc_all_reduce.cuh" + missing,
       .choose =
           [](const std::string&) {
             require_adapter();
             if (const std::string why = flashinfer_pcie_unavailable_reason(); !why.empty())
               throw gpu::BadInput(why);
             return flashinfer_pcie_choice();
           },
       .mutants = family_mutants("flashinfer-pcie"),
       .check_mutant =
           [](const gpu::MutantId& mutant) {
             check_family_patch(mutant, "FlashInfer's PCIe allreduce", flashinfer_pcie_patches(),
                                flashinfer_pcie_patches_not_built());
           },
       .comparable = true,  // `gpu bench --pattern allreduce --compare flashinfer-pcie`
       .protocol = "pcie-sentinel"});
  registry.add(
      {.name = "flashinfer-moe",
       .description = "FlashInfer's MoE allreduce fusion, trtllm_moe_allreduce_fusion.cuh; "
                      "variants: reduction, finalize" +
                      missing,
       .choose =
           [](const std::string&) {
             require_adapter();
             if (const std::string why = flashinfer_moe_unavailable_reason(); !why.empty())
               throw gpu::BadInput(why);
             return flashinfer_moe_choice();
           },
       .mutants = family_mutants("flashinfer-moe"),
       .check_mutant =
           [](const gpu::MutantId& mutant) {
             check_family_patch(mutant, "FlashInfer's MoE allreduce fusion",
                                flashinfer_moe_patches(), flashinfer_moe_patches_not_built());
           }});
  registry.add(
      {.name = "flashinfer-vllm",
       .description = "FlashInfer's copy of vLLM's custom allreduce, vllm_custom_all_reduce.cuh; "
                      "variants: allreduce() by size, each kernel with 36 and 5 blocks" +
                      missing,
       .choose =
           [](const std::string&) {
             require_adapter();
             if (const std::string why = flashinfer_vllm_unavailable_reason(); !why.empty())
               throw gpu::BadInput(why);
             return flashinfer_vllm_choice();
           },
       .mutants = family_mutants("flashinfer-vllm"),
       .check_mutant =
           [](const gpu::MutantId& mutant) {
             check_family_patch(mutant, "FlashInfer's copy of vLLM's custom allreduce",
                                flashinfer_vllm_patches(), flashinfer_vllm_patches_not_built());
           },
       .comparable = true,  // `gpu bench --pattern allreduce --compare flashinfer-vllm`
       .protocol = "vllm-counters"});
  registry.add({.name = kReleasePrefix,
                .description = "another flashinfer-python release built beside the main tree, "
                               "-DFUSIONCHECK_FLASHINFER_RELEASES; " +
                               (flashinfer_available() ? releases_built() : "not in this build"),
                .choose = choose_release});
}

}  // namespace fusioncheck::adapters
