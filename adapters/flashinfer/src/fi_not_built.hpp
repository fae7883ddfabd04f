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

#include "fusioncheck/protocol/mutants.hpp"

namespace fusioncheck::adapters::fi {

struct NotBuilt {
  protocol::Mutant mutant;
  const char* why;
};

// The entries of a generated table, as KernelUnderTest::mutants_not_built lists them.
template <std::size_t N>
std::vector<std::pair<protocol::Mutant, std::string>> listed_not_built(const NotBuilt (&table)[N]) {
  std::vector<std::pair<protocol::Mutant, std::string>> out;
  for (const NotBuilt& n : table)
    if (n.why != nullptr) out.emplace_back(n.mutant, n.why);
  return out;
}

}  // namespace fusioncheck::adapters::fi
