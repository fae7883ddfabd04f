// The older Lamport kernel's host-side rules (flashinfer.hpp), read from its launcher
// (trtllm_allreduce.cuh, FlashInfer 0.7.4, lamport_style_one_shot_all_reduce_norm_kernel_launcher
// L803-L862); plain C++, built with or without FlashInfer's headers.
#include <algorithm>
#include <string>

#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"

namespace fusioncheck::adapters {
namespace {

namespace k = kernels;

constexpr int kMaxTokens = 16;  // details::kLamportTokenNumThreshold (L45)
constexpr int kMaxClusterSize =
    8;  // min(GetMaxClusterSize(...), 8): the portable limit on H100/H200

}  // namespace

bool flashinfer_legacy_runs_hidden(int hidden) {
  // One 16-byte vector (8 elements) per thread: W = H / 256 warps per token; warp_min = 4 from
  // H >= 4096 (heuristic_min_warp_number; below it 16 or 32, more than W, so the cluster is 1
  // for any rank count); cluster C = min(ceil(W / warp_min), 8) blocks of (W / C) x 32 threads
  // (<= 1024). The grid covers the row exactly only when C divides W.
  if (hidden < 256 || hidden % 256 != 0) return false;
  const int warps = hidden / 256;
  const int warp_min = hidden >= 4096 ? 4 : 16;
  const int cluster = std::min((warps + warp_min - 1) / warp_min, kMaxClusterSize);
  return warps % cluster == 0 && warps / cluster * 32 <= 1024;
}

gpu::KernelTraits flashinfer_legacy_traits() {
  gpu::KernelTraits t;
  t.fp32_lamport = false;
  t.unfused = false;
  t.forced_cluster = false;              // it picks the cluster size itself
  t.twoshot = false;                     // its two-shot kernels use other buffers and barriers
  t.outputs_visible_at_trigger = false;  // no fence before cudaTriggerProgrammaticLaunchCompletion
  t.max_tokens = kMaxTokens;
  for (int h = 256; h <= gpu::CaseLimits::kMaxHidden; h += 256)
    if (flashinfer_legacy_runs_hidden(h)) t.hidden_sizes.push_back(h);
  t.patterns = {k::Pattern::residual_rmsnorm};
  t.fp32_accumulation = false;           // vec_add rounds to T after every add
  t.weight_bias = false;                 // plain gamma
  t.early_trigger = false;               // it triggers at its very end
  t.graph_replay = false;                // the flag is a kernel parameter: a replay reuses it
  t.shape_changes_without_sync = false;  // it clears by the current call's layout
  t.neg_zero_inputs = false;   // remove_neg_zero is never called: a -0 input hangs the peers
  t.rotated_reduction = true;  // rank r sums r, r + 1, ... (Reducer<T, R, true>::allreduce)
  return t;
}

std::string flashinfer_legacy_refusal(const k::FusedParams& p, bool twoshot, int cc_major) {
  if (twoshot)
    return "FlashInfer's older Lamport kernel is one-shot only (its two-shot kernels need other buffers)";
  if (p.dtype != k::DType::bf16 && p.dtype != k::DType::f16)
    return "FlashInfer's older Lamport kernel: inputs are bf16 or f16";
  if (p.fp32_lamport) return "FlashInfer's older Lamport kernel has 16-bit Lamport elements only";
  if (p.ranks != 2 && p.ranks != 4 && p.ranks != 8)
    return "FlashInfer's older Lamport kernel is built here for 2, 4 or 8 ranks, not " +
           std::to_string(p.ranks);
  if (p.pattern != k::Pattern::residual_rmsnorm)
    return "FlashInfer's older Lamport kernel runs residual + RMSNorm only, not pattern " +
           std::string(k::pattern_name(p.pattern));
  if (p.tokens > kMaxTokens)
    return "FlashInfer's older Lamport kernel takes at most 16 tokens (kLamportTokenNumThreshold), not " +
           std::to_string(p.tokens);
  if (!flashinfer_legacy_runs_hidden(p.hidden))
    return "FlashInfer's older Lamport kernel: hidden=" + std::to_string(p.hidden) +
           " is not covered exactly by its grid (hidden must be cluster x block x 8; e.g. 256..3840 in steps "
           "of 256, 4096, 5120, 6144, 7168, 8192, 10240)";
  if (p.fp32_accumulation)
    return "FlashInfer's older Lamport kernel rounds after every add (no fp32 accumulation)";
  if (p.weight_bias != 0.0f)
    return "FlashInfer's older Lamport kernel multiplies by plain gamma (weight_bias 0 only)";
  if (p.trigger != k::Trigger::at_end)
    return "FlashInfer's older Lamport kernel triggers its dependents at its end only";
  if (p.cluster != k::ClusterMode::automatic)
    return "FlashInfer's older Lamport kernel chooses its cluster size itself (no forced cluster path)";
  if (cc_major != 0 && cc_major < 9)
    return "FlashInfer's older Lamport kernel needs sm_90 or newer (its body is compiled only for "
           "__CUDA_ARCH__ >= 900: below, it returns at once)";
  return "";
}

}  // namespace fusioncheck::adapters
