// The cuobjdump listing parser on committed captures of real cuobjdump output
// (fixtures/*.listing.txt, made by fixtures/capture.sh) and on small hand-made snippets.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "audit_test_support.hpp"
#include "fusioncheck/audit/listing.hpp"

namespace fusioncheck::audit {
namespace {

using test::find_code;
using test::read_fixture;

std::set<std::string> classes_of(const FunctionCode& code) {
  std::set<std::string> classes;
  for (const auto& [name, count] : code.sync_counts) classes.insert(name);
  return classes;
}

struct ExpectedClasses {
  std::set<std::string> sass;
  std::set<std::string> ptx;
};

// Ground truth measured with nvcc 13 for sm_120 (the same on sm_90 and sm_100); this is the
// table in kernels/audit/README.md.
const std::map<std::string, ExpectedClasses>& expected_sync_classes() {
  static const std::map<std::string, ExpectedClasses> table = {
      {"_Z10k_wait_ptxPfPKf",
       {{"griddep.wait", "griddep.trigger"}, {"griddep.wait", "griddep.trigger"}}},
      {"_Z10k_wait_apiPfPKf",
       {{"griddep.wait", "griddep.trigger"}, {"griddep.wait", "griddep.trigger"}}},
      {"_Z7k_fencePi", {{"fence.gpu", "cache.invalidate"}, {"fence.gpu"}}},
      {"_Z11k_fence_sysPi", {{"fence.sys", "cache.invalidate"}, {"fence.sys"}}},
      {"_Z13k_fence_blockPi", {{"fence.cta"}, {"fence.cta"}}},
      {"_Z13k_release_sysPii", {{"fence.sys", "st.strong.sys"}, {"st.release.sys"}}},
      {"_Z13k_acquire_sysPiS_", {{"ld.strong.sys", "cache.invalidate"}, {"ld.acquire.sys"}}},
      {"_Z13k_release_gpuPii", {{"fence.gpu", "st.strong.gpu"}, {"st.release.gpu"}}},
      {"_Z13k_acquire_gpuPiS_", {{"ld.strong.gpu", "cache.invalidate"}, {"ld.acquire.gpu"}}},
      {"_Z13k_relaxed_sysPiS_",
       {{"ld.strong.sys", "st.strong.sys"}, {"ld.relaxed.sys", "st.relaxed.sys"}}},
      {"_Z13k_volatile_ldPV6float4PS_", {{"ld.strong.sys"}, {"ld.volatile"}}},
      {"_Z16k_volatile_ld_v4PK4int4PS_", {{"ld.strong.sys"}, {"ld.volatile"}}},
      {"_Z13k_volatile_stPVi", {{"st.strong.sys"}, {"st.volatile"}}},
      {"_Z12k_atomic_addPi", {{"atomic.gpu"}, {"atomic.gpu"}}},
      {"_Z16k_atomic_add_retPiS_", {{"atomic.gpu"}, {"atomic.gpu"}}},
      {"_Z12k_atomic_casPiS_", {{"atomic.gpu"}, {"atomic.gpu"}}},
      {"_Z12k_atomic_sysPi", {{"atomic.sys"}, {"atomic.sys"}}},
      {"_Z18k_fence_acqrel_sysPi", {{"fence.sys", "cache.invalidate"}, {"fence.sys"}}},
      {"_Z14k_fence_sc_gpuPi", {{"fence.gpu", "cache.invalidate"}, {"fence.gpu"}}},
      {"_Z18k_fence_acqrel_gpuPi", {{"fence.gpu", "cache.invalidate"}, {"fence.gpu"}}},
      {"_Z7k_emptyv", {{}, {}}},
      {"_Z7k_plainPfPKf", {{}, {}}},
      {"_Z13k_syncthreadsPf", {{}, {}}},
      {"_Z16k_generic_atomicPiS_", {{"atomic.gpu"}, {"atomic.gpu"}}},
      {"_Z15k_shared_atomicPi", {{"atomic.shared"}, {"atomic.shared"}}},
      {"_Z17k_red_release_sysPi", {{"fence.sys", "atomic.sys"}, {"atomic.release.sys"}}},
      {"_Z18k_atom_acquire_gpuPiS_", {{"atomic.gpu", "cache.invalidate"}, {"atomic.acquire.gpu"}}},
      {"_Z21k_atom_acqrel_sys_casPiS_",
       {{"fence.sys", "atomic.sys", "cache.invalidate"}, {"atomic.acq_rel.sys"}}},
      {"_Z14k_spin_acquirePiS_", {{"ld.strong.sys", "cache.invalidate"}, {"ld.acquire.sys"}}},
      {"_Z13k_fence_proxyPi", {{"fence.gpu", "fence.proxy"}, {"fence.proxy"}}},
      {"_Z11k_membar_glPi", {{"fence.gpu", "cache.invalidate"}, {"fence.gpu"}}},
      {"_Z10k_ld_st_cgPi", {{"ld.strong.gpu", "st.strong.gpu"}, {}}},
      {"_Z9k_ld_mmioPiS_", {{"ld.strong.sys"}, {"ld.mmio.sys"}}},
      {"_Z9k_clusterPf",
       {{"fence.gpu", "barrier.cluster", "cache.invalidate"}, {"barrier.cluster"}}},
      {"_Z15k_noinline_callPi",
       {{"st.strong.sys"}, {}}},  // the callee's store is in the kernel's SASS
  };
  return table;
}

TEST(AuditListing, SyncClassFixtureMatchesTheMeasuredMapping) {
  const Listing listing = parse_listing(read_fixture("sync_classes_sm120.listing.txt"));
  for (const auto& [mangled, expected] : expected_sync_classes()) {
    const auto* sass = find_code(listing, mangled, "sm_120", CodeSource::kSass);
    const auto* ptx = find_code(listing, mangled, "sm_120", CodeSource::kPtx);
    ASSERT_NE(sass, nullptr) << mangled;
    ASSERT_NE(ptx, nullptr) << mangled;
    EXPECT_EQ(classes_of(*sass), expected.sass) << mangled << " (SASS)";
    EXPECT_EQ(classes_of(*ptx), expected.ptx) << mangled << " (PTX)";
  }
}

TEST(AuditListing, DeviceFunctionsAreToldFromKernelsByPtx) {
  const Listing listing = parse_listing(read_fixture("sync_classes_sm120.listing.txt"));
  const auto* callee = find_code(listing, "_Z5touchPVi", "sm_120", CodeSource::kPtx);
  ASSERT_NE(callee, nullptr);
  EXPECT_FALSE(callee->is_entry);
  EXPECT_EQ(classes_of(*callee), std::set<std::string>{"st.volatile"});
  const auto* caller = find_code(listing, "_Z15k_noinline_callPi", "sm_120", CodeSource::kPtx);
  ASSERT_NE(caller, nullptr);
  EXPECT_TRUE(caller->is_entry);
}

TEST(AuditListing, EveryArchAndSourceOfTheFixtureIsFound) {
  const Listing listing = parse_listing(read_fixture("pdl_correct.listing.txt"));
  EXPECT_EQ(listing.functions.size(), 2u * 3u * 2u);  // 2 kernels x 3 archs x {SASS, PTX}
  for (const char* arch : {"sm_90", "sm_100", "sm_120"})
    for (CodeSource source : {CodeSource::kSass, CodeSource::kPtx}) {
      const auto* code = find_code(listing, "fc_audit_fixture_pdl_oneshot", arch, source);
      ASSERT_NE(code, nullptr) << arch;
      EXPECT_EQ(code->sync_counts.at("griddep.wait"), 1) << arch;
      EXPECT_EQ(code->sync_counts.at("griddep.trigger"), 1) << arch;
      EXPECT_GT(code->body_instructions, 20) << arch;
    }
}

TEST(AuditListing, EmptyBodyIsRecognisedAsTiny) {
  const Listing listing = parse_listing(read_fixture("pdl_empty_body.listing.txt"));
  const auto* sass =
      find_code(listing, "fc_audit_fixture_pdl_oneshot", "sm_120", CodeSource::kSass);
  const auto* ptx = find_code(listing, "fc_audit_fixture_pdl_oneshot", "sm_120", CodeSource::kPtx);
  ASSERT_NE(sass, nullptr);
  ASSERT_NE(ptx, nullptr);
  EXPECT_LE(sass->body_instructions, 1);  // LDC of the stack pointer only
  EXPECT_EQ(ptx->body_instructions, 0);
  EXPECT_TRUE(sass->sync_counts.empty());
}

TEST(AuditListing, SassOnlySnippet) {
  const Listing listing = parse_listing(R"(
Fatbin elf code:
================
arch = sm_100a
code version = [1,8]
host = linux
compile_size = 64bit

	code for sm_100a
		Function : _Z1kv
	.headerflags	@"EF_CUDA_SM100"
        /*0000*/                   ACQBULK ;                                   /* 0x0000000000007b1d */
                                                                               /* 0x000fe20000010000 */
        /*0010*/              @P0  MEMBAR.ALL.SYS ;                            /* 0x0000000000007992 */
                                                                               /* 0x000fe20000003000 */
        /*0020*/                   EXIT ;                                      /* 0x000000000000794d */
                                                                               /* 0x000fea0003800000 */
		.....
)");
  ASSERT_EQ(listing.functions.size(), 1u);
  const auto& code = listing.functions[0];
  EXPECT_EQ(code.arch, "sm_100a");
  EXPECT_EQ(code.source, CodeSource::kSass);
  EXPECT_EQ(code.instructions, 3);
  EXPECT_EQ(code.body_instructions, 2);
  EXPECT_EQ(code.sync_counts, (std::map<std::string, int>{{"griddep.wait", 1}, {"fence.sys", 1}}));
}

TEST(AuditListing, PtxOnlySnippetWithPrototypesAndNestedBraces) {
  const Listing listing = parse_listing(R"(
Fatbin ptx code:
================
arch = sm_120
compressed

.version 9.0
.target sm_120
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);
.global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};

.visible .entry _Z1kPi(
.param .u64 _Z1kPi_param_0
)
{
.reg .b32 %r<3>;
{
.reg .pred p;
griddepcontrol.wait;
}
ld.volatile.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];
$L__BB0_1:
@%p1 bra $L__BB0_1;
ret;
}
.func _Z6helperPi(
.param .b64 _Z6helperPi_param_0
)
{
st.release.gpu.global.u32 [%rd1], %r1;
ret;
}
)");
  ASSERT_EQ(listing.functions.size(), 2u);
  const auto& kernel = listing.functions[0];
  EXPECT_EQ(kernel.mangled, "_Z1kPi");
  EXPECT_EQ(kernel.arch, "sm_120");
  EXPECT_EQ(kernel.source, CodeSource::kPtx);
  EXPECT_TRUE(kernel.is_entry);
  EXPECT_EQ(kernel.instructions, 4);
  EXPECT_EQ(kernel.body_instructions, 3);
  EXPECT_EQ(kernel.sync_counts,
            (std::map<std::string, int>{{"griddep.wait", 1}, {"ld.volatile", 1}}));
  const auto& helper = listing.functions[1];
  EXPECT_EQ(helper.mangled, "_Z6helperPi");
  EXPECT_FALSE(helper.is_entry);
  EXPECT_EQ(helper.sync_counts, (std::map<std::string, int>{{"st.release.gpu", 1}}));
}

// cuobjdump on a standalone .cubin: SASS from "code for sm_XX" on, no "Fatbin elf code:".
TEST(AuditListing, StandaloneCubinHasNoSectionHeader) {
  const Listing listing = parse_listing(R"L(
	code for sm_90
	.target	sm_90

		Function : _Z1kv
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   ACQBULK ;                           /* 0x000000000000782e */
                                                                       /* 0x000fe20000000000 */
        /*0010*/                   EXIT ;                              /* 0x000000000000794d */
                                                                       /* 0x000fea0003800000 */
)L");
  ASSERT_EQ(listing.functions.size(), 1u);
  EXPECT_EQ(listing.functions[0].arch, "sm_90");
  EXPECT_EQ(listing.functions[0].source, CodeSource::kSass);
  EXPECT_EQ(listing.functions[0].sync_counts, (std::map<std::string, int>{{"griddep.wait", 1}}));
  // Negative control: without the "code for" line nothing says SASS follows.
  EXPECT_TRUE(
      parse_listing("\t.target\tsm_90\n\t\tFunction : _Z1kv\n/*0000*/ ACQBULK ; /* 0x0 */\n")
          .functions.empty());
}

// red.async.release.gpu as sm_100 compiles it (MEMBAR.ALL.CTA, then UREDGR...GPU) is a
// release at gpu scope, as sm_120's MEMBAR.ALL.GPU + REDG is: the same classes on both.
TEST(AuditListing, AsyncReleaseReductionCountsItsFenceAtItsScope) {
  auto classes = [](const std::string& body) {
    const Listing listing =
        parse_listing("\tcode for sm_100a\n\t\tFunction : _Z1kv\n" + body + "/*0090*/ EXIT ;\n");
    return listing.functions.at(0).sync_counts;
  };
  const std::map<std::string, int> released{{"fence.gpu", 1}, {"atomic.gpu", 1}};
  EXPECT_EQ(
      classes("/*0070*/ MEMBAR.ALL.CTA ;\n/*0080*/ UREDGR.E.ADD.NA.STRONG.GPU [UR4], UR6 ;\n"),
      released);
  EXPECT_EQ(
      classes("/*0070*/ MEMBAR.ALL.GPU ;\n/*0080*/ REDG.E.ADD.STRONG.GPU desc[UR4][R2.64], R5 ;\n"),
      released);
  // Negative controls: a CTA fence before a plain reduction, or with another sync instruction
  // between it and the async one, stays a CTA fence.
  EXPECT_EQ(
      classes("/*0070*/ MEMBAR.ALL.CTA ;\n/*0080*/ REDG.E.ADD.STRONG.GPU desc[UR4][R2.64], R5 ;\n"),
      (std::map<std::string, int>{{"fence.cta", 1}, {"atomic.gpu", 1}}));
  EXPECT_EQ(
      classes("/*0070*/ MEMBAR.ALL.CTA ;\n/*0075*/ CCTL.IVALL ;\n"
              "/*0080*/ UREDGR.E.ADD.NA.STRONG.GPU [UR4], UR6 ;\n"),
      (std::map<std::string, int>{{"fence.cta", 1}, {"cache.invalidate", 1}, {"atomic.gpu", 1}}));
}

// Inline asm written on one line: every statement of it counts, the braces and .reg do not.
TEST(AuditListing, PtxStatementsSharingALineAreEachCounted) {
  const Listing listing = parse_listing(
      "Fatbin ptx code:\n================\narch = sm_90\n.version 8.8\n.target sm_90\n"
      ".visible .entry k(\n)\n{\n"
      "\t{ .reg .pred p; mbarrier.try_wait.acquire.cta.shared::cta.b64 p, [%r1], %rd1; "
      "selp.u32 %r2, 1, 0, p; }\n"
      "\tWAIT: mbarrier.arrive.shared::cta.b64 %rd2, [%r1];\n"
      "\tret;\n}\n");
  ASSERT_EQ(listing.functions.size(), 1u);
  EXPECT_EQ(listing.functions[0].sync_counts,
            (std::map<std::string, int>{{"mbarrier.arrive", 1}, {"mbarrier.wait", 1}}));
  EXPECT_EQ(listing.functions[0].instructions, 4);  // try_wait, selp, arrive, ret
}

TEST(AuditListing, TextWithoutSectionsHasNoFunctions) {
  EXPECT_TRUE(parse_listing("").functions.empty());
  EXPECT_TRUE(parse_listing("Function : _Z1kv\n/*0000*/ ACQBULK ; /* 0x0 */\n").functions.empty());
  EXPECT_TRUE(parse_listing("\nFatbin elf code:\n====\narch = sm_90\n").functions.empty());
}

TEST(AuditListing, ArchNumbers) {
  EXPECT_EQ(arch_number("sm_90"), 90);
  EXPECT_EQ(arch_number("sm_90a"), 90);
  EXPECT_EQ(arch_number("sm_120f"), 120);
  EXPECT_EQ(arch_number("garbage"), 0);
}

}  // namespace
}  // namespace fusioncheck::audit
