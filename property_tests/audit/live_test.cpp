// Live audit: cuobjdump run on fixture binaries compiled by this build for 90;100;120, and
// the bounded, fail-clean behaviour of the cuobjdump runner. Skips (visibly) when cuobjdump
// or the fixture binaries (no nvcc at build time) are missing.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fusioncheck/audit/audit.hpp"
#include "fusioncheck/audit/cuobjdump.hpp"

// Without nvcc at build time there are no fixture binaries: their tests skip.
#ifndef FC_AUDIT_HAVE_FIXTURE_BINARIES
#define FC_AUDIT_HAVE_FIXTURE_BINARIES 0
#define FC_AUDIT_BIN_CORRECT ""
#define FC_AUDIT_BIN_WAIT_MISSING ""
#define FC_AUDIT_BIN_EMPTY_BODY ""
#define FC_AUDIT_BIN_WAIT_MISSING_SASS_ONLY ""
#define FC_AUDIT_BIN_WAIT_MISSING_PTX_ONLY ""
#define FC_AUDIT_BIN_WAIT_MISSING_OBJECT ""
#define FC_AUDIT_BIN_EMPTY_BODY_EXECUTABLE ""
#endif

namespace fusioncheck::audit {
namespace {

constexpr auto kTimeLimit = std::chrono::seconds(120);
constexpr const char* kPdlKernel = "fc_audit_fixture_pdl_oneshot";

// cuobjdump's path, or a skip reason.
std::optional<std::string> usable_cuobjdump(std::string& why_not) {
  const auto tool = find_cuobjdump();
  if (!tool) {
    why_not = std::string("cuobjdump not found; install it with: ") + kCuobjdumpInstallHint;
    return std::nullopt;
  }
  return tool;
}

#define REQUIRE_CUOBJDUMP(tool)                \
  std::string why_not;                         \
  const auto tool = usable_cuobjdump(why_not); \
  if (!tool) GTEST_SKIP() << why_not;

#define REQUIRE_FIXTURE_BINARIES() \
  if (!FC_AUDIT_HAVE_FIXTURE_BINARIES) GTEST_SKIP() << "fixture binaries need nvcc at build time";

// Audits one binary; a cuobjdump that cannot show SASS (no nvdisasm) is a skip, not a pass.
std::optional<FileReport> audit_binary(const std::string& tool, const std::string& file,
                                       const AuditOptions& options = {}) {
  try {
    return audit_listing(file, dump_listing(tool, file, kTimeLimit), options);
  } catch (const AuditInputError& e) {
    if (std::string(e.what()).find("nvdisasm") != std::string::npos) return std::nullopt;
    throw;
  }
}

#define AUDIT_OR_SKIP(report, tool, file)        \
  const auto report = audit_binary(*tool, file); \
  if (!report)                                   \
    GTEST_SKIP() << "cuobjdump cannot find nvdisasm; install it with: " << kCuobjdumpInstallHint;

std::set<std::string> findings_of(const FileReport& report, FindingKind kind) {
  std::set<std::string> where;
  for (const auto& f : report.findings)
    if (f.kind == kind)
      where.insert(f.arch + " " + std::string(source_name(f.source)) + " " + f.kernel);
  return where;
}

std::set<std::string> code_of(const FileReport& report, const std::string& kernel) {
  std::set<std::string> where;
  for (const auto& k : report.kernels)
    if (k.name == kernel)
      for (const auto& c : k.code) where.insert(c.arch + " " + std::string(source_name(c.source)));
  return where;
}

const std::string kSm120Sass = std::string("sm_120 SASS ") + kPdlKernel;
const std::string kSm120Ptx = std::string("sm_120 PTX ") + kPdlKernel;

TEST(AuditLive, CorrectBuildIsClean) {
  REQUIRE_FIXTURE_BINARIES();
  REQUIRE_CUOBJDUMP(tool);
  AUDIT_OR_SKIP(report, tool, FC_AUDIT_BIN_CORRECT);
  EXPECT_TRUE(report->findings.empty());
  EXPECT_EQ(code_of(*report, kPdlKernel),
            (std::set<std::string>{"sm_90 SASS", "sm_100 SASS", "sm_120 SASS", "sm_90 PTX",
                                   "sm_100 PTX", "sm_120 PTX"}));
}

TEST(AuditLive, PdlWaitMissingMutantFlaggedOnSm120) {
  REQUIRE_FIXTURE_BINARIES();
  REQUIRE_CUOBJDUMP(tool);
  AUDIT_OR_SKIP(report, tool, FC_AUDIT_BIN_WAIT_MISSING);
  EXPECT_EQ(findings_of(*report, FindingKind::kPdlWaitMissing),
            (std::set<std::string>{kSm120Sass, kSm120Ptx}));
  EXPECT_EQ(findings_of(*report, FindingKind::kSyncDiffersBetweenArchs),
            (std::set<std::string>{kSm120Sass, kSm120Ptx}));
  EXPECT_TRUE(findings_of(*report, FindingKind::kEmptyBody).empty());
}

TEST(AuditLive, EmptyBodyMutantFlaggedOnSm120) {
  REQUIRE_FIXTURE_BINARIES();
  REQUIRE_CUOBJDUMP(tool);
  AUDIT_OR_SKIP(report, tool, FC_AUDIT_BIN_EMPTY_BODY);
  EXPECT_EQ(findings_of(*report, FindingKind::kEmptyBody),
            (std::set<std::string>{kSm120Sass, kSm120Ptx}));
  for (const auto& f : report->findings) EXPECT_EQ(f.arch, "sm_120");
}

TEST(AuditLive, SassOnlyBinary) {
  REQUIRE_FIXTURE_BINARIES();
  REQUIRE_CUOBJDUMP(tool);
  AUDIT_OR_SKIP(report, tool, FC_AUDIT_BIN_WAIT_MISSING_SASS_ONLY);
  EXPECT_EQ(code_of(*report, kPdlKernel),
            (std::set<std::string>{"sm_90 SASS", "sm_100 SASS", "sm_120 SASS"}));
  EXPECT_EQ(findings_of(*report, FindingKind::kPdlWaitMissing), std::set<std::string>{kSm120Sass});
}

TEST(AuditLive, PtxOnlyBinary) {
  REQUIRE_FIXTURE_BINARIES();
  REQUIRE_CUOBJDUMP(tool);
  AUDIT_OR_SKIP(report, tool, FC_AUDIT_BIN_WAIT_MISSING_PTX_ONLY);
  EXPECT_EQ(code_of(*report, kPdlKernel),
            (std::set<std::string>{"sm_90 PTX", "sm_100 PTX", "sm_120 PTX"}));
  EXPECT_EQ(findings_of(*report, FindingKind::kPdlWaitMissing), std::set<std::string>{kSm120Ptx});
}

TEST(AuditLive, RelocatableObject) {
  REQUIRE_FIXTURE_BINARIES();
  REQUIRE_CUOBJDUMP(tool);
  AUDIT_OR_SKIP(report, tool, FC_AUDIT_BIN_WAIT_MISSING_OBJECT);
  EXPECT_EQ(findings_of(*report, FindingKind::kPdlWaitMissing),
            (std::set<std::string>{kSm120Sass, kSm120Ptx}));
}

TEST(AuditLive, Executable) {
  REQUIRE_FIXTURE_BINARIES();
  REQUIRE_CUOBJDUMP(tool);
  AUDIT_OR_SKIP(report, tool, FC_AUDIT_BIN_EMPTY_BODY_EXECUTABLE);
  EXPECT_EQ(findings_of(*report, FindingKind::kEmptyBody),
            (std::set<std::string>{kSm120Sass, kSm120Ptx}));
}

TEST(AuditLive, HostOnlyBinaryIsNotACudaBinary) {
  REQUIRE_CUOBJDUMP(tool);
  try {
    dump_listing(*tool, "/bin/true", kTimeLimit);
    FAIL() << "expected AuditInputError";
  } catch (const AuditInputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a CUDA binary"), std::string::npos) << e.what();
  }
}

TEST(AuditRunner, MissingFileIsReportedBeforeRunningAnything) {
  try {
    dump_listing("/nonexistent/cuobjdump", "/nonexistent/lib.so", kTimeLimit);
    FAIL() << "expected AuditInputError";
  } catch (const AuditInputError& e) {
    EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
  }
}

// A stand-in cuobjdump that never finishes: the runner must kill it at the time limit.
TEST(AuditRunner, HangingToolIsKilledAtTheTimeLimit) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fc_audit_hang_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto script = dir / "cuobjdump";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\nsleep 30\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const auto start = std::chrono::steady_clock::now();
  try {
    dump_listing(script.string(), "/bin/true", std::chrono::milliseconds(300));
    ADD_FAILURE() << "expected a timeout";
  } catch (const AuditInputError& e) {
    EXPECT_NE(std::string(e.what()).find("did not finish"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  std::filesystem::remove_all(dir);
}

TEST(AuditRunner, CuobjdumpFromTheEnvironmentVariable) {
  const char* saved = std::getenv("CUOBJDUMP");
  const std::optional<std::string> restore =
      saved ? std::optional<std::string>(saved) : std::nullopt;
  ::setenv("CUOBJDUMP", "/bin/true", 1);
  EXPECT_EQ(find_cuobjdump(), std::optional<std::string>("/bin/true"));
  ::setenv("CUOBJDUMP", "/nonexistent/cuobjdump", 1);
  EXPECT_EQ(find_cuobjdump(), std::nullopt);  // an explicit choice is never silently replaced
  if (restore) ::setenv("CUOBJDUMP", restore->c_str(), 1);
  else ::unsetenv("CUOBJDUMP");
}

}  // namespace
}  // namespace fusioncheck::audit
