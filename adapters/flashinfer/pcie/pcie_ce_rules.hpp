#pragma once
// The copy-engine ring's share of the PCIe family's host-side rules (pcie_ce_rules.cpp), used
// by pcie_rules.cpp: its launch variants and its invariants C1-C2.
#include <string>
#include <vector>

#include "fusioncheck/adapters/flashinfer.hpp"

namespace fusioncheck::adapters {

// Appends the flat ring's variants (flag kernels with two and four pieces asked for, stream
// memory operations) to the SM kernels' of a rank count.
void append_copy_engine_variants(int ranks, std::vector<PcieVariant>& out);
// C1-C2 over the copy-engine area of `s` (nothing where the tree has no copy-engine ring).
void check_copy_engine(const PcieStateAfterCalls& s, std::vector<std::string>& out);

}  // namespace fusioncheck::adapters
