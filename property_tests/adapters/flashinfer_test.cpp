// The FlashInfer adapters' host side, without a GPU: what this build has, what they refuse,
// and the cases the suite draws for FlashInfer's older Lamport kernel.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "fusioncheck/reference/generators.hpp"
#include "family_mutants.hpp"

namespace {

namespace fa = fusioncheck::adapters;
using fusioncheck::protocol::Mutant;
using fusioncheck::adapters::testing::copy_ids;
using fusioncheck::adapters::testing::registered_ids;
using Ids = std::vector<std::string>;

// Every reason a copy was not built is the configuration's, never a patch that stopped applying.
void expect_only_copies_off(const Ids& why_not_built) {
  for (const std::string& why : why_not_built)
    EXPECT_NE(why.find("FUSIONCHECK_FLASHINFER_COPIES=OFF"), std::string::npos) << why;
}

TEST(FlashInferAdapter, BuiltWithTheHeadersAndEveryPatch) {
  ASSERT_TRUE(fa::flashinfer_available()) << fa::flashinfer_unavailable_reason();
  EXPECT_NE(fa::flashinfer_source().find("flashinfer"), std::string::npos)
      << fa::flashinfer_source();
  const auto built = fa::flashinfer_patches();
  // pdl-wait-missing is compiled in every build (the audit's control).
  EXPECT_NE(
      std::find(built.begin(), built.end(), fusioncheck::gpu::MutantId(Mutant::pdl_wait_missing)),
      built.end());
  // The pinned release takes every patch: a copy is built, or applied and named as left out
  // by -DFUSIONCHECK_FLASHINFER_COPIES=OFF, never skipped.
  Ids why_not_built;
  const Ids patches = copy_ids(built, fa::flashinfer_patches_not_built(), &why_not_built);
  expect_only_copies_off(why_not_built);
  Ids expected = {"pdl-wait-missing",
                  "float-sentinel",
                  "no-canonicalize",
                  "clear-size-current",
                  "flag-before-arrival",
                  "no-pdl-wait",
                  "revert-0.6.4-fp4-cluster-coverage",
                  "revert-0.6.15-partial-warp-reduce",
                  "revert-0.6.17-cluster-clamp",
                  "revert-0.7.1-inputs-before-wait",
                  "revert-0.7.2-twoshot-barrier-order",
                  "mxfp8-scale-nearest",
                  "group-fp8-padding-kept"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(patches, expected);
  EXPECT_EQ(fa::flashinfer_choice().name, "flashinfer");
  // The pinned wheel's JIT flags were read: the fast-math instance is built beside.
  EXPECT_NE(fa::flashinfer_fast_math_flags().find("-use_fast_math"), std::string::npos)
      << fa::flashinfer_fast_math_refused();
  // The family registers exactly these: what `fusioncheck mutants` and --mutant know.
  EXPECT_EQ(registered_ids("flashinfer"), expected);
}

// Upstream's fixes reverted: NVFP4 (sm_100+), a cluster clamp that changes nothing where
// clusters of 8 launch and a partial-warp shuffle the H200 resolves benignly may survive on
// sm_90; the other copies must be killed there, and nothing is excused on sm_100 or sm_120.
TEST(FlashInferAdapter, CopiesThatMaySurviveDependOnTheGpu) {
  using fusioncheck::gpu::MutantId;
  fusioncheck::gpu::GpuPlacement h200;
  h200.compute_capability = 90;
  for (const char* m : {"revert-0.6.4-fp4-cluster-coverage", "revert-0.6.17-cluster-clamp",
                        "revert-0.6.15-partial-warp-reduce"})
    EXPECT_NE(fa::flashinfer_mutant_may_survive(MutantId(m), h200), "") << m;
  for (const char* m : {"revert-0.7.1-inputs-before-wait", "revert-0.7.2-twoshot-barrier-order",
                        "no-pdl-wait", "float-sentinel", "mxfp8-scale-nearest"})
    EXPECT_EQ(fa::flashinfer_mutant_may_survive(MutantId(m), h200), "") << m;
  for (int cc : {100, 120}) {
    fusioncheck::gpu::GpuPlacement blackwell;
    blackwell.compute_capability = cc;
    for (const char* m : {"revert-0.6.4-fp4-cluster-coverage", "revert-0.6.17-cluster-clamp",
                          "revert-0.6.15-partial-warp-reduce"})
      EXPECT_EQ(fa::flashinfer_mutant_may_survive(MutantId(m), blackwell), "") << m << cc;
  }
}

// Releases built beside the main tree are driven by name; one that is not built is refused
// naming the ones that are and how to build it.
TEST(FlashInferAdapter, ReleasesAreChosenByNameAndAMissingOneIsRefused) {
  for (const std::string& release : fa::flashinfer_releases())
    EXPECT_EQ(fa::flashinfer_release_choice(release).name, "flashinfer@" + release);
  try {
    (void)fa::flashinfer_release_choice("9.9.9");
    ADD_FAILURE() << "a release that is not built was chosen";
  } catch (const fusioncheck::kernels::InvalidLaunch& e) {
    EXPECT_NE(std::string(e.what()).find("-DFUSIONCHECK_FLASHINFER_RELEASES=9.9.9"),
              std::string::npos)
        << e.what();
  }
}

// A Bootstrap never reached: the factory refuses before it makes anything.
struct UnusedBootstrap final : fusioncheck::kernels::Bootstrap {
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_gather(const void*, void*, std::size_t, const char*) override { ADD_FAILURE(); }
  void barrier(const char*) override { ADD_FAILURE(); }
};

TEST(FlashInferAdapter, AMutantWithoutPatchIsRefused) {
  UnusedBootstrap bootstrap;
  try {
    (void)fa::make_flashinfer(bootstrap, Mutant::two_buffers);
    ADD_FAILURE() << "no refusal";
  } catch (const fusioncheck::kernels::InvalidLaunch& e) {
    EXPECT_NE(std::string(e.what()).find("two-buffers"), std::string::npos) << e.what();
  }
}

// Every compiled patched copy is also built with FlashInfer's JIT flags (launch variant 1, the
// fast-math kill table), except where -DFUSIONCHECK_FLASHINFER_COPIES=OFF compiles only the
// audit's pdl-wait-missing copy, and that with nvcc's defaults alone.
TEST(FlashInferAdapter, EveryCompiledPatchedCopyHasItsJitBuild) {
  if (fa::flashinfer_fast_math_flags().empty()) GTEST_SKIP() << fa::flashinfer_fast_math_refused();
  auto compiled = fa::flashinfer_patches();
  auto fast = fa::flashinfer_fast_math_patches();
  std::sort(compiled.begin(), compiled.end());
  std::sort(fast.begin(), fast.end());
  if (fa::flashinfer_patches_not_built().empty()) EXPECT_EQ(fast, compiled);
  else EXPECT_TRUE(fast.empty());
}

}  // namespace

// --- FlashInfer's older Lamport kernel (trtllm_allreduce.cuh): its host-side rules.
namespace {

namespace fk = fusioncheck::kernels;

// The launcher's grid covers a row exactly for these sizes (docs/flashinfer.md); the others
// near them are refused (their threads would miss elements or run past the row).
TEST(FlashInferLegacy, HiddenSizesAreThoseItsGridCoversExactly) {
  for (int h : {256, 512, 1024, 2048, 2560, 3584, 3840, 4096, 5120, 6144, 7168, 8192, 10240, 12288,
                14336, 16384})
    EXPECT_TRUE(fa::flashinfer_legacy_runs_hidden(h)) << h;
  for (int h : {16, 128, 255, 896, 2880, 4352, 4608, 4864, 5376, 9216, 11264, 13312})
    EXPECT_FALSE(fa::flashinfer_legacy_runs_hidden(h)) << h;
  const auto t = fa::flashinfer_legacy_traits();
  EXPECT_EQ(t.hidden_sizes.front(), 256);
  EXPECT_EQ(t.max_tokens, 16);
  for (int h : t.hidden_sizes) EXPECT_TRUE(fa::flashinfer_legacy_runs_hidden(h)) << h;
  EXPECT_EQ(fa::flashinfer_legacy_choice().name, "flashinfer-legacy");
}

fk::FusedParams runnable() {
  fk::FusedParams p;
  p.ranks = 4;
  p.tokens = 16;
  p.hidden = 4096;
  p.fp32_accumulation = false;
  return p;
}

// Every refusal names what the kernel cannot do, in one line; a runnable call has none.
TEST(FlashInferLegacy, RefusesWhatItCannotRunWithTheReason) {
  EXPECT_EQ(fa::flashinfer_legacy_refusal(runnable(), false, 9), "");
  struct Edit {
    const char* expect;
    void (*edit)(fk::FusedParams&);
  };
  const Edit edits[] = {
      {"at most 16 tokens", [](fk::FusedParams& p) { p.tokens = 17; }},
      {"hidden=4352 is not covered", [](fk::FusedParams& p) { p.hidden = 4352; }},
      {"residual + RMSNorm only, not pattern allreduce",
       [](fk::FusedParams& p) { p.pattern = fk::Pattern::allreduce; }},
      {"residual + RMSNorm only, not pattern fp8_static",
       [](fk::FusedParams& p) { p.pattern = fk::Pattern::fp8_static; }},
      {"inputs are bf16 or f16", [](fk::FusedParams& p) { p.dtype = fk::DType::f32; }},
      {"16-bit Lamport elements only", [](fk::FusedParams& p) { p.fp32_lamport = true; }},
      {"no fp32 accumulation", [](fk::FusedParams& p) { p.fp32_accumulation = true; }},
      {"weight_bias 0 only", [](fk::FusedParams& p) { p.weight_bias = 1.0f; }},
      {"at its end only", [](fk::FusedParams& p) { p.trigger = fk::Trigger::early; }},
      {"no forced cluster path",
       [](fk::FusedParams& p) { p.cluster = fk::ClusterMode::force_cluster; }},
      {"2, 4 or 8 ranks, not 16", [](fk::FusedParams& p) { p.ranks = 16; }},
  };
  for (const Edit& e : edits) {
    fk::FusedParams p = runnable();
    e.edit(p);
    const std::string why = fa::flashinfer_legacy_refusal(p, false, 9);
    EXPECT_NE(why.find(e.expect), std::string::npos) << e.expect << " | got: " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  EXPECT_NE(fa::flashinfer_legacy_refusal(runnable(), true, 9).find("one-shot only"),
            std::string::npos);
  EXPECT_NE(fa::flashinfer_legacy_refusal(runnable(), false, 8).find("sm_90 or newer"),
            std::string::npos);
}

TEST(FlashInferLegacy, HasNoMutants) {
  UnusedBootstrap bootstrap;
  EXPECT_THROW((void)fa::make_flashinfer_legacy(bootstrap, Mutant::float_sentinel),
               fusioncheck::kernels::InvalidLaunch);
}

}  // namespace

// --- The suite's cases for it: drawn inside its traits, and the -0 case that shows the hang.

namespace {

namespace fg = fusioncheck::gpu;

// A call's parameters as the case runner fills them (what a kernel's launch check reads).
fk::FusedParams params_of(const fg::GpuCase& c, const fg::CallSpec& call) {
  fk::FusedParams p;
  p.ranks = c.ranks;
  p.tokens = call.tokens;
  p.hidden = c.hidden;
  p.dtype = c.dtype;
  p.fp32_lamport = c.fp32_lamport;
  p.fp32_accumulation = c.fp32_accumulation;
  p.pattern = call.pattern;
  p.weight_bias = c.weight_bias;
  p.trigger = call.trigger;
  p.cluster = call.cluster;
  p.variant = call.variant;
  return p;
}

// Whether every drawn case is inside `inside` and every call passes the kernel's own launch
// check (the parameters as the case runner fills them).
bool every_case_inside(const fg::KernelTraits& drawn_with, int ranks) {
  fg::DrawSettings s;
  s.ranks = ranks;
  s.nvfp4_supported = true;
  const fg::KernelTraits legacy = fa::flashinfer_legacy_traits();
  return rc::check("cases drawn for " + std::to_string(ranks) + " ranks", [&] {
    const fg::GpuCase c = fg::draw_case(s, drawn_with);
    RC_ASSERT(fg::outside_traits(c, legacy) == "");
    for (const fg::CallSpec& call : c.calls)
      RC_ASSERT(fa::flashinfer_legacy_refusal(params_of(c, call), call.twoshot, 9) == "");
  });
}

TEST(FlashInferLegacy, GeneratedCasesStayInsideItsTraits) {
  for (int ranks : {2, 4, 8})
    EXPECT_TRUE(every_case_inside(fa::flashinfer_legacy_traits(), ranks)) << ranks;
}

// The control: cases drawn for a kernel that runs everything fall outside (the check can fail).
TEST(FlashInferLegacy, CasesDrawnWithoutItsTraitsFallOutside) {
  EXPECT_FALSE(every_case_inside(fg::KernelTraits{}, 2));
}

// The replay file that demonstrates the hang on -0 inputs: it loads, it is outside the traits
// only by its -0 inputs, and its inputs do hold -0 (each rank's -0 is pushed as "not yet
// written" to its peer, which spins until the adapter's bound releases it).
TEST(FlashInferLegacy, NegZeroCaseFeedsNegZeroAndNothingElseOutside) {
  std::ifstream in(FUSIONCHECK_LEGACY_NEG_ZERO_CASE);
  ASSERT_TRUE(in) << FUSIONCHECK_LEGACY_NEG_ZERO_CASE;
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("kernel"), "flashinfer-legacy");
  const fg::GpuCase c = fg::case_from_json(j.at("case"));
  EXPECT_EQ(fg::outside_traits(c, fa::flashinfer_legacy_traits()), "inputs with -0");
  fusioncheck::reference::FusedConfig rc;
  rc.ranks = c.ranks;
  rc.tokens = c.calls[0].tokens;
  rc.hidden = c.hidden;
  rc.dtype = c.dtype;
  const auto inputs = fusioncheck::reference::make_exact_inputs(rc, c.seed, 0, c.neg_zero_inputs);
  for (int r = 0; r < c.ranks; ++r) {
    const auto& t = inputs.rank_inputs[static_cast<std::size_t>(r)];
    std::size_t count = 0;
    for (std::size_t i = 0; i < t.size(); ++i) count += t.bits_at(i) == 0x8000u;
    EXPECT_GT(count, 0u) << "rank " << r << " pushes no -0";
  }
}

// The replay file of the PDL finding: it loads through the strict reader, lies inside the
// kernel's traits (the suite may draw it), and its last call is launched with PDL behind the
// producer that writes its inputs, the only thing the kernel gets wrong.
TEST(FlashInferLegacy, ResidualCaseIsInsideTheTraitsWithAPdlProducer) {
  const fg::GpuCase c = fg::read_replay_case(FUSIONCHECK_LEGACY_RESIDUAL_CASE);
  EXPECT_EQ(fg::outside_traits(c, fa::flashinfer_legacy_traits()), "");
  ASSERT_FALSE(c.calls.empty());
  EXPECT_TRUE(c.calls.back().use_pdl);
  EXPECT_TRUE(c.calls.back().pdl_producer);
  EXPECT_EQ(c.calls.back().pattern, fusioncheck::kernels::Pattern::residual_rmsnorm);
}

}  // namespace

// --- FlashInfer's MoE allreduce fusion: its patched copies, built or applied and named.

namespace {

TEST(FlashInferMoe, EveryPatchedCopyIsBuiltOrNamedAsNotBuilt) {
  ASSERT_EQ(fa::flashinfer_moe_unavailable_reason(), "");
  EXPECT_EQ(fa::flashinfer_moe_choice().name, "flashinfer-moe");
  // The kill table runs the MoE copies at every rank count FlashInfer's entry points dispatch.
  EXPECT_EQ(fa::flashinfer_moe_choice().mutant_ranks, (std::vector<int>{2, 4, 8}));
  Ids why_not_built;
  const Ids have = copy_ids(fa::flashinfer_moe_patches(), fa::flashinfer_moe_patches_not_built(),
                            &why_not_built);
  expect_only_copies_off(why_not_built);
  Ids expected = {"float-sentinel", "flag-before-arrival", "clear-size-current",
                  "no-pdl-wait",    "moe-remote-read",     "moe-cluster-sync-dropped"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(have, expected);
  // The family registers exactly these.
  EXPECT_EQ(registered_ids("flashinfer-moe"), expected);
}

}  // namespace

// --- FlashInfer's PCIe allreduce: its variants, its refusals, the cases drawn for it.

namespace {

TEST(FlashInferPcie, BuiltWithEveryPatchedCopy) {
  ASSERT_EQ(fa::flashinfer_pcie_unavailable_reason(), "");
  Ids why_not_built;
  const Ids patches = copy_ids(fa::flashinfer_pcie_patches(),
                               fa::flashinfer_pcie_patches_not_built(), &why_not_built);
  expect_only_copies_off(why_not_built);
  Ids expected = {"float-sentinel",
                  "counter-not-reset",
                  "no-pdl-wait",
                  "pcie-no-sanitise",
                  "pcie-tp2-half-from-payload",
                  "ce-copy-before-add",
                  "ce-publish-before-copy",
                  "ce-pieces-differ"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(patches, expected);
  // The family registers exactly these (the SM kernels' copies and the ring's).
  EXPECT_EQ(registered_ids("flashinfer-pcie"), expected);
}

// Every SM kernel of all_reduce() for the rank count, each with every grid it takes: 2 kernels
// at 2 ranks, 3 at 4, 4 at 8 (the 8-rank block kernel only with blocks % 4 == 0).
TEST(FlashInferPcie, VariantsCoverEveryKernelOfEachRankCount) {
  auto kernels_of = [](int ranks) {
    std::vector<int> k;
    for (const auto& v : fa::flashinfer_pcie_variants(ranks))
      if (std::find(k.begin(), k.end(), v.kernel_variant) == k.end()) k.push_back(v.kernel_variant);
    return k;
  };
  // The SM kernels, then the copy-engine ring's flat variants (4: flag kernels, 6: memops).
  EXPECT_EQ(kernels_of(2), (std::vector<int>{0, 1, 4, 6}));
  EXPECT_EQ(kernels_of(4), (std::vector<int>{0, 1, 2, 4, 6}));
  EXPECT_EQ(kernels_of(8), (std::vector<int>{0, 1, 2, 3, 4, 6}));
  EXPECT_TRUE(fa::flashinfer_pcie_variants(3).empty());
  for (int ranks : {2, 4, 8})
    for (const auto& v : fa::flashinfer_pcie_variants(ranks)) {
      EXPECT_LE(v.blocks, fa::kPcieMaxBlocks) << v.info.name;
      EXPECT_GE(v.threads, ranks) << v.info.name;  // block_barrier signals one peer per thread
      if (ranks == 8 && v.kernel_variant == 1) EXPECT_EQ(v.blocks % 4, 0) << v.info.name;
      // Only the 8-rank barrier kernels sum raw inputs in island pairs; every sentinel kernel
      // sanitises; the copy-engine ring has no sentinel.
      EXPECT_EQ(v.info.sanitises_pos_zero,
                !v.copy_engine && !(ranks == 8 && (v.kernel_variant == 1 || v.kernel_variant == 2)))
          << v.info.name;
    }
  // Regions as all_reduce() picks them: TP2 the block region; unstaged and flat staged the pack.
  EXPECT_EQ(fa::flashinfer_pcie_region(2, 0), 0);
  EXPECT_EQ(fa::flashinfer_pcie_region(4, 0), 1);
  EXPECT_EQ(fa::flashinfer_pcie_region(4, 2), 0);
  EXPECT_EQ(fa::flashinfer_pcie_region(8, 3), 1);
  EXPECT_FALSE(fa::flashinfer_pcie_region_sentinel_only(8, 0));
  EXPECT_TRUE(fa::flashinfer_pcie_region_sentinel_only(4, 0));
}

TEST(FlashInferPcie, RefusesWhatItCannotRunWithTheReason) {
  fk::FusedParams p;
  p.ranks = 2;
  p.tokens = 3;
  p.hidden = 512;
  p.pattern = fk::Pattern::allreduce;
  p.fp32_accumulation = false;
  EXPECT_EQ(fa::flashinfer_pcie_refusal(p, false), "");
  auto refused = [&](fk::FusedParams q, bool twoshot, const std::string& why) {
    const std::string got = fa::flashinfer_pcie_refusal(q, twoshot);
    EXPECT_NE(got.find(why), std::string::npos) << got;
  };
  refused(p, true, "two-shot");
  fk::FusedParams q = p;
  q.ranks = 16;
  refused(q, false, "2, 4 or 8 ranks");
  q = p;
  q.pattern = fk::Pattern::residual_rmsnorm;
  refused(q, false, "allreduce only");
  q = p;
  q.fp32_accumulation = true;
  refused(q, false, "rounds after every add");
  q = p;
  q.variant = static_cast<int>(fa::flashinfer_pcie_variants(2).size());
  refused(q, false, "variant");
  q = p;
  q.trigger = fk::Trigger::early;
  refused(q, false, "at its end");
}

bool every_pcie_case_inside(const fg::KernelTraits& drawn_with, int ranks) {
  fg::DrawSettings s;
  s.ranks = ranks;
  const fg::KernelTraits pcie = fa::flashinfer_pcie_traits(ranks);
  return rc::check("PCIe cases for " + std::to_string(ranks) + " ranks", [&] {
    const fg::GpuCase c = fg::draw_case(s, drawn_with);
    RC_ASSERT(fg::outside_traits(c, pcie) == "");
    for (const fg::CallSpec& call : c.calls)
      RC_ASSERT(fa::flashinfer_pcie_refusal(params_of(c, call), call.twoshot) == "");
  });
}

TEST(FlashInferPcie, GeneratedCasesStayInsideItsTraitsAndDrawEveryVariant) {
  for (int ranks : {2, 4, 8}) {
    EXPECT_TRUE(every_pcie_case_inside(fa::flashinfer_pcie_traits(ranks), ranks)) << ranks;
    // Every variant is drawn (fixed seeds: the same share on every run).
    fg::DrawSettings s;
    s.ranks = ranks;
    const auto traits = fa::flashinfer_pcie_traits(ranks);
    std::vector<int> seen(traits.variants.size(), 0);
    for (int seed = 0; seed < 300; ++seed) {
      const fg::GpuCase c = rc::gen::exec([&] { return fg::draw_case(s, traits); })(
                                rc::Random(static_cast<std::uint64_t>(seed)), 50)
                                .value();
      for (const auto& call : c.calls) ++seen.at(static_cast<std::size_t>(call.variant));
    }
    for (std::size_t v = 0; v < seen.size(); ++v)
      EXPECT_GT(seen[v], 0) << ranks << " ranks: " << traits.variants[v].name << " never drawn";
  }
}

// The control: cases drawn for a kernel that runs everything fall outside.
TEST(FlashInferPcie, CasesDrawnWithoutItsTraitsFallOutside) {
  EXPECT_FALSE(every_pcie_case_inside(fg::KernelTraits{}, 2));
}

// A variant the kernel does not have is outside its traits, and a replay file's variant
// travels through JSON.
TEST(FlashInferPcie, VariantOutsideTheKernelIsNamedAndTravelsInJson) {
  fg::GpuCase c;
  c.ranks = 2;
  c.hidden = 256;
  c.fp32_accumulation = false;
  fg::CallSpec call;
  call.pattern = fk::Pattern::allreduce;
  call.variant = 3;
  c.calls.push_back(call);
  EXPECT_EQ(fg::outside_traits(c, fa::flashinfer_pcie_traits(2)), "");
  EXPECT_EQ(fg::case_from_json(fg::to_json(c)).calls[0].variant, 3);
  c.calls[0].variant = static_cast<int>(fa::flashinfer_pcie_variants(2).size());
  EXPECT_NE(fg::outside_traits(c, fa::flashinfer_pcie_traits(2)).find("launch variant"),
            std::string::npos);
  c.calls[0].variant = 1000;
  EXPECT_THROW((void)fg::case_from_json(fg::to_json(c)), fg::BadInput);
}

}  // namespace

// --- The PCIe protocol's checks (P1-P5) on states written here: a clean one passes, and each
// invariant, broken alone, is named.

namespace {

int variant_index(int ranks, int kernel_variant, int blocks) {
  const auto v = fa::flashinfer_pcie_variants(ranks);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i].kernel_variant == kernel_variant && v[i].blocks == blocks) return static_cast<int>(i);
  return -1;
}

// 4 ranks: a one-shot call (pack region) and a ring call of 16 blocks (block region, barriers),
// with the state they leave: both epochs flipped, generation 1 in blocks 0..15 and in their
// barrier slots of phases 1..6.
fa::PcieStateAfterCalls clean_state() {
  fa::PcieStateAfterCalls s;
  s.layout.ranks = 4;
  s.layout.phases = 8;
  s.layout.block_state_word = s.layout.flag_word(fa::kPcieMaxBlocks - 1) + 1;
  s.layout.pack_state_word = s.layout.block_state_word + 2;
  const std::size_t words = static_cast<std::size_t>(s.layout.pack_state_word) + 2;
  s.before.assign(words, 0);
  s.after.assign(words, 0);
  s.variants = {variant_index(4, 0, 16), variant_index(4, 2, 16)};
  s.after[static_cast<std::size_t>(s.layout.block_state_word)] = 1;
  s.after[static_cast<std::size_t>(s.layout.pack_state_word)] = 1;
  for (int b = 0; b < 16; ++b) {
    s.after[static_cast<std::size_t>(s.layout.flag_word(b))] = 1;
    for (int phase = 1; phase <= 6; ++phase)
      for (int peer = 0; peer < 4; ++peer)
        s.after[static_cast<std::size_t>(s.layout.phase_word(phase, b, peer))] = 1;
  }
  s.regions[0] = {4096, 4096, 0};
  s.regions[1] = {4096, 4096, 0};
  return s;
}

std::string only_violation(const fa::PcieStateAfterCalls& s) {
  const auto v = fa::pcie_state_violations(s);
  return v.size() == 1 ? v[0] : std::to_string(v.size()) + " violations";
}

TEST(FlashInferPcieChecks, ACleanStatePasses) {
  ASSERT_GE(variant_index(4, 0, 16), 0);
  ASSERT_GE(variant_index(4, 2, 16), 0);
  EXPECT_TRUE(fa::pcie_state_violations(clean_state()).empty());
}

TEST(FlashInferPcieChecks, EachInvariantBrokenAloneIsNamed) {
  auto expect = [](fa::PcieStateAfterCalls s, const std::string& starts) {
    const std::string v = only_violation(s);
    EXPECT_EQ(v.rfind(starts, 0), 0u) << v;
  };
  fa::PcieStateAfterCalls s = clean_state();
  s.after[static_cast<std::size_t>(s.layout.pack_state_word)] = 0;  // the epoch did not flip
  expect(s, "PCIe invariant P1: the pack region's epoch is 0, expected 1");
  s = clean_state();
  s.after[static_cast<std::size_t>(s.layout.block_state_word) + 1] = 16;  // arrivals left
  expect(s, "PCIe invariant P2: the block region's arrival counter is 16");
  s = clean_state();
  s.regions[1] = {4096, 2048 + 17, 0x80};  // a slot of half 1 not reset
  expect(s, "PCIe invariant P3: the pack region still holds data after the calls: half 1, byte 17");
  s = clean_state();
  s.after[static_cast<std::size_t>(s.layout.flag_word(3))] = 2;  // a generation too far
  expect(s, "PCIe invariant P4: block 3's barrier generation is 2, expected 1");
  s = clean_state();
  s.after[static_cast<std::size_t>(s.layout.phase_word(7, 5, 2))] = 2;  // a slot ahead
  expect(s, "PCIe invariant P4: barrier slot (phase 7, block 5, peer 2) holds generation 2");
  s = clean_state();
  s.after[9] = 1;  // an epoch slot of debug builds
  expect(s, "PCIe invariant P5: epoch slot 9");
  s = clean_state();
  s.guards_intact = false;
  expect(s, "PCIe invariant P5: a guard word");
}

// The calls decide what is expected: the same state after the one-shot call alone breaks P1 of
// the block region and P4 (no barrier call ran).
TEST(FlashInferPcieChecks, TheExpectationFollowsTheCalls) {
  fa::PcieStateAfterCalls s = clean_state();
  s.variants.pop_back();
  const auto v = fa::pcie_state_violations(s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].rfind("PCIe invariant P1: the block region's epoch is 1, expected 0", 0), 0u)
      << v[0];
  EXPECT_EQ(v[1].rfind("PCIe invariant P4: block 0's barrier generation is 1, expected 0", 0), 0u)
      << v[1];
  s.after.resize(10);
  EXPECT_THROW((void)fa::pcie_state_violations(s), std::invalid_argument);
}

}  // namespace

// The PCIe allreduce's header has kernels for 2, 4 and 8 ranks only; the family says so, so
// that a 16-rank job is refused before any work rather than at its first launch.
TEST(FlashInferPcie, DeclaresTheRankCountsItsHeaderHasKernelsFor) {
  EXPECT_EQ(fa::flashinfer_pcie_choice().rank_counts, (std::vector<int>{2, 4, 8}));
  for (int ranks : {2, 4, 8}) EXPECT_FALSE(fa::flashinfer_pcie_variants(ranks, true).empty());
  EXPECT_TRUE(fa::flashinfer_pcie_variants(16, true).empty());
}

// gpu check writes a stand-alone reproducer beside a new finding's replay: the families of
// FlashInfer's headers have the export, and a case it cannot carry is refused with why.
TEST(FlashInferRepro, ChecksOfTheHeaderFamiliesExportBesideTheReplay) {
  namespace fs = std::filesystem;
  for (const auto& choice :
       {fa::flashinfer_choice(), fa::flashinfer_legacy_choice(), fa::flashinfer_moe_choice()})
    ASSERT_TRUE(static_cast<bool>(choice.export_reproducer)) << choice.name;
  EXPECT_FALSE(static_cast<bool>(fa::flashinfer_pcie_choice().export_reproducer));
  const fs::path dir = fs::temp_directory_path() / ("fc-repro-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string line = fa::flashinfer_legacy_choice().export_reproducer(
      FUSIONCHECK_LEGACY_RESIDUAL_CASE, dir.string());
  EXPECT_NE(line.find(dir.string()), std::string::npos) << line;
  for (const char* file : {"repro_main.cu", "repro_case.h", "CMakeLists.txt", "README.md",
                           "data/c1_r1_input.bin", "data/c1_expected_norm_out.bin"})
    EXPECT_TRUE(fs::is_regular_file(dir / file)) << file;
  // The case's header names the finding by the replay and carries its checks.
  std::ifstream header(dir / "repro_case.h");
  const std::string text((std::istreambuf_iterator<char>(header)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("kFindingChecks[] = {\"reference\""), std::string::npos) << text;
  EXPECT_NE(text.find("#define FC_FAMILY_LEGACY 1"), std::string::npos);
  // Run 0: the case's seeded delays before each rank's calls, nobody held.
  EXPECT_NE(text.find("{{{72794, true}, {43013, true}}, {{0, false}, {0, false}}}"),
            std::string::npos)
      << text;
  // Negative control: the folder now holds files, so a second export there is refused.
  EXPECT_THROW(fa::flashinfer_legacy_choice().export_reproducer(FUSIONCHECK_LEGACY_RESIDUAL_CASE,
                                                                dir.string()),
               fg::BadInput);
  fs::remove_all(dir);
  // A held rank (before its push, the only hold of these families) is re-created: rank 1's
  // first call starts 20 us late; a hold inside the kernel is refused (the header has none).
  nlohmann::json replay = nlohmann::json::parse(std::ifstream(FUSIONCHECK_LEGACY_RESIDUAL_CASE));
  replay["case"]["hold"] = {{"rank", 1}, {"call", 0}, {"point", "before_push"}, {"ns", 20000}};
  const fs::path held_file = dir.string() + "-held.json";
  std::ofstream(held_file) << replay.dump();
  fa::flashinfer_legacy_choice().export_reproducer(held_file.string(), dir.string());
  std::ifstream held_header(dir / "repro_case.h");
  const std::string held_text((std::istreambuf_iterator<char>(held_header)),
                              std::istreambuf_iterator<char>());
  EXPECT_NE(held_text.find("{{{72794, true}, {43013, true, 20000}}, {{0, false}, {0, false}}}"),
            std::string::npos)
      << held_text;
  fs::remove_all(dir);
  replay["case"]["hold"]["point"] = "before_poll";
  std::ofstream(held_file) << replay.dump();
  try {
    fa::flashinfer_legacy_choice().export_reproducer(held_file.string(), dir.string());
    ADD_FAILURE() << "a hold inside the kernel was exported";
  } catch (const fg::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("held before_poll"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
  fs::remove(held_file);
}

namespace {

// A MoE rank is held before its polls inside the kernel (the bf16 copy with hooks, a plan set
// ahead of the call, so never behind a PDL producer); f16 calls only before their push.
TEST(FlashInferMoe, HoldsARankBeforeItsPollsInBf16Calls) {
  if (!fa::flashinfer_moe_unavailable_reason().empty()) GTEST_SKIP() << "no MoE header";
  namespace fk = fusioncheck::kernels;
  const fusioncheck::gpu::KernelTraits t = fa::flashinfer_moe_choice().host_traits(2);
  EXPECT_EQ(t.hold_points(fk::DType::bf16),
            (std::vector<fk::HoldPoint>{fk::HoldPoint::before_push, fk::HoldPoint::before_poll}));
  EXPECT_EQ(t.hold_points(fk::DType::f16),
            (std::vector<fk::HoldPoint>{fk::HoldPoint::before_push}));
  EXPECT_FALSE(t.holds_behind_pdl_producer(fk::HoldPoint::before_poll, fk::DType::bf16));
}

// A failing MoE case's report names the blocks held inside the kernel: the held ranks of a
// bf16 case with delays, none for f16 (no sync-delay copy) or without delays.
TEST(FlashInferMoe, CaseNotesNameTheBlocksHeldInsideTheKernel) {
  if (!fa::flashinfer_moe_unavailable_reason().empty()) GTEST_SKIP() << "no MoE header";
  fusioncheck::gpu::GpuCase c;
  c.ranks = 2;
  c.dtype = fusioncheck::kernels::DType::bf16;
  c.delay_seed = 33;  // rank 1 holds block 200; rank 0 holds none
  c.delay_max_ns = 20000;
  const auto notes = fa::flashinfer_moe_case_notes(c, Mutant::none);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("rank 1 holds block 200 "), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find(" ns at line "), std::string::npos) << notes[0];
  c.dtype = fusioncheck::kernels::DType::f16;
  EXPECT_TRUE(fa::flashinfer_moe_case_notes(c, Mutant::none).empty());
  c.dtype = fusioncheck::kernels::DType::bf16;
  c.delay_seed = 0;
  EXPECT_TRUE(fa::flashinfer_moe_case_notes(c, Mutant::none).empty());
}

}  // namespace
