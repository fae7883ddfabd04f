// The built-in list of PDL-launched kernels (known_pdl.hpp).
#include "fusioncheck/audit/known_pdl.hpp"

#include <array>
#include <regex>
#include <vector>

namespace fusioncheck::audit {
namespace {

// FlashInfer 0.7.4 (and the TensorRT-LLM code it carries): kernels launched through
// cudaLaunchKernelEx with cudaLaunchAttributeProgrammaticStreamSerialization.
constexpr std::array<KnownPdlKernel, 4> kKnown{{
    {"fusioncheck", R"(\bfc_[a-z0-9_]*_pdl_)", "fusioncheck's own PDL kernels (kernels/README.md, audit convention)"},
    {"FlashInfer", R"(\bflashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_(oneshot_lamport|twoshot_sync)\b)",
     "allreduce + residual + RMSNorm fusion, one-shot Lamport and two-shot (comm/trtllm_allreduce_fusion.cuh)"},
    {"FlashInfer", R"(\bflashinfer::trtllm_allreduce::reduce_fusion::lamport_style_one_shot_all_reduce_norm_kernel\b)",
     "older Lamport allreduce + RMSNorm (comm/trtllm_allreduce.cuh)"},
    {"FlashInfer", R"(\bflashinfer::norm::[A-Za-z]*RMSNorm[A-Za-z]*Kernel\b)", "RMSNorm kernels (norm.cuh)"},
}};

const std::vector<std::regex>& compiled() {
  static const std::vector<std::regex> patterns = [] {
    std::vector<std::regex> out;
    for (const auto& known : kKnown) out.emplace_back(std::string(known.pattern), std::regex::ECMAScript);
    return out;
  }();
  return patterns;
}

}  // namespace

std::span<const KnownPdlKernel> known_pdl_kernels() { return kKnown; }

const KnownPdlKernel* find_known_pdl_kernel(const std::string& demangled_name) {
  const auto& patterns = compiled();
  for (std::size_t i = 0; i < patterns.size(); ++i)
    if (std::regex_search(demangled_name, patterns[i])) return &kKnown[i];
  return nullptr;
}

}  // namespace fusioncheck::audit
