#pragma once
// Kernels that their projects launch with programmatic dependent launch (PDL), by name: the
// audit treats them as PDL-launched without being told (AuditOptions::known_pdl), so that a
// missing grid-dependency wait is found even in a binary built for one architecture only,
// where no other architecture's code shows the wait. The list, with where each launch sets
// the PDL attribute, is in audit/README.md ("Known PDL-launched kernels").
#include <span>
#include <string>
#include <string_view>

namespace fusioncheck::audit {

struct KnownPdlKernel {
  std::string_view project;  // whose kernels
  std::string_view pattern;  // ECMAScript regex, searched in the demangled name
  std::string_view what;     // which kernels, in words
};

std::span<const KnownPdlKernel> known_pdl_kernels();
// The first entry whose pattern matches the demangled name, or nullptr.
const KnownPdlKernel* find_known_pdl_kernel(const std::string& demangled_name);

}  // namespace fusioncheck::audit
