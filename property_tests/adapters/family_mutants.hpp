#pragma once
// The negative controls of a FlashInfer family as the tests compare them: by id, sorted.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/gpu/kernel_registry.hpp"

namespace fusioncheck::adapters::testing {

// The ids the family registers (KernelFamily::mutants), one per patch file of its folders.
inline std::vector<std::string> registered_ids(const std::string& family) {
  gpu::KernelRegistry registry;
  add_flashinfer_kernels(registry);
  std::vector<std::string> ids;
  if (const gpu::KernelFamily* f = registry.find(family))
    for (const gpu::FamilyMutant& m : f->mutants) ids.push_back(m.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The ids of a build's patched copies, compiled or not: every one must be left out only by
// -DFUSIONCHECK_FLASHINFER_COPIES=OFF on the pinned release (the caller checks `why`).
inline std::vector<std::string> copy_ids(
    const std::vector<gpu::MutantId>& built,
    const std::vector<std::pair<gpu::MutantId, std::string>>& not_built,
    std::vector<std::string>* why_not_built = nullptr) {
  std::vector<std::string> ids;
  for (const gpu::MutantId& m : built) ids.push_back(m.id());
  for (const auto& [m, why] : not_built) {
    ids.push_back(m.id());
    if (why_not_built != nullptr) why_not_built->push_back(why);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace fusioncheck::adapters::testing
