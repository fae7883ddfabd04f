// The release diff (audit/release_diff.hpp) on hand-made reports: what counts as a finding, a
// renamed kernel, an architecture dropped, three releases as two steps, saved reports read back.
#include "fusioncheck/audit/release_diff.hpp"

#include <gtest/gtest.h>

#include "fusioncheck/audit/cuobjdump.hpp"

namespace fa = fusioncheck::audit;

namespace {

fa::KernelReport kernel(
    const std::string& name,
    const std::vector<std::pair<std::string, std::map<std::string, int>>>& codes) {
  fa::KernelReport k;
  k.name = name;
  k.mangled = "_Z" + name;
  for (const auto& [arch, sync] : codes) {
    fa::FunctionCode c;
    c.mangled = k.mangled;
    c.arch = arch;
    c.sync_counts = sync;
    k.code.push_back(c);
  }
  return k;
}

fa::Release release(const std::string& label, std::vector<fa::KernelReport> kernels) {
  fa::FileReport file;
  file.path = label + ".so";
  file.kernels = std::move(kernels);
  return {label, {file}};
}

}  // namespace

TEST(ReleaseDiff, LostWaitsFencesAndAcquiresAreFindingsOtherLossesNotes) {
  EXPECT_TRUE(fa::lost_class_is_finding("griddep.wait"));
  EXPECT_TRUE(fa::lost_class_is_finding("fence.sys"));
  EXPECT_TRUE(fa::lost_class_is_finding("fence.proxy"));
  EXPECT_TRUE(fa::lost_class_is_finding("ld.acquire.gpu"));
  EXPECT_FALSE(fa::lost_class_is_finding("griddep.trigger"));
  EXPECT_FALSE(fa::lost_class_is_finding("atom.gpu"));
  const auto steps = fa::diff_releases(
      {release("1.0", {kernel("ar", {{"sm_90",
                                      {{"griddep.wait", 1}, {"fence.sys", 2}, {"atom.gpu", 1}}}})}),
       release("1.1", {kernel("ar", {{"sm_90", {{"griddep.wait", 1}, {"griddep.trigger", 1}}}})})});
  ASSERT_EQ(steps.size(), 1u);
  ASSERT_EQ(steps[0].changes.size(), 1u);
  const fa::KernelChange& c = steps[0].changes[0];
  EXPECT_EQ(c.lost, (std::vector<std::string>{"atom.gpu", "fence.sys"}));
  EXPECT_EQ(c.gained, (std::vector<std::string>{"griddep.trigger"}));
  EXPECT_TRUE(c.finding);  // the fence
  EXPECT_EQ(fa::count_findings(steps), 1u);
  // Negative control: losing only an atomic is a note.
  const auto atom_only =
      fa::diff_releases({release("1.0", {kernel("ar", {{"sm_90", {{"atom.gpu", 1}}}})}),
                         release("1.1", {kernel("ar", {{"sm_90", {}}})})});
  EXPECT_EQ(fa::count_findings(atom_only), 0u);
  EXPECT_EQ(atom_only[0].changes.size(), 1u);
}

TEST(ReleaseDiff, ARenamedKernelIsGoneAndNewNotCompared) {
  const auto steps =
      fa::diff_releases({release("a", {kernel("allreduce_v1", {{"sm_90", {{"griddep.wait", 1}}}})}),
                         release("b", {kernel("allreduce_v2", {{"sm_90", {}}})})});
  EXPECT_EQ(steps[0].matched, 0u);
  EXPECT_EQ(steps[0].gone, (std::vector<std::string>{"allreduce_v1"}));
  EXPECT_EQ(steps[0].added, (std::vector<std::string>{"allreduce_v2"}));
  EXPECT_EQ(fa::count_findings(steps), 0u);
  EXPECT_NE(fa::format_table(steps).find("gone: allreduce_v1"), std::string::npos);
}

TEST(ReleaseDiff, ArchitecturesAddedOrDroppedAreNotedAndThreeReleasesMakeTwoSteps) {
  const auto steps = fa::diff_releases(
      {release("r1",
               {kernel("k", {{"sm_90", {{"fence.gpu", 1}}}, {"sm_100", {{"fence.gpu", 1}}}})}),
       release("r2", {kernel("k", {{"sm_90", {{"fence.gpu", 1}}}})}),
       release("r3", {kernel("k", {{"sm_90", {}}, {"sm_120", {{"fence.gpu", 1}}}})})});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].codes_changed, (std::vector<std::string>{"k: sm_100 SASS dropped"}));
  EXPECT_TRUE(steps[0].changes.empty());  // sm_100 dropped whole: no class lost on a shared arch
  EXPECT_EQ(steps[1].codes_changed, (std::vector<std::string>{"k: sm_120 SASS added"}));
  ASSERT_EQ(steps[1].changes.size(), 1u);
  EXPECT_TRUE(steps[1].changes[0].finding);  // sm_90 lost its fence
  EXPECT_EQ(fa::to_json(steps)[1]["changes"][0]["severity"], "finding");
  EXPECT_THROW(fa::diff_releases({release("only", {})}), std::invalid_argument);
}

// A release's audit saved by `audit --json` and read back diffs as the audit itself does.
TEST(ReleaseDiff, ASavedReportReadsBackAndDiffsAsTheAuditItself) {
  const fa::Release old_release =
      release("1.0", {kernel("ar", {{"sm_90", {{"griddep.wait", 1}, {"fence.sys", 1}}},
                                    {"sm_120", {{"griddep.wait", 1}}}})});
  const fa::Release new_release =
      release("1.1", {kernel("ar", {{"sm_90", {{"fence.sys", 1}}}, {"sm_120", {}}})});
  const auto direct = fa::diff_releases({old_release, new_release});
  const fa::Release old_saved{"1.0", fa::file_reports_from_json(fa::to_json(old_release.files))};
  const fa::Release new_saved{"1.1", fa::file_reports_from_json(fa::to_json(new_release.files))};
  const auto read_back = fa::diff_releases({old_saved, new_saved});
  EXPECT_EQ(fa::count_findings(direct), 2u);  // the wait, on sm_90 and on sm_120
  EXPECT_EQ(fa::to_json(read_back), fa::to_json(direct));
  // Negative control: the same saved report on both sides has nothing to say.
  EXPECT_EQ(fa::count_findings(fa::diff_releases({old_saved, old_saved})), 0u);
}

TEST(ReleaseDiff, AMalformedSavedReportIsRefusedNamingTheField) {
  const auto refused = [](const nlohmann::json& report) -> std::string {
    try {
      fa::file_reports_from_json(report);
    } catch (const fa::AuditInputError& e) {
      return e.what();
    }
    return "";
  };
  const nlohmann::json good =
      fa::to_json(release("1.0", {kernel("ar", {{"sm_90", {{"griddep.wait", 1}}}})}).files);
  EXPECT_EQ(refused(good), "");  // control
  EXPECT_NE(refused(nlohmann::json::array()).find("not an audit report"), std::string::npos);
  nlohmann::json no_files = good;
  no_files.erase("files");
  EXPECT_NE(refused(no_files).find("no array \"files\""), std::string::npos);
  nlohmann::json bad_source = good;
  bad_source["files"][0]["kernels"][0]["code"][0]["source"] = "CUBIN";
  EXPECT_NE(refused(bad_source).find("files[0].kernels[0].code[0]: source \"CUBIN\""),
            std::string::npos);
  nlohmann::json bad_arch = good;
  bad_arch["files"][0]["kernels"][0]["code"][0]["arch"] = "gfx942";
  EXPECT_NE(refused(bad_arch).find("names no architecture"), std::string::npos);
  nlohmann::json bad_count = good;
  bad_count["files"][0]["kernels"][0]["code"][0]["sync"]["griddep.wait"] = "one";
  EXPECT_NE(refused(bad_count).find("sync class \"griddep.wait\" has no count"), std::string::npos);
  nlohmann::json no_name = good;
  no_name["files"][0]["kernels"][0].erase("name");
  EXPECT_NE(refused(no_name).find("files[0].kernels[0]: no string \"name\""), std::string::npos);
}
