// Reading a binary in pieces: the fatbin entries and cubin functions found without cuobjdump
// (device_code.hpp), the architecture selection, the pool of child runs, and the one
// property that matters: the audit of the pieces equals the audit of the whole file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "fixture_binaries.hpp"
#include "fusioncheck/audit/audit.hpp"
#include "fusioncheck/audit/cuobjdump.hpp"
#include "fusioncheck/audit/device_code.hpp"
#include "fusioncheck/audit/process.hpp"

namespace fusioncheck::audit {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(ArchSelection, PlainFloorAndSuffixedItems) {
  EXPECT_TRUE(arch_selected({}, "sm_75"));
  EXPECT_TRUE(arch_selected({"sm_90+"}, "sm_90"));
  EXPECT_TRUE(arch_selected({"sm_90+"}, "sm_90a"));
  EXPECT_TRUE(arch_selected({"sm_90+"}, "sm_120f"));
  EXPECT_FALSE(arch_selected({"sm_90+"}, "sm_89"));
  EXPECT_TRUE(arch_selected({"sm_120"}, "sm_120a"));  // as cuobjdump's -arch
  EXPECT_FALSE(arch_selected({"sm_120a"}, "sm_120"));
  EXPECT_FALSE(arch_selected({"sm_120a"}, "sm_120f"));
  EXPECT_TRUE(arch_selected({"sm_80", "sm_120a"}, "sm_120a"));
  EXPECT_FALSE(arch_selected({"sm_100+"}, "sm_90a"));
  EXPECT_TRUE(arch_number_selected({"sm_120a"}, 120));
  EXPECT_FALSE(arch_number_selected({"sm_90+"}, 89));
  EXPECT_TRUE(is_arch_selector("sm_90+"));
  EXPECT_FALSE(is_arch_selector("sm_90a+"));
  EXPECT_FALSE(is_arch_selector("compute_90"));
}

TEST(FunctionBatches, BoundedByCodeAndCountWithALargeFunctionAlone) {
  const std::vector<CubinFunction> functions{{"a", 3, 1}, {"b", 3, 2}, {"c", 10, 3},
                                             {"d", 1, 4}, {"e", 1, 5}, {"f", 1, 6}};
  const auto batches = function_batches(functions, 6, 2);
  EXPECT_EQ(batches, (std::vector<std::vector<std::uint32_t>>{{1, 2}, {3}, {4, 5}, {6}}));
  EXPECT_TRUE(function_batches({}, 6, 2).empty());
}

std::filesystem::path scratch(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fc_audit_pieces_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

TEST(DeviceCodeLayout, HostBinaryWithoutFatbinHasNoEntries) {
  const DeviceCodeLayout layout = read_device_code_layout("/bin/true");
  EXPECT_EQ(layout.kind, ContainerKind::kHostElf);
  EXPECT_TRUE(layout.entries.empty());
}

TEST(DeviceCodeLayout, UnknownFormsFallBackToTheWholeFile) {
  const auto archive = scratch("lib.a");
  std::ofstream(archive, std::ios::binary) << "!<arch>\nmember of an archive";
  EXPECT_THROW(read_device_code_layout(archive.string()), LayoutUnknown);
  // A fatbin whose stated size runs past the end of the file.
  const auto truncated = scratch("truncated.fatbin");
  std::ofstream(truncated, std::ios::binary)
      << std::string("\x50\xed\x55\xba\x01\x00\x10\x00\x00\x10\x00\x00\x00\x00\x00\x00", 16)
      << std::string(32, '\0');
  EXPECT_THROW(read_device_code_layout(truncated.string()), LayoutUnknown);
  std::filesystem::remove_all(archive.parent_path());
}

#define REQUIRE_FIXTURES_AND_CUOBJDUMP(tool)                                                       \
  if (!FC_AUDIT_HAVE_FIXTURE_BINARIES) GTEST_SKIP() << "fixture binaries need nvcc at build time"; \
  const auto tool = find_cuobjdump();                                                              \
  if (!tool) GTEST_SKIP() << "cuobjdump not found; install it with: " << kCuobjdumpInstallHint;

// nvcc for 90;100;120 puts SASS and PTX of each into the library's fatbin.
TEST(DeviceCodeLayout, FixtureLibraryHoldsSassAndPtxPerArchitecture) {
  if (!FC_AUDIT_HAVE_FIXTURE_BINARIES) GTEST_SKIP() << "fixture binaries need nvcc at build time";
  const DeviceCodeLayout layout = read_device_code_layout(FC_AUDIT_BIN_CORRECT);
  EXPECT_EQ(layout.kind, ContainerKind::kHostElf);
  std::multiset<std::string> seen;
  for (const FatbinEntry& e : layout.entries)
    seen.insert((e.is_ptx ? "ptx " : "elf ") + std::to_string(e.arch) + e.arch_suffix);
  EXPECT_EQ(seen, (std::multiset<std::string>{"elf 90", "elf 100", "elf 120", "ptx 90", "ptx 100",
                                              "ptx 120"}));
}

// The property the piece reader stands on: for every fixture (a library, SASS only, PTX
// only, an object, an executable) the report is the one of a single cuobjdump run.
TEST(DumpInPieces, EqualsTheWholeFile) {
  REQUIRE_FIXTURES_AND_CUOBJDUMP(tool);
  for (const char* file : {FC_AUDIT_BIN_CORRECT, FC_AUDIT_BIN_WAIT_MISSING, FC_AUDIT_BIN_EMPTY_BODY,
                           FC_AUDIT_BIN_WAIT_MISSING_SASS_ONLY, FC_AUDIT_BIN_WAIT_MISSING_PTX_ONLY,
                           FC_AUDIT_BIN_WAIT_MISSING_OBJECT, FC_AUDIT_BIN_EMPTY_BODY_EXECUTABLE}) {
    DumpOptions options;
    options.parallel = 3;
    options.batch_text_bytes = 1;  // every function in a batch of its own
    const FileReport pieces = audit_listing(file, dump_listing(*tool, file, options), {});
    options.in_pieces = false;
    const FileReport whole = audit_listing(file, dump_listing(*tool, file, options), {});
    EXPECT_FALSE(whole.kernels.empty()) << file;
    EXPECT_EQ(to_json({pieces}).dump(1), to_json({whole}).dump(1)) << file;
  }
}

// The selection is applied to the pieces: sm_100+ leaves out the sm_90 code, sm_120a (which
// the fixture lacks: it has sm_120) leaves nothing, which is no code for that selection.
TEST(DumpInPieces, SelectionOfArchitectures) {
  REQUIRE_FIXTURES_AND_CUOBJDUMP(tool);
  DumpOptions options;
  options.archs = {"sm_100+"};
  std::set<std::string> archs;
  for (const auto& f : dump_listing(*tool, FC_AUDIT_BIN_CORRECT, options).functions)
    archs.insert(f.arch);
  EXPECT_EQ(archs, (std::set<std::string>{"sm_100", "sm_120"}));
  options.archs = {"sm_120a"};
  EXPECT_THROW(dump_listing(*tool, FC_AUDIT_BIN_CORRECT, options), NoDeviceCodeError);
}

ChildTask shell_task(const std::string& script, std::function<void(const ChildResult&)> on_exit) {
  ChildTask task;
  task.argv = {"/bin/sh", "-c", script};
  task.on_exit = std::move(on_exit);
  return task;
}

// Two runs of 1 s take about 1 s side by side and 2 s one after the other.
TEST(ChildPool, RunsSideBySideUpToItsLimit) {
  for (const std::size_t parallel : {std::size_t{1}, std::size_t{2}}) {
    ChildPool pool(parallel, std::chrono::seconds(30));
    int ended = 0;
    for (int i = 0; i < 2; ++i)
      pool.add(shell_task("sleep 1", [&](const ChildResult&) { ++ended; }));
    const auto start = steady_clock::now();
    pool.run();
    const auto took = steady_clock::now() - start;
    EXPECT_EQ(ended, 2);
    if (parallel == 1) EXPECT_GE(took, milliseconds(1900));
    else EXPECT_LT(took, milliseconds(1900));
  }
}

// A task added by another's on_exit runs; its output lines arrive; an exit code is kept.
TEST(ChildPool, TasksAddedOnExitRunAndReportTheirOutput) {
  ChildPool pool(2, std::chrono::seconds(30));
  std::vector<std::string> lines;
  int second_status = -2;
  pool.add(shell_task("echo first", [&](const ChildResult&) {
    ChildTask next = shell_task("echo second; exit 3",
                                [&](const ChildResult& r) { second_status = r.exit_status; });
    next.on_line = [&](std::string_view line) { lines.emplace_back(line); };
    pool.add(std::move(next));
  }));
  pool.run();
  EXPECT_EQ(lines, (std::vector<std::string>{"second"}));
  EXPECT_EQ(second_status, 3);
}

// A task whose input cannot be written (prepare throws) ends the run with that error, the
// running child ended with it.
TEST(ChildPool, AFailedPrepareEndsTheRun) {
  ChildPool pool(2, std::chrono::seconds(60));
  pool.add(shell_task("exec sleep 30", nullptr));
  ChildTask broken = shell_task("true", nullptr);
  broken.prepare = [] { throw AuditInputError("cannot write the piece"); };
  pool.add(std::move(broken));
  const auto start = steady_clock::now();
  EXPECT_THROW(pool.run(), AuditInputError);
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(10));
}

// A task that throws ends the others at once: the run does not wait for a 30 s sleep.
TEST(ChildPool, AnErrorEndsTheRunningChildren) {
  const auto pid_file = scratch("sleeper.pid");
  ChildPool pool(2, std::chrono::seconds(60));
  pool.add(shell_task("echo $$ > " + pid_file.string() + "; exec sleep 30", nullptr));
  pool.add(shell_task("sleep 0.5; exit 1", [](const ChildResult& r) {
    if (r.exit_status != 0) throw AuditInputError("a run failed");
  }));
  const auto start = steady_clock::now();
  EXPECT_THROW(pool.run(), AuditInputError);
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(10));
  std::ifstream in(pid_file);
  pid_t sleeper = 0;
  in >> sleeper;
  ASSERT_GT(sleeper, 0);
  EXPECT_NE(::kill(sleeper, 0), 0) << "the sleeping child is still running";
  std::filesystem::remove_all(pid_file.parent_path());
}

}  // namespace
}  // namespace fusioncheck::audit
