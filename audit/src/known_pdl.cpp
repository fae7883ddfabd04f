// The built-in list of PDL-launched kernels (known_pdl.hpp).
#include "fusioncheck/audit/known_pdl.hpp"

#include <array>
#include <regex>
#include <vector>

namespace fusioncheck::audit {
namespace {

// FlashInfer 0.7.4 (and the TensorRT-LLM code it carries): kernels launched through
// cudaLaunchKernelEx with cudaLaunchAttributeProgrammaticStreamSerialization (when the
// caller's launch_with_pdl / enable_pdl flag is on), read from each launch site; the comm
// and RMSNorm families only (audit/README.md).
constexpr std::array<KnownPdlKernel, 7> kKnown{{
    {"fusioncheck", R"(\bfc_[a-z0-9_]*_pdl_)",
     "fusioncheck's own PDL kernels (kernels/README.md, audit convention)"},
    {"FlashInfer",
     R"(\bflashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_(oneshot_lamport|twoshot_sync)\b)",
     "allreduce + residual + RMSNorm fusion, one-shot Lamport and two-shot (comm/trtllm_allreduce_fusion.cuh)"},
    {"FlashInfer",
     R"(\bflashinfer::trtllm_allreduce::(reduce_fusion::(rms_norm_kernel|rms_pre_post_norm_kernel|lamport_style_one_shot_all_reduce_norm_kernel|one_shot_all_reduce_norm_kernel|one_shot_prenorm_all_reduce_norm_kernel)|oneShotAllReduceKernel|twoShotAllReduceKernel)\b)",
     "custom allreduce and its fused (pre/post) RMSNorm kernels, Lamport one-shot included (comm/trtllm_allreduce.cuh)"},
    {"FlashInfer",
     R"(\bflashinfer::trtllm_moe_allreduce_fusion::moe(reduce|finalize)_allreduce_fusion_kernel_oneshot_lamport\b)",
     "MoE reduction / finalize + allreduce + RMSNorm (comm/trtllm_moe_allreduce_fusion.cuh)"},
    {"FlashInfer",
     R"(\bflashinfer::trtllm_mnnvl_allreduce::(oneshotAllreduceFusionKernel|twoshotAllreduceKernel|rmsNormLamport)\b)",
     "MNNVL one-shot / two-shot allreduce + RMSNorm (comm/trtllm_mnnvl_allreduce.cuh)"},
    {"FlashInfer", R"(\bflashinfer::moe_alltoall_lamport::moeA2ALamport(Dispatch|Combine)Kernel\b)",
     "Lamport MoE all-to-all dispatch / combine (comm/moe_alltoall_lamport.cuh)"},
    {"FlashInfer",
     R"(\bflashinfer::norm::(RMSNormKernel|RMSNormQuantKernel|QKRMSNormKernel|FusedAddRMSNorm(Quant|FP8BlockQuant)?Kernel)\b)",
     "RMSNorm kernels of the CUDA path (norm.cuh; FLASHINFER_USE_CUDA_NORM=1 or no CuTe-DSL)"},
}};

const std::vector<std::regex>& compiled() {
  static const std::vector<std::regex> patterns = [] {
    std::vector<std::regex> out;
    for (const auto& known : kKnown)
      out.emplace_back(std::string(known.pattern), std::regex::ECMAScript);
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
