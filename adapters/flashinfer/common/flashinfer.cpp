// The adapter's public face (flashinfer.hpp): whether it was built, and the factory.
#include "fusioncheck/adapters/flashinfer.hpp"

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"

#include <algorithm>

#if defined(FUSIONCHECK_HAVE_FLASHINFER)
#include "fi_tree.hpp"
#include "flashinfer_kernels.hpp"
#include "moe_kernels.hpp"
#if defined(FUSIONCHECK_HAVE_FLASHINFER_LEGACY)
#include "legacy_kernels.hpp"
#endif
#endif

namespace fusioncheck::adapters {

std::string flashinfer_mutant_may_survive(const gpu::MutantId& m,
                                          const gpu::GpuPlacement& placement) {
  if (placement.compute_capability >= 100) return "";
  if (m == gpu::MutantId("revert-0.6.4-fp4-cluster-coverage"))
    return "NVFP4 runs only on sm_100 and newer (FlashInfer's conversion is compiled out on sm_" +
           std::to_string(placement.compute_capability) +
           "); the launch configuration it changes is FP4-only";
  if (m == gpu::MutantId("revert-0.6.17-cluster-clamp"))
    return "the same launch on sm_" + std::to_string(placement.compute_capability) +
           ": it launches clusters of 8 blocks, so the clamp changes nothing; needs a GPU whose "
           "largest cluster for the kernel is smaller";
  if (m == gpu::MutantId("revert-0.6.15-partial-warp-reduce"))
    return "on sm_90 the full-warp shuffles in a partial last warp leave the sum as the fix "
           "computes it (5 seeds x 200 cases, most of them with partial warps, "
           "docs/flashinfer_history.md): undefined behaviour that this GPU resolves benignly";
  return "";
}

#if defined(FUSIONCHECK_HAVE_FLASHINFER)

bool flashinfer_available() { return true; }
std::string flashinfer_unavailable_reason() { return ""; }
std::string flashinfer_source() { return fi::kSource; }
std::string flashinfer_include_dir() { return fi::kIncludeDir; }
std::string flashinfer_header_sha256(const std::string& header) {
  for (const fi::HeaderSum& h : fi::kHeaderSums)
    if (h.header != nullptr && header == h.header) return h.sha256;
  return "";
}
std::string flashinfer_fast_math_flags() { return fi::kJitFlags; }
std::string flashinfer_fast_math_refused() { return fi::kFastMathRefused; }

std::vector<gpu::MutantId> flashinfer_patches() {
  std::vector<gpu::MutantId> out;
  for (const fi::Instance& i : fi::kInstances)
    if (!gpu::MutantId(i.mutant).none() &&
        std::find(out.begin(), out.end(), gpu::MutantId(i.mutant)) == out.end())
      out.emplace_back(i.mutant);
  return out;
}

std::vector<gpu::MutantId> flashinfer_fast_math_patches() {
  std::vector<gpu::MutantId> out;
  for (const fi::Instance& i : fi::kInstances)
    if (!gpu::MutantId(i.mutant).none() && i.fast_math) out.emplace_back(i.mutant);
  return out;
}

std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_patches_not_built() {
  return fi::listed_not_built(fi::kPatchesNotBuilt);
}

std::vector<std::string> flashinfer_releases() {
  std::vector<std::string> out;
  for (const fi::Instance& i : fi::kInstances)
    if (i.release[0] != '\0' && std::find(out.begin(), out.end(), i.release) == out.end())
      out.emplace_back(i.release);
  return out;
}

std::vector<std::pair<std::string, std::string>> flashinfer_releases_refused() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const fi::ReleaseRefused& r : fi::kReleasesRefused)
    if (r.release != nullptr) out.emplace_back(r.release, r.why);
  return out;
}

namespace {

// The instances of one tree ("" the main tree, else a release) and one patch.
std::unique_ptr<gpu::KernelUnderTest> make_instance(kernels::Bootstrap& bootstrap,
                                                    const gpu::MutantId& patch,
                                                    const std::string& release) {
  const fi::Instance* bf16 = nullptr;
  const fi::Instance* f16 = nullptr;
  const fi::Instance* fast_bf16 = nullptr;  // FlashInfer's JIT build of the same tree
  const fi::Instance* fast_f16 = nullptr;
  for (const fi::Instance& i : fi::kInstances) {
    if (gpu::MutantId(i.mutant) != patch || release != i.release) continue;
    if (i.fast_math) (i.bf16 ? fast_bf16 : fast_f16) = &i;
    else (i.bf16 ? bf16 : f16) = &i;
  }
  if (bf16 == nullptr && !release.empty())
    throw kernels::InvalidLaunch("FlashInfer " + release + ": this build has no instance of it (" +
                                 (patch.none() ? std::string("releases are not patched")
                                               : "patched copies are of the main tree only") +
                                 ")");
  if (bf16 == nullptr)
    throw kernels::InvalidLaunch("FlashInfer: no patched copy for mutant " + patch.id() +
                                 " in this build (adapters/flashinfer/fusion/patches)");
  return std::make_unique<fi::FlashInferKernels>(bootstrap, *bf16, f16, patch, fast_bf16, fast_f16);
}

}  // namespace

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer(kernels::Bootstrap& bootstrap,
                                                      const gpu::MutantId& patch) {
  return make_instance(bootstrap, patch, "");
}

gpu::KernelChoice flashinfer_release_choice(const std::string& release) {
  const auto have = flashinfer_releases();
  if (std::find(have.begin(), have.end(), release) == have.end()) {
    for (const auto& [refused, reason] : flashinfer_releases_refused())
      if (refused == release)
        throw kernels::InvalidLaunch("FlashInfer " + release + " cannot be driven: " + reason);
    std::string built;
    for (const auto& r : have) built += (built.empty() ? "" : ", ") + r;
    throw kernels::InvalidLaunch(
        "this build has no FlashInfer " + release + " (built beside the main tree: " +
        (built.empty() ? "none" : built) + "); fetch it with ci/fetch_flashinfer.sh " + release +
        " and configure with -DFUSIONCHECK_FLASHINFER_RELEASES=" + release);
  }
  gpu::KernelChoice choice;
  choice.name = "flashinfer@" + release;
  choice.release = release;
  choice.make = [release](kernels::Bootstrap& bootstrap, const gpu::MutantId& patch) {
    return make_instance(bootstrap, patch, release);
  };
  choice.share_sms = true;  // as the main tree's
  return choice;
}

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_legacy(kernels::Bootstrap& bootstrap,
                                                             const gpu::MutantId& mutant) {
  if (!mutant.none())
    throw kernels::InvalidLaunch(
        "FlashInfer's older Lamport kernel has no patched copies (mutant " + mutant.id() + ")");
#if defined(FUSIONCHECK_HAVE_FLASHINFER_LEGACY)
  return std::make_unique<fi::FlashInferLegacyKernels>(bootstrap);
#else
  (void)bootstrap;
  throw kernels::InvalidLaunch(
      "this FlashInfer tree has no flashinfer/comm/trtllm_allreduce.cuh (no flashinfer-legacy)");
#endif
}

namespace {

// What the main tree's fusion and MoE instances run (their traits, without a GPU).
gpu::KernelTraits main_fusion_traits() {
  for (const fi::Instance& i : fi::kInstances)
    if (gpu::MutantId(i.mutant).none() && i.release[0] == '\0' && i.bf16 && !i.fast_math)
      return fi::fusion_traits(i, !flashinfer_fast_math_flags().empty());
  return {};
}
gpu::KernelTraits moe_traits() { return fi::flashinfer_moe_traits(); }

}  // namespace

#else

bool flashinfer_available() { return false; }
std::string flashinfer_unavailable_reason() { return FUSIONCHECK_FLASHINFER_UNAVAILABLE; }
std::string flashinfer_source() { return ""; }
std::string flashinfer_fast_math_flags() { return ""; }
std::string flashinfer_fast_math_refused() { return flashinfer_unavailable_reason(); }
std::vector<gpu::MutantId> flashinfer_patches() { return {}; }
std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_patches_not_built() { return {}; }
std::vector<gpu::MutantId> flashinfer_fast_math_patches() { return {}; }
std::vector<std::string> flashinfer_releases() { return {}; }
std::vector<std::pair<std::string, std::string>> flashinfer_releases_refused() { return {}; }
gpu::KernelChoice flashinfer_release_choice(const std::string&) {
  throw kernels::InvalidLaunch("this build has no FlashInfer adapter: " +
                               flashinfer_unavailable_reason());
}

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer(kernels::Bootstrap&, const gpu::MutantId&) {
  throw kernels::InvalidLaunch("this build has no FlashInfer adapter: " +
                               flashinfer_unavailable_reason());
}
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_legacy(kernels::Bootstrap& bootstrap,
                                                             const gpu::MutantId& mutant) {
  return make_flashinfer(bootstrap, mutant);
}
std::string flashinfer_pcie_unavailable_reason() {
  return "this build has no FlashInfer adapter: " + flashinfer_unavailable_reason();
}
std::vector<gpu::MutantId> flashinfer_pcie_patches() { return {}; }
std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_pcie_patches_not_built() {
  return {};
}
std::string flashinfer_moe_unavailable_reason() { return flashinfer_pcie_unavailable_reason(); }
std::vector<gpu::MutantId> flashinfer_moe_patches() { return {}; }
std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_moe_patches_not_built() { return {}; }
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_moe(kernels::Bootstrap& bootstrap,
                                                          const gpu::MutantId& mutant) {
  return make_flashinfer(bootstrap, mutant);
}
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_pcie(kernels::Bootstrap& bootstrap,
                                                           const gpu::MutantId& mutant) {
  return make_flashinfer(bootstrap, mutant);
}
std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_pcie_poll_profiled(
    kernels::Bootstrap& bootstrap) {
  return make_flashinfer(bootstrap, gpu::MutantId());
}
ReproExport export_flashinfer_repro(const ReproRequest&) {
  throw gpu::BadInput("this build has no FlashInfer adapter: " + flashinfer_unavailable_reason());
}
std::string flashinfer_include_dir() { return ""; }
std::string flashinfer_header_sha256(const std::string&) { return ""; }

namespace {
gpu::KernelTraits main_fusion_traits() { return {}; }  // never asked: no choice is made
gpu::KernelTraits moe_traits() { return {}; }
}  // namespace

#endif

namespace {

// gpu check's reproducer beside a new finding's replay (export_flashinfer_repro).
std::string export_beside(const std::string& replay_file, const std::string& out_dir) {
  ReproRequest request;
  request.replay_path = replay_file;
  request.out_dir = out_dir;
  const ReproExport done = export_flashinfer_repro(request);
  return out_dir + " (" + std::to_string(done.files.size()) +
         " files; cmake -DFLASHINFER_INCLUDE=... && build && run: exit 3 reproduced)";
}

}  // namespace

std::string flashinfer_main_release() {
  const std::string prefix = "flashinfer-python ";
  const std::string source = flashinfer_source();
  return source.rfind(prefix, 0) == 0 ? source.substr(prefix.size()) : "";
}

gpu::KernelChoice flashinfer_choice() {
  gpu::KernelChoice choice;
  choice.name = "flashinfer";
  choice.export_reproducer = export_beside;
  choice.host_traits = [](int) { return main_fusion_traits(); };
  choice.release = flashinfer_main_release();
  choice.make = make_flashinfer;
  choice.share_sms = true;  // its grid is min(SM count, clusters) and every block spins
  return choice;
}

gpu::KernelChoice flashinfer_pcie_choice() {
  gpu::KernelChoice choice;
  choice.name = "flashinfer-pcie";
  choice.host_traits = [](int ranks) { return flashinfer_pcie_traits(ranks); };
  choice.release = flashinfer_main_release();
  choice.make = make_flashinfer_pcie;
  choice.rank_counts = {2, 4, 8};  // its header's kernels: a 16-rank job is refused before any work
  choice.share_sms =
      true;  // its grids do not shrink for ranks sharing a GPU, and every block spins
  choice.mutant_ranks = {2, 4, 8};  // a patched copy is a whole library: every rank count
  choice.make_poll_profiled = make_flashinfer_pcie_poll_profiled;
  choice.poll_profiled_source = "flashinfer/comm/pcie_ipc_all_reduce.cuh of " + flashinfer_source();
  return choice;
}

gpu::KernelChoice flashinfer_moe_choice() {
  gpu::KernelChoice choice;
  choice.name = "flashinfer-moe";
  choice.export_reproducer = export_beside;
  choice.host_traits = [](int) { return moe_traits(); };
  choice.release = flashinfer_main_release();
  choice.make = make_flashinfer_moe;
  choice.share_sms = true;  // its grid is min(SM count, clusters) and every block spins
  // A patched copy is FlashInfer's whole entry point, which dispatches every rank count.
  choice.mutant_ranks = {2, 4, 8};
  return choice;
}

gpu::KernelChoice flashinfer_legacy_choice() {
  gpu::KernelChoice choice;
  choice.name = "flashinfer-legacy";
  choice.export_reproducer = export_beside;
  choice.host_traits = [](int) { return flashinfer_legacy_traits(); };
  choice.release = flashinfer_main_release();
  choice.make = make_flashinfer_legacy;
  choice.share_sms = true;  // every block of its grid (tokens x cluster) spins
  return choice;
}

}  // namespace fusioncheck::adapters
