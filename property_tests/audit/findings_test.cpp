// Findings on committed captures: the correct build is clean, the pdl-wait-missing and
// empty-body mutant builds are flagged on sm_120 and only there. RapidCheck properties
// delete the wait from one random section of the correct listing and reorder sections.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "audit_test_support.hpp"
#include "fusioncheck/audit/audit.hpp"
#include "fusioncheck/audit/known_pdl.hpp"

namespace fusioncheck::audit {
namespace {

using test::finding_keys;
using test::read_fixture;

constexpr const char* kPdlKernel = "fc_audit_fixture_pdl_oneshot";
constexpr const char* kPlainKernel = "fc_audit_fixture_plain_scale";

FileReport audit_fixture(const std::string& name, const AuditOptions& options = {}) {
  return audit_listing(name, parse_listing(read_fixture(name)), options);
}

bool contains(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

TEST(AuditFindings, CorrectBuildIsClean) {
  const FileReport report = audit_fixture("pdl_correct.listing.txt");
  EXPECT_TRUE(report.findings.empty()) << ::testing::PrintToString(finding_keys(report));
  ASSERT_EQ(report.kernels.size(), 2u);
  EXPECT_TRUE(report.kernels[0].pdl);   // the oneshot kernel, by the wait it has
  EXPECT_FALSE(report.kernels[1].pdl);  // the plain kernel has neither wait nor trigger
}

TEST(AuditFindings, WaitMissingMutantIsFlaggedOnSm120Only) {
  const FileReport report = audit_fixture("pdl_wait_missing.listing.txt");
  const std::vector<std::string> expected = {
      std::string("pdl-wait-missing sm_120 SASS ") + kPdlKernel,
      std::string("pdl-wait-missing sm_120 PTX ") + kPdlKernel,
      std::string("sync-differs-between-archs sm_120 SASS ") + kPdlKernel,
      std::string("sync-differs-between-archs sm_120 PTX ") + kPdlKernel,
  };
  auto keys = finding_keys(report);
  std::sort(keys.begin(), keys.end());
  auto sorted_expected = expected;
  std::sort(sorted_expected.begin(), sorted_expected.end());
  EXPECT_EQ(keys, sorted_expected);
  for (const auto& finding : report.findings)
    if (finding.kind == FindingKind::kSyncDiffersBetweenArchs)
      EXPECT_NE(finding.detail.find("griddep.wait (present on sm_90, sm_100)"), std::string::npos)
          << finding.detail;
}

TEST(AuditFindings, EmptyBodyMutantIsFlaggedOnSm120Only) {
  const FileReport report = audit_fixture("pdl_empty_body.listing.txt");
  const auto keys = finding_keys(report);
  EXPECT_TRUE(contains(keys, std::string("empty-body sm_120 SASS ") + kPdlKernel));
  EXPECT_TRUE(contains(keys, std::string("empty-body sm_120 PTX ") + kPdlKernel));
  EXPECT_TRUE(contains(keys, std::string("pdl-wait-missing sm_120 SASS ") + kPdlKernel));
  for (const auto& finding : report.findings) {
    EXPECT_EQ(finding.arch, "sm_120") << test::finding_key(finding);
    EXPECT_EQ(finding.kernel, kPdlKernel);
  }
}

TEST(AuditFindings, MixedSharedLibraryWithPtxForOneArchOnly) {
  const FileReport report = audit_fixture("pdl_wait_missing_mixed_so.listing.txt");
  const auto keys = finding_keys(report);
  EXPECT_TRUE(contains(keys, std::string("pdl-wait-missing sm_120 SASS ") + kPdlKernel));
  EXPECT_TRUE(contains(keys, std::string("pdl-wait-missing sm_120 PTX ") + kPdlKernel));
  EXPECT_TRUE(contains(keys, std::string("sync-differs-between-archs sm_120 SASS ") + kPdlKernel));
  for (const auto& finding : report.findings) EXPECT_NE(finding.arch, "sm_90a");
}

TEST(AuditFindings, PdlOptionsDecideWhichKernelsNeedTheWait) {
  AuditOptions all;
  all.pdl_all = true;
  const auto with_all = finding_keys(audit_fixture("pdl_correct.listing.txt", all));
  EXPECT_EQ(with_all.size(), 6u);  // the plain kernel, 3 archs x 2 sources
  EXPECT_TRUE(contains(with_all, std::string("pdl-wait-missing sm_90 SASS ") + kPlainKernel));

  AuditOptions by_name;
  by_name.pdl_kernels = compile_user_regex("--pdl-kernels", "plain_scale");
  EXPECT_EQ(finding_keys(audit_fixture("pdl_correct.listing.txt", by_name)), with_all);

  AuditOptions nothing_says_pdl;
  nothing_says_pdl.pdl_heuristic = false;
  nothing_says_pdl.known_pdl = false;
  for (const auto& key :
       finding_keys(audit_fixture("pdl_wait_missing.listing.txt", nothing_says_pdl)))
    EXPECT_EQ(key.rfind("sync-differs-between-archs", 0), 0u) << key;

  // The built-in list alone: fusioncheck's `fc_..._pdl_...` kernels are PDL-launched by name.
  AuditOptions known_only;
  known_only.pdl_heuristic = false;
  const auto by_list = finding_keys(audit_fixture("pdl_wait_missing.listing.txt", known_only));
  EXPECT_TRUE(contains(by_list, std::string("pdl-wait-missing sm_120 SASS ") + kPdlKernel));
}

// The built-in list names the kernels that FlashInfer and we launch with PDL, and nothing else.
TEST(AuditFindings, KnownPdlKernelsMatchTheirNamesOnly) {
  EXPECT_NE(
      find_known_pdl_kernel(
          "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<("
          "flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 2, "
          "false, true>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)"),
      nullptr);
  EXPECT_NE(
      find_known_pdl_kernel(
          "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_twoshot_sync<("
          "flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)0, __half, 4, true>("
          "flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__half>, std::array<int, "
          "4ul>, std::array<int, 4ul>)"),
      nullptr);
  EXPECT_EQ(
      find_known_pdl_kernel(
          "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_launcher_helper()"),
      nullptr);
  EXPECT_NE(find_known_pdl_kernel(
                "void flashinfer::trtllm_allreduce::reduce_fusion::"
                "lamport_style_one_shot_all_reduce_norm_kernel<__nv_bfloat16, 2, false, true>("
                "flashinfer::trtllm_allreduce::AllReduceParams<__nv_bfloat16>)"),
            nullptr);
  EXPECT_EQ(find_known_pdl_kernel(
                "void flashinfer::trtllm_allreduce::lamport_initialize_kernel<__half>(__half*, "
                "unsigned long)"),
            nullptr);
  EXPECT_EQ(find_known_pdl_kernel(kPlainKernel), nullptr);
  EXPECT_EQ(find_known_pdl_kernel("void some_other_project::my_pdl_kernel()"), nullptr);
  for (const auto& known : known_pdl_kernels()) EXPECT_FALSE(known.what.empty()) << known.pattern;
}

TEST(AuditFindings, JsonAndTableCarryTheFindings) {
  const std::vector<FileReport> reports = {audit_fixture("pdl_wait_missing.listing.txt")};
  const auto json = to_json(reports);
  EXPECT_EQ(json.at("findings_total"), 4);
  const auto& kernel = json.at("files").at(0).at("kernels").at(0);
  EXPECT_EQ(kernel.at("name"), kPdlKernel);
  EXPECT_EQ(kernel.at("code").size(), 6u);
  EXPECT_EQ(kernel.at("code").at(0).at("sync").at("griddep.wait"), 1);
  const std::string table = format_table(reports);
  EXPECT_TRUE(std::regex_search(table, std::regex("pdl-wait-missing +sm_120 SASS")));
  EXPECT_TRUE(std::regex_search(table, std::regex("sm_120 +SASS +[0-9]+ +atomic.gpu")));
}

// A SASS section for `arch` holding kernel `name` with the given instructions.
std::string sass_section(const std::string& arch, const std::string& name,
                         const std::vector<std::string>& instructions) {
  std::string text = "Fatbin elf code:\n================\narch = " + arch + "\n\n\tcode for " +
                     arch + "\n\t\tFunction : " + name + "\n";
  int address = 0;
  for (const auto& instruction : instructions)
    text +=
        "        /*" + std::to_string(1000 + address++) + "*/  " + instruction + " ;  /* 0x0 */\n";
  return text;
}

FileReport audit_text(const std::string& text, const AuditOptions& options = {}) {
  return audit_listing("synthetic", parse_listing(text), options);
}

const std::vector<std::string> kWork = {"S2R R0, SR_TID.X", "IADD3 R1, R0, 1, RZ",
                                        "STG.E [R2], R1"};

std::vector<std::string> with(std::vector<std::string> body, const std::string& extra) {
  body.insert(body.begin(), extra);
  return body;
}

// sm_80 has no griddepcontrol: a wait compiled only for sm_90+ is not missing there.
TEST(AuditFindings, PdlRulesSkipArchitecturesBeforeSm90) {
  const std::string text = sass_section("sm_80", "k", kWork) +
                           sass_section("sm_90", "k", with(kWork, "ACQBULK")) +
                           sass_section("sm_100", "k", with(kWork, "ACQBULK"));
  EXPECT_TRUE(audit_text(text).findings.empty())
      << ::testing::PrintToString(finding_keys(audit_text(text)));
  // Negative control: the same wait missing on sm_100 is reported there.
  const std::string mutant = sass_section("sm_80", "k", kWork) +
                             sass_section("sm_90", "k", with(kWork, "ACQBULK")) +
                             sass_section("sm_100", "k", kWork);
  const auto keys = finding_keys(audit_text(mutant));
  EXPECT_EQ(keys, (std::vector<std::string>{"sync-differs-between-archs sm_100 SASS k",
                                            "pdl-wait-missing sm_100 SASS k"}));
}

// Clusters, bulk copies and multimem exist from sm_90 on: sm_80 code without them differs
// from nothing; the same class missing on sm_100 is a difference.
TEST(AuditFindings, ClusterClassesAreNotComparedBeforeSm90) {
  const auto cluster = with(kWork, "UCGABAR_ARV");
  const std::string text = sass_section("sm_80", "k", kWork) + sass_section("sm_90", "k", cluster) +
                           sass_section("sm_100", "k", cluster);
  EXPECT_TRUE(audit_text(text).findings.empty())
      << ::testing::PrintToString(finding_keys(audit_text(text)));
  const std::string mutant = sass_section("sm_80", "k", kWork) +
                             sass_section("sm_90", "k", cluster) +
                             sass_section("sm_100", "k", kWork);
  EXPECT_EQ(finding_keys(audit_text(mutant)),
            (std::vector<std::string>{"sync-differs-between-archs sm_100 SASS k"}));
}

std::vector<std::string> real_body() {
  std::vector<std::string> body;
  for (int i = 0; i < 10; ++i) body.push_back("IADD3 R" + std::to_string(i) + ", R0, 1, RZ");
  body.push_back("MEMBAR.SC.GPU");
  return body;
}

std::vector<std::string> kinds_and_severities(const FileReport& report) {
  std::vector<std::string> keys;
  for (const auto& f : report.findings)
    keys.push_back(std::string(finding_kind_name(f.kind)) + " " +
                   std::string(severity_name(f.severity)) + " " + f.arch);
  return keys;
}

// A kernel named for sm_90 with its body on sm_90a only is a stub elsewhere: a note, and its
// missing fence there is no sync difference. Without the name it is an empty body.
TEST(AuditFindings, ArchSpecialisedStubIsANote) {
  const auto text = [](const std::string& name) {
    return sass_section("sm_90a", name, real_body()) + sass_section("sm_100a", name, {"EXIT"}) +
           sass_section("sm_120a", name, {"EXIT"});
  };
  const FileReport stub = audit_text(text("gemm_Sm90_tma_kernel"));
  EXPECT_EQ(kinds_and_severities(stub),
            (std::vector<std::string>{"arch-stub note sm_100a", "arch-stub note sm_120a"}));
  EXPECT_EQ(count_findings({stub}), 0u);
  // Negative controls: the same bodies without an architecture in the name, and a name that
  // targets the architecture where the body is missing.
  const FileReport plain = audit_text(text("gemm_tma_kernel"));
  EXPECT_EQ(count_findings({plain}), 4u) << ::testing::PrintToString(kinds_and_severities(plain));
  const FileReport wrong = audit_text(sass_section("sm_90a", "k_sm120", real_body()) +
                                      sass_section("sm_120a", "k_sm120", {"EXIT"}));
  EXPECT_EQ(count_findings({wrong}), 2u) << ::testing::PrintToString(kinds_and_severities(wrong));
}

// The stub need not be empty (CUTLASS's prints and traps): code of an arch-specialised kernel
// outside its targets (another family, or without the a/f suffix) is not compared. An Sm80
// tag names a minimum architecture, not a specialisation: compared as any kernel.
TEST(AuditFindings, StubsOfArchSpecialisedKernelsAreNotCompared) {
  const std::vector<std::string> stub = {"S2R R0, SR_TID.X", "ATOMS.POPC.INC.32 RZ, [UR4]",
                                         "IADD3 R1, R0, 1, RZ", "BPT.TRAP 0x1"};
  const auto text = [&](const std::string& name) {
    return sass_section("sm_90a", name, stub) + sass_section("sm_100", name, stub) +
           sass_section("sm_100a", name, real_body());
  };
  EXPECT_TRUE(audit_text(text("gemm_Sm100_umma")).findings.empty())
      << ::testing::PrintToString(kinds_and_severities(audit_text(text("gemm_Sm100_umma"))));
  EXPECT_EQ(count_findings({audit_text(text("gemm_umma"))}), 3u);
  EXPECT_EQ(count_findings({audit_text(text("gemm_Sm80_mma"))}), 3u);
  // A name that also names older parts (an Sm100 mainloop with an Sm90 epilogue) targets the
  // newest: its sm_90a code is the stub.
  EXPECT_TRUE(audit_text(text("gemm_MainloopSm100_EpilogueSm90")).findings.empty())
      << ::testing::PrintToString(
             kinds_and_severities(audit_text(text("gemm_MainloopSm100_EpilogueSm90"))));
  // Undemangled, a tag runs into the next length prefix ("Sm904Args"): still sm_90. Digits
  // that name no architecture ("Sm994") are no tag.
  const auto text90 = [&](const std::string& name) {
    return sass_section("sm_90a", name, real_body()) + sass_section("sm_100a", name, stub);
  };
  EXPECT_TRUE(audit_text(text90("_Zbroken_MainloopSm904Args")).findings.empty());
  EXPECT_GE(count_findings({audit_text(text90("_Zbroken_MainloopSm994Args"))}), 1u);
  // An Sm80 kernel compiled out on sm_90a (flash-attention's enable_sm80_to_sm89) is a stub.
  const FileReport sm80 = audit_text(sass_section("sm_80", "FlashAttnFwdSm80", real_body()) +
                                     sass_section("sm_90a", "FlashAttnFwdSm80", {"EXIT"}));
  EXPECT_EQ(kinds_and_severities(sm80), (std::vector<std::string>{"arch-stub note sm_90a"}));
}

// A PDL kernel specialised for sm_90 (a wait there) with a stub on sm_100f: the stub needs no
// wait. Without the tag in its name the missing wait is a finding (the negative control).
TEST(AuditFindings, StubOfAPdlKernelNeedsNoWait) {
  const std::vector<std::string> stub = {"S2R R0, SR_TID.X", "IADD3 R1, R0, 1, RZ", "BPT.TRAP 0x1"};
  const auto text = [&](const std::string& name) {
    return sass_section("sm_90a", name, with(real_body(), "ACQBULK")) +
           sass_section("sm_100f", name, stub);
  };
  const FileReport specialised = audit_text(text("mla_sm90_decode_kernel"));
  EXPECT_EQ(count_findings({specialised}), 0u)
      << ::testing::PrintToString(kinds_and_severities(specialised));
  const std::vector<std::string> plain = finding_keys(audit_text(text("mla_decode_kernel")));
  EXPECT_NE(
      std::find(plain.begin(), plain.end(), "pdl-wait-missing sm_100f SASS mla_decode_kernel"),
      plain.end())
      << ::testing::PrintToString(plain);
}

// CUB's EmptyKernel is meant to be empty; another kernel alone and empty is still a finding.
TEST(AuditFindings, CubEmptyKernelIsExpected) {
  const std::string cub = "void cub::CUB_300001_SM_900::detail::EmptyKernel<void>()";
  EXPECT_EQ(count_findings({audit_text(sass_section("sm_90a", cub, {"EXIT"}))}), 0u);
  EXPECT_EQ(count_findings({audit_text(sass_section("sm_90a", "void EmptyKernel()", {"EXIT"}))}),
            1u);
}

// Empty on every architecture of a multi-architecture binary: an empty kernel upstream (a
// note); alone, on one architecture, it stays a finding (a JIT build of a compiled-out body).
TEST(AuditFindings, EmptyOnEveryArchitectureIsANote) {
  const FileReport everywhere = audit_text(sass_section("sm_90", "noop", {"EXIT"}) +
                                           sass_section("sm_120", "noop", {"EXIT"}));
  EXPECT_EQ(
      kinds_and_severities(everywhere),
      (std::vector<std::string>{"empty-everywhere note sm_90", "empty-everywhere note sm_120"}));
  const FileReport alone = audit_text(sass_section("sm_120", "noop", {"EXIT"}));
  EXPECT_EQ(kinds_and_severities(alone), (std::vector<std::string>{"empty-body finding sm_120"}));
}

// A trigger alone is a PDL primary: a note, never pdl-wait-missing, and the exit code stays 0.
TEST(AuditFindings, TriggerOnlyKernelIsANote) {
  const std::string text = sass_section("sm_90", "primary", with(kWork, "PREEXIT")) +
                           sass_section("sm_120", "primary", with(kWork, "PREEXIT"));
  const FileReport report = audit_text(text);
  EXPECT_EQ(finding_keys(report),
            (std::vector<std::string>{"pdl-trigger-only sm_90 SASS primary"}));
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].severity, Severity::kNote);
  EXPECT_FALSE(report.kernels.at(0).pdl);
  EXPECT_EQ(count_findings({report}), 0u);
  EXPECT_EQ(count_notes({report}), 1u);
  const auto json = to_json({report});
  EXPECT_EQ(json.at("findings_total"), 0);
  EXPECT_EQ(json.at("notes_total"), 1);
  EXPECT_EQ(json.at("files").at(0).at("findings").at(0).at("severity"), "note");
  EXPECT_NE(format_table({report}).find("notes: 1"), std::string::npos);
  // Negative control: named as PDL-launched, the missing wait is a finding on every arch.
  AuditOptions named;
  named.pdl_kernels = compile_user_regex("--pdl-kernels", "primary");
  const FileReport flagged = audit_text(text, named);
  EXPECT_EQ(finding_keys(flagged),
            (std::vector<std::string>{"pdl-wait-missing sm_90 SASS primary",
                                      "pdl-wait-missing sm_120 SASS primary"}));
  EXPECT_EQ(count_findings({flagged}), 2u);
  EXPECT_EQ(to_json({flagged}).at("files").at(0).at("findings").at(0).at("severity"), "finding");
}

TEST(AuditFindings, DemangledNamesForDisplay) {
  EXPECT_EQ(demangle("_Z10k_wait_ptxPfPKf"), "k_wait_ptx(float*, float const*)");
  EXPECT_EQ(demangle("fc_audit_fixture_pdl_oneshot"), "fc_audit_fixture_pdl_oneshot");
}

// Splits a listing into its "Fatbin ... code:" sections (the text before the first is kept
// as section 0).
std::vector<std::string> split_sections(const std::string& text) {
  std::vector<std::string> sections(1);
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.rfind("Fatbin ", 0) == 0) sections.emplace_back();
    sections.back() += line + "\n";
    start = end + 1;
  }
  return sections;
}

std::string remove_wait_lines(const std::string& section) {
  std::string kept;
  std::size_t start = 0;
  while (start < section.size()) {
    const auto end = section.find('\n', start);
    const std::string line = section.substr(start, end - start + 1);
    if (line.find("ACQBULK") == std::string::npos &&
        line.find("griddepcontrol.wait") == std::string::npos)
      kept += line;
    start = end + 1;
  }
  return kept;
}

RC_GTEST_PROP(AuditFindingsProperty, WaitDeletedFromAnyOneSectionIsFlaggedThere, ()) {
  static const std::vector<std::string> sections =
      split_sections(read_fixture("pdl_correct.listing.txt"));
  std::vector<std::size_t> with_code;
  for (std::size_t i = 1; i < sections.size(); ++i)
    if (sections[i].find("griddepcontrol.wait") != std::string::npos ||
        sections[i].find("ACQBULK") != std::string::npos)
      with_code.push_back(i);
  RC_ASSERT(with_code.size() == 6u);
  const std::size_t victim = *rc::gen::elementOf(with_code);
  std::string text;
  for (std::size_t i = 0; i < sections.size(); ++i)
    text += i == victim ? remove_wait_lines(sections[i]) : sections[i];
  const Listing victim_listing = parse_listing(sections[victim]);
  RC_ASSERT(!victim_listing.functions.empty());
  const std::string arch = victim_listing.functions.front().arch;
  const std::string source(source_name(victim_listing.functions.front().source));

  const FileReport report = audit_listing("mutated", parse_listing(text), {});
  const auto keys = finding_keys(report);
  RC_ASSERT(contains(keys, "pdl-wait-missing " + arch + " " + source + " " + kPdlKernel));
  RC_ASSERT(contains(keys, "sync-differs-between-archs " + arch + " " + source + " " + kPdlKernel));
  RC_ASSERT(keys.size() == 2u);
}

RC_GTEST_PROP(AuditFindingsProperty, SectionOrderDoesNotChangeTheReport, ()) {
  for (const char* fixture : {"pdl_correct.listing.txt", "pdl_empty_body.listing.txt"}) {
    const std::string text = read_fixture(fixture);
    auto sections = split_sections(text);
    std::vector<std::size_t> order;
    for (std::size_t i = 1; i < sections.size(); ++i) order.push_back(i);
    std::shuffle(order.begin(), order.end(), std::mt19937(*rc::gen::arbitrary<std::uint32_t>()));
    std::string reordered = sections[0];
    for (std::size_t index : order) reordered += sections[index];
    RC_ASSERT(to_json({audit_listing("x", parse_listing(reordered), {})}) ==
              to_json({audit_listing("x", parse_listing(text), {})}));
  }
}

}  // namespace
}  // namespace fusioncheck::audit
