#pragma once
// A patched copy of a FlashInfer header that this build has not compiled, with why: the patch
// does not apply to the tree (never the pinned release, where configuration stops instead), or
// -DFUSIONCHECK_FLASHINFER_COPIES=OFF left it out. The generated tables of the fusion, PCIe and
// MoE headers (fi_instances.hpp, fi_pcie_instances.hpp, fi_moe_instances.hpp) end with an entry
// whose `why` is null.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "fusioncheck/gpu/mutant_id.hpp"

namespace fusioncheck::adapters::fi {

struct NotBuilt {
  const char* mutant;  // the mutant id
  const char* why;
};

// The entries of a generated table, as KernelUnderTest::mutants_not_built lists them.
template <std::size_t N>
std::vector<std::pair<gpu::MutantId, std::string>> listed_not_built(const NotBuilt (&table)[N]) {
  std::vector<std::pair<gpu::MutantId, std::string>> out;
  for (const NotBuilt& n : table)
    if (n.why != nullptr) out.emplace_back(gpu::MutantId(n.mutant), n.why);
  return out;
}

}  // namespace fusioncheck::adapters::fi
