// Live audit: cuobjdump run on fixture binaries compiled by this build for 90;100;120, and
// the bounded, fail-clean behaviour of the cuobjdump runner. Skips (visibly) when cuobjdump
// or the fixture binaries (no nvcc at build time) are missing.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fusioncheck/audit/audit.hpp"
#include "fusioncheck/audit/cuobjdump.hpp"
#include "fusioncheck/audit/inputs.hpp"

#include "fixture_binaries.hpp"

namespace fusioncheck::audit {
namespace {

constexpr auto kTimeLimit = std::chrono::seconds(120);

// Every architecture's code, in pieces (the default reader) or whole, `parallel` runs at once.
DumpOptions dump_options(std::chrono::milliseconds limit = kTimeLimit, bool in_pieces = true,
                         std::size_t parallel = 2) {
  DumpOptions options;
  options.time_limit = limit;
  options.in_pieces = in_pieces;
  options.parallel = parallel;
  return options;
}

// A fatbin of two empty PTX entries for sm_90: the piece reader hands cuobjdump two runs.
void write_two_entry_fatbin(const std::filesystem::path& path) {
  std::string entry(64, '\0');
  entry[0] = 1;    // kind: PTX
  entry[4] = 64;   // header size
  entry[28] = 90;  // arch
  std::string header("\x50\xed\x55\xba\x01\x00\x10\x00", 8);
  header += std::string("\x80\0\0\0\0\0\0\0", 8);  // two entries of 64 bytes follow
  std::ofstream(path, std::ios::binary) << header << entry << entry;
}
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
    return audit_listing(file, dump_listing(tool, file, dump_options()), options);
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
    dump_listing(*tool, "/bin/true", dump_options());
    FAIL() << "expected AuditInputError";
  } catch (const AuditInputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a CUDA binary"), std::string::npos) << e.what();
  }
}

TEST(AuditRunner, MissingFileIsReportedBeforeRunningAnything) {
  try {
    dump_listing("/nonexistent/cuobjdump", "/nonexistent/lib.so", dump_options());
    FAIL() << "expected AuditInputError";
  } catch (const AuditInputError& e) {
    EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
  }
}

// A stand-in cuobjdump that never finishes: the runner must kill it at the time limit, one
// run over a whole file as well as two pieces run at once.
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
  write_two_entry_fatbin(dir / "two.fatbin");
  for (const bool in_pieces : {false, true}) {
    const auto start = std::chrono::steady_clock::now();
    try {
      dump_listing(script.string(), (dir / "two.fatbin").string(),
                   dump_options(std::chrono::milliseconds(300), in_pieces));
      ADD_FAILURE() << "expected a timeout";
    } catch (const AuditInputError& e) {
      EXPECT_NE(std::string(e.what()).find("did not finish"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << in_pieces;
  }
  std::filesystem::remove_all(dir);
}

// A folder's files are picked by their first bytes: ELF, fatbin and archives, in subfolders
// too; text is never handed to cuobjdump, and a folder with nothing else is bad input.
TEST(AuditInputs, FolderFilesArePickedByTheirFirstBytes) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("fc_audit_inputs_" + std::to_string(::getpid()));
  fs::create_directories(dir / "sub");
  const auto write = [](const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  };
  write(dir / "notes.txt", "not a binary\n");
  try {
    files_in_folder(dir.string());
    ADD_FAILURE() << "expected AuditInputError";
  } catch (const AuditInputError& e) {
    EXPECT_NE(std::string(e.what()).find("may hold device code"), std::string::npos) << e.what();
  }
  write(dir / "sub" / "kernels.fatbin", std::string("\x50\xed\x55\xba\x01\x00\x10\x00", 8));
  write(dir / "lib.a", "!<arch>\nmember");
  fs::copy_file("/bin/true", dir / "tool");
  fs::create_symlink(dir / "tool", dir / "link_to_tool");
  EXPECT_EQ(
      files_in_folder(dir.string()),
      (std::vector<std::string>{(dir / "lib.a").string(), (dir / "sub/kernels.fatbin").string(),
                                (dir / "tool").string()}));
  EXPECT_FALSE(may_hold_device_code((dir / "notes.txt").string()));
  EXPECT_FALSE(may_hold_device_code((dir / "missing").string()));
  fs::remove_all(dir);
}

// Whether process `pid` ends (or is a zombie) within 5 s.
bool ends_soon(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    if (text.empty() || text.find(") Z") != std::string::npos) return true;
    ::usleep(50 * 1000);
  }
  return false;
}

// Audits with a stand-in cuobjdump that sleeps, in a child process that gets `signal_number`
// once the stand-in runs; returns the stand-in's pid.
pid_t stand_in_after_signal(const std::filesystem::path& dir, int signal_number) {
  const auto pid_file = dir / "child.pid";
  std::filesystem::remove(pid_file);
  const pid_t auditor = ::fork();
  if (auditor == 0) {
    try {
      dump_listing((dir / "cuobjdump").string(), (dir / "one.fatbin").string(),
                   dump_options(std::chrono::seconds(60), /*in_pieces=*/false));
    } catch (...) {}
    ::_exit(0);
  }
  std::string text;
  for (int i = 0; i < 200 && text.empty(); ++i) {
    ::usleep(50 * 1000);
    std::ifstream in(pid_file);
    std::getline(in, text);
  }
  ::kill(auditor, signal_number);
  int status = 0;
  ::waitpid(auditor, &status, 0);
  return text.empty() ? -1 : static_cast<pid_t>(std::stol(text));
}

// SIGTERM and SIGINT end the running cuobjdump; SIGKILL, which no handler sees, leaves it
// running (the negative control: the check does see a process left behind).
TEST(AuditRunner, TermAndIntEndTheRunningCuobjdump) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fc_audit_signal_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "cuobjdump");
    out << "#!/bin/sh\necho $$ > " << (dir / "child.pid").string() << "\nexec sleep 60\n";
  }
  std::filesystem::permissions(dir / "cuobjdump", std::filesystem::perms::owner_all);
  write_two_entry_fatbin(dir / "one.fatbin");
  for (int signal_number : {SIGTERM, SIGINT}) {
    const pid_t stand_in = stand_in_after_signal(dir, signal_number);
    ASSERT_GT(stand_in, 0) << "the stand-in cuobjdump did not start";
    EXPECT_TRUE(ends_soon(stand_in)) << "signal " << signal_number << " left cuobjdump running";
    ::kill(stand_in, SIGKILL);
  }
  const pid_t left = stand_in_after_signal(dir, SIGKILL);
  ASSERT_GT(left, 0);
  EXPECT_FALSE(ends_soon(left));
  ::kill(left, SIGKILL);
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
