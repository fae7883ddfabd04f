// The GPU suite's case values and option checks, on the CPU (no device is touched).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <unistd.h>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/gpu_check.hpp"
#include "fusioncheck/gpu/gpu_report.hpp"
#include "fusioncheck/gpu/gpu_runs.hpp"
#include "fusioncheck/gpu/row_share.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/gpu/wait_start.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"
#include "gpu_case_fixtures.hpp"

#include <filesystem>
#include <fstream>

namespace {

namespace fg = fusioncheck::gpu;
namespace fk = fusioncheck::kernels;
using fusioncheck::gpu::testing::Edit;
using fusioncheck::gpu::testing::expect_each_edit_refused;
using fusioncheck::gpu::testing::full_case;

// A negative control's id as the library carries it.
fg::MutantId M(const char* id) { return fg::MutantId(id); }

TEST(GpuCase, JsonRoundTripKeepsEveryField) {
  const fg::GpuCase c = full_case();
  const auto j = fg::to_json(c);
  const fg::GpuCase back = fg::case_from_json(j);
  EXPECT_EQ(fg::to_json(back), j);
  EXPECT_EQ(back.delay_seed, 12345u);
  EXPECT_TRUE(back.calls[0].pdl_consumer);
  EXPECT_TRUE(back.calls[0].pdl_producer);
  EXPECT_EQ(back.calls[0].producer_delay_ns, 20'000u);
  EXPECT_FALSE(back.calls[1].pdl_producer);
  EXPECT_TRUE(back.calls[2].unfused);
  EXPECT_FALSE(back.calls[1].norm_out);
  EXPECT_NE(fg::describe(back.calls[1]).find("(no norm_out)"), std::string::npos);
  EXPECT_EQ(fg::describe(back), fg::describe(c));
  // The case block and the one-line description show the producer.
  EXPECT_NE(fg::describe_block(back).find("after 20000 ns"), std::string::npos)
      << fg::describe_block(back);
  EXPECT_NE(fg::describe(back.calls[0]).find("+producer(20000ns)"), std::string::npos);
}

TEST(GpuCase, TheTwoStreamsModeTravelsByName) {
  fg::GpuCase c = full_case();
  c.mode = fg::IssueMode::two_streams;
  const auto j = fg::to_json(c);
  EXPECT_EQ(j["mode"], "two-streams");
  EXPECT_EQ(fg::case_from_json(j).mode, fg::IssueMode::two_streams);
  EXPECT_NE(fg::describe_block(c).find("two-streams"), std::string::npos) << fg::describe_block(c);
}

TEST(GpuCase, FilesWrittenBeforeDelaysAndConsumersStillLoad) {
  auto j = fg::to_json(full_case());
  j.erase("delay_seed");
  j.erase("delay_max_ns");
  for (auto& call : j["calls"]) {
    call.erase("pdl_consumer");
    call.erase("unfused");
    call.erase("pdl_producer");
    call.erase("producer_delay_ns");
    call.erase("norm_out");
  }
  const fg::GpuCase c = fg::case_from_json(j);
  EXPECT_TRUE(c.calls[1].norm_out);
  EXPECT_EQ(c.delay_seed, 0u);
  EXPECT_FALSE(c.calls[0].pdl_consumer);
  EXPECT_FALSE(c.calls[0].pdl_producer);
  EXPECT_FALSE(c.calls[2].unfused);
}

// The block-scaled FP8 calls: their fields travel for their patterns only, are named in the
// description, and the scale storage the harness sizes holds what the kernel writes.
fg::GpuCase block_scaled_case() {
  fg::GpuCase c;
  c.hidden = 2880;  // gpt-oss: 90 MXFP8 blocks, 30 groups of 96
  fg::CallSpec mx;
  mx.pattern = fk::Pattern::mxfp8;
  mx.tokens = 131;
  mx.scale_layout = fk::Nvfp4Layout::linear;
  fg::CallSpec group;
  group.pattern = fk::Pattern::group_fp8;
  group.tokens = 5;
  group.group_size = 96;
  group.tma_aligned_mn = 13;
  c.calls = {mx, group};
  return c;
}

TEST(GpuCase, BlockScaledFieldsTravelForTheirPatternsOnly) {
  const fg::GpuCase c = block_scaled_case();
  const auto j = fg::to_json(c);
  EXPECT_EQ(j["calls"][0]["scale_layout"], "linear");
  EXPECT_FALSE(j["calls"][0].contains("group_size"));
  EXPECT_EQ(j["calls"][1]["group_size"], 96);
  EXPECT_EQ(j["calls"][1]["tma_aligned_mn"], 13);
  EXPECT_FALSE(fg::to_json(full_case())["calls"][0].contains("scale_layout"));
  const fg::GpuCase back = fg::case_from_json(j);
  EXPECT_EQ(fg::to_json(back), j);
  EXPECT_EQ(back.calls[0].scale_layout, fk::Nvfp4Layout::linear);
  EXPECT_NE(fg::describe(back.calls[0]).find("mxfp8(linear)"), std::string::npos);
  EXPECT_NE(fg::describe(back.calls[1]).find("group_fp8(g96 mn13)"), std::string::npos);
  // Storage: MXFP8 linear 131 x 90; group FP8 8 packs, (8 - 1) x 13 + 5 words.
  EXPECT_EQ(fg::scale_out_bytes(back.calls[0], 2880), 131u * 90);
  EXPECT_EQ(fg::scale_out_bytes(back.calls[1], 2880), 4u * (7 * 13 + 5));
  fg::CallSpec swizzled = back.calls[0];
  swizzled.scale_layout = fk::Nvfp4Layout::swizzled128x4;
  EXPECT_EQ(fg::scale_out_bytes(swizzled, 2880), 256u * 92);
  fg::CallSpec rounded = back.calls[1];
  rounded.tma_aligned_mn = 0;  // DeepGEMM's alignment: 5 tokens padded to 8
  EXPECT_EQ(fg::group_fp8_tma_aligned_mn(rounded), 8);
  EXPECT_EQ(fg::scale_out_bytes(fg::CallSpec{}, 2880), 0u);  // residual_rmsnorm: none
}

TEST(GpuCase, BlockScaledFieldsOutOfRangeOrOnAnotherPatternAreRefused) {
  const Edit edits[] = {
      {"mxfp8 needs hidden to be a multiple of 32", [](nlohmann::json& j) { j["hidden"] = 2064; }},
      {"group_size=100 must be >= 16 and divide hidden=2880",
       [](nlohmann::json& j) { j["calls"][1]["group_size"] = 100; }},
      {"group_size=8 must be >= 16", [](nlohmann::json& j) { j["calls"][1]["group_size"] = 8; }},
      {"tma_aligned_mn=4 must be 0 or within [tokens, tokens + 128]",
       [](nlohmann::json& j) { j["calls"][1]["tma_aligned_mn"] = 4; }},
      {"tma_aligned_mn=134 must be 0",
       [](nlohmann::json& j) { j["calls"][1]["tma_aligned_mn"] = 134; }},
      {"calls[0].group_size: not a field of pattern mxfp8",
       [](nlohmann::json& j) { j["calls"][0]["group_size"] = 128; }},
      {"calls[1].scale_layout: not a field of pattern group_fp8",
       [](nlohmann::json& j) { j["calls"][1]["scale_layout"] = "linear"; }},
      {"unknown scale_layout 'tiled'",
       [](nlohmann::json& j) { j["calls"][0]["scale_layout"] = "tiled"; }},
  };
  expect_each_edit_refused(block_scaled_case(), edits);
}

// The scale_out the harness allocates holds every call within the limits, tail included.
TEST(CaseLimits, ScaleOutCapacityHoldsEveryPatternsStorage) {
  fg::CaseLimits limits;
  limits.max_tokens = 300;
  limits.max_hidden = 4096;
  limits.max_elems = 300 * 4096;
  const std::size_t capacity = limits.scale_out_capacity();
  std::size_t largest = 0;
  for (int hidden : {2880, 4096, 1024, 32 * 3})
    for (int tokens : {1, 7, 128, 129, 300})
      for (auto pattern : fusioncheck::protocol::kAllPatterns)
        for (int group : {16, 32, 96, 128}) {
          if (hidden % group != 0 || static_cast<std::int64_t>(tokens) * hidden > limits.max_elems)
            continue;
          fg::CallSpec call;
          call.pattern = pattern;
          call.tokens = tokens;
          call.group_size = group;
          call.tma_aligned_mn = tokens + 128;
          call.scale_layout = fk::Nvfp4Layout::swizzled128x4;
          largest = std::max(largest, fg::scale_out_bytes(call, hidden));
        }
  EXPECT_GE(capacity, largest + fg::kScaleCanaryTail);
  EXPECT_LT(capacity, 4 * (largest + fg::kScaleCanaryTail));  // and not far beyond
}

// Each edit makes the case unrunnable; the file is refused with a line that says why.
TEST(GpuCase, UnrunnableCasesAreRefusedWithTheReason) {
  const Edit edits[] = {
      {"at least one call", [](nlohmann::json& j) { j["calls"] = nlohmann::json::array(); }},
      {"at most 16 per case",
       [](nlohmann::json& j) {
         for (int i = 0; i < 15; ++i) j["calls"].push_back(j["calls"][0]);
       }},
      {"hidden=100", [](nlohmann::json& j) { j["hidden"] = 100; }},
      {"delay_max_ns=20000000 exceeds", [](nlohmann::json& j) { j["delay_max_ns"] = 20'000'000; }},
      {"tokens=0", [](nlohmann::json& j) { j["calls"][0]["tokens"] = 0; }},
      {"pdl_consumer needs pdl on and trigger at_end",
       [](nlohmann::json& j) { j["calls"][0]["trigger"] = "early"; }},
      {"pdl_consumer needs pdl on", [](nlohmann::json& j) { j["calls"][0]["pdl"] = false; }},
      {"pdl_producer needs pdl on",
       [](nlohmann::json& j) {
         j["calls"][0]["pdl_consumer"] = false, j["calls"][0]["pdl"] = false;
       }},
      {"pdl_producer needs pdl on and a fused call",
       [](nlohmann::json& j) { j["calls"][2]["pdl_producer"] = true; }},
      {"producer_delay_ns=2000000 exceeds",
       [](nlohmann::json& j) { j["calls"][0]["producer_delay_ns"] = 2'000'000; }},
      {"no two-shot form", [](nlohmann::json& j) { j["calls"][2]["twoshot"] = true; }},
      {"not pattern allreduce", [](nlohmann::json& j) { j["calls"][2]["pattern"] = "allreduce"; }},
      {"unknown mode", [](nlohmann::json& j) { j["mode"] = "sometimes"; }},
      {"mode two-streams needs at least two calls",
       [](nlohmann::json& j) {
         j["mode"] = "two-streams";
         j["calls"] = nlohmann::json::array({j["calls"][0]});
       }},
      {"norm_out=false needs a quantising pattern",
       [](nlohmann::json& j) { j["calls"][2]["norm_out"] = false; }},
  };
  expect_each_edit_refused(full_case(), edits);
}

TEST(BaselineAllreduce, NcclOnlyWhereItCanRun) {
  using B = fg::BaselineAllreduce;
  EXPECT_TRUE(fg::baseline_uses_nccl(B::automatic, false, true));
  EXPECT_FALSE(fg::baseline_uses_nccl(B::automatic, true, true));    // ranks share a GPU
  EXPECT_FALSE(fg::baseline_uses_nccl(B::automatic, false, false));  // built without NCCL
  EXPECT_FALSE(fg::baseline_uses_nccl(B::ours, false, true));
  EXPECT_TRUE(fg::baseline_uses_nccl(B::nccl, false, true));
}

TEST(BaselineAllreduce, NcclWithRanksSharingAGpuIsBadInput) {
  try {
    fg::baseline_uses_nccl(fg::BaselineAllreduce::nccl, true, true);
    ADD_FAILURE() << "NCCL with ranks sharing a GPU was accepted";
  } catch (const fusioncheck::gpu::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL refuses two ranks on one GPU"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(fg::baseline_uses_nccl(fg::BaselineAllreduce::nccl, false, false),
               fusioncheck::gpu::BadInput);
}

// Every round times each column once, and over two rounds every pair of columns is timed
// in both orders (what makes a ratio of two columns a side-by-side figure).
TEST(BenchInterleaving, EachColumnOncePerRoundBothOrdersOverTwo) {
  for (std::size_t n : {1u, 2u, 5u, 7u}) {
    std::vector<std::vector<std::size_t>> rounds;
    for (int round = 0; round < 2; ++round) {
      std::vector<std::size_t> order;
      for (std::size_t j = 0; j < n; ++j) order.push_back(fg::interleaved_column(round, j, n));
      std::vector<std::size_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      for (std::size_t c = 0; c < n; ++c)
        ASSERT_EQ(sorted[c], c) << n << " columns, round " << round;
      rounds.push_back(order);
    }
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b) {
        auto before = [&](const std::vector<std::size_t>& order) {
          return std::find(order.begin(), order.end(), a) <
                 std::find(order.begin(), order.end(), b);
        };
        EXPECT_NE(before(rounds[0]), before(rounds[1]))
            << "columns " << a << " and " << b << " of " << n;
      }
  }
}

// The size limits: one definition, checked once; a case beyond them is named, not run.
TEST(CaseLimits, BadLimitsAreBadInputAndCasesBeyondThemAreNamed) {
  fg::CaseLimits ok;
  EXPECT_NO_THROW(ok.validate());
  auto bad = [](auto change) {
    fg::CaseLimits l;
    change(l);
    return l;
  };
  EXPECT_THROW(bad([](auto& l) { l.max_tokens = 0; }).validate(), fg::BadInput);
  EXPECT_THROW(bad([](auto& l) { l.max_tokens = fg::CaseLimits::kMaxTokens + 1; }).validate(),
               fg::BadInput);
  EXPECT_THROW(bad([](auto& l) { l.max_hidden = 100; }).validate(), fg::BadInput);
  EXPECT_THROW(bad([](auto& l) { l.max_elems = 1024, l.max_hidden = 4096; }).validate(),
               fg::BadInput);
  EXPECT_THROW(bad([](auto& l) { l.max_calls = fg::kMaxCallsPerCase + 1; }).validate(),
               fg::BadInput);

  fg::CaseLimits l;
  l.max_tokens = 100;
  l.max_hidden = 1024;
  l.max_elems = 4096;
  l.max_calls = 2;
  EXPECT_EQ(l.elems_per_call(), 4096);
  EXPECT_EQ(l.max_tokens_for(1024), 4);
  EXPECT_EQ(l.max_tokens_for(16), 100);
  fg::GpuCase c = full_case();
  c.hidden = 1024;
  c.calls.resize(2);
  c.calls[0].tokens = 4;
  c.calls[1].tokens = 4;
  EXPECT_EQ(l.does_not_fit(c), "");
  c.calls[1].tokens = 5;
  EXPECT_NE(l.does_not_fit(c).find("tokens=5 x hidden=1024 exceeds"), std::string::npos)
      << l.does_not_fit(c);
  c.calls.resize(3);
  EXPECT_NE(l.does_not_fit(c).find("--max-calls"), std::string::npos);
}

// Report and replay files: written whole, or a RunFailure naming the path (never silence).
TEST(WriteFile, WritesWholeOrFailsNamingThePath) {
  const std::string path = testing::TempDir() + "fusioncheck_write_file_test.txt";
  fg::write_file(path, "first\n");
  fg::write_file(path, "second\n");  // replaces, does not append
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second\n");
  std::filesystem::remove(path);
  try {
    fg::write_file("/nonexistent-folder/x.json", "x");
    ADD_FAILURE() << "no RunFailure";
  } catch (const fg::RunFailure& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/x.json"), std::string::npos)
        << e.what();
  }
}

// A CUDA error inside a case leaves the case as drawn, replayable, named in the error.
TEST(CaseInFlight, WrittenBesideTheReplayOutNamedByRank) {
  fg::CheckOptions o;
  o.kernel.name = "flashinfer-vllm";
  o.replay_out = testing::TempDir() + "fusioncheck_in_flight.json";
  const fg::GpuCase c = full_case();
  const std::string added =
      fg::keep_case_in_flight(3, 6, o, c, "an illegal memory access was encountered");
  const std::string file = testing::TempDir() + "fusioncheck_in_flight-in-flight-rank3.json";
  EXPECT_NE(added.find(file), std::string::npos) << added;
  EXPECT_NE(added.find("mpirun -np 6 fusioncheck gpu check --kernel flashinfer-vllm"),
            std::string::npos)
      << added;
  std::ifstream in(file);
  ASSERT_TRUE(in.good()) << file;
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("case"), fg::to_json(c));
  EXPECT_EQ(j.at("findings").at(0).at("check"), "cuda");
  EXPECT_NE(j.at("findings").at(0).at("message").get<std::string>().find("rank 3: an illegal"),
            std::string::npos);
  std::filesystem::remove(file);
  o.replay_out = "/nonexistent-folder/r.json";  // the error stands, with why no file
  EXPECT_NE(fg::keep_case_in_flight(0, 2, o, c, "x").find("could not be written"),
            std::string::npos);
  o.replay_out.clear();
  EXPECT_EQ(fg::keep_case_in_flight(0, 2, o, c, "x"), "");
}

// A faulted kernel's errors mark the device as one whose memory is left to the exit.
TEST(CaseInFlight, FaultsAreStickyAndRefusalsAreNot) {
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert,
                        cudaErrorMisalignedAddress, cudaErrorMpsClientTerminated})
    EXPECT_TRUE(fk::is_sticky_error(e)) << cudaGetErrorName(e);
  for (cudaError_t e : {cudaSuccess, cudaErrorNotReady, cudaErrorInvalidValue,
                        cudaErrorInvalidConfiguration, cudaErrorNoDevice})
    EXPECT_FALSE(fk::is_sticky_error(e)) << cudaGetErrorName(e);
}

// A failing case reads as labelled fields and a table of calls, not as a raw tuple.
TEST(FailureReport, EveryFieldIsLabelled) {
  const fg::GpuCase c = full_case();
  const std::string block = fg::describe_block(c);
  for (const char* label :
       {"dtype", "hidden", "Lamport element", "accumulation", "issue mode", "delays", "tokens",
        "pattern", "kernel", "PDL", "trigger", "cluster", "PDL consumer"})
    EXPECT_NE(block.find(label), std::string::npos) << label << " missing in\n" << block;
  EXPECT_NE(block.find("f16"), std::string::npos);
  EXPECT_NE(block.find("two-shot"), std::string::npos);
  EXPECT_NE(block.find("seed 12345, up to 20000 ns"), std::string::npos) << block;
  std::ostringstream shown;
  showValue(c, shown);  // what RapidCheck prints for a generated case
  EXPECT_NE(shown.str().find("ranks             4"), std::string::npos) << shown.str();

  fg::CheckResult r;
  r.mutant = M("float-sentinel");
  r.failed = true;
  r.minimal = c;
  r.minimal_calls = 2;
  r.findings.push_back({"hang", "rank 0 block 3 waited for rank 1"});
  r.replay_file = "cx.json";
  r.replay_command = "mpirun -np 4 fusioncheck gpu check --mutant float-sentinel --replay cx.json";
  r.minimal_notes = {"in-kernel hold: rank 1 holds block 200"};
  fg::GpuPlacement placement;
  placement.device_name = "NVIDIA H200";
  placement.compute_capability = 90;
  const std::string report = fg::failure_report(r, placement, 4);
  for (const char* part :
       {"FAILED", "mutant float-sentinel", "ranks", "GPUs", "finding", "[hang] rank 0 block 3",
        "replay file", "cx.json", "replay with", "--mutant float-sentinel --replay cx.json",
        "in-kernel hold: rank 1 holds block 200\n"})
    EXPECT_NE(report.find(part), std::string::npos) << part << " missing in\n" << report;
}

// The time per case names every phase, averages it over the cases run and refused, and
// gives the rest of the run as "other".
TEST(TimeBreakdown, EveryPhasePerCaseAndTheRestAsOther) {
  fg::CheckResult r;
  r.cases = 90;
  r.refused = 10;  // 100 cases: 1 s is 10 ms per case
  r.seconds = 10.0;
  r.times.inputs = 1.0;
  r.times.uploads = 0.5;
  r.times.kernels = 2.0;
  r.times.reference = 3.0;
  r.times.invariants = 0.25;
  r.times.exchange = 0.75;
  r.times.longest_finished_wait = 0.0125;  // not a sum: not part of "other"
  const std::string line = fg::time_breakdown(r);
  for (const char* part : {"inputs 10.00", "uploads 5.00", "barrier+kernels 20.00",
                           "reference 30.00", "invariants 2.50", "report exchange 7.50",
                           "other (case generation and broadcast, "
                           "workspace set-up) 25.00",
                           "longest wait that ended without a hang 12.5 ms (the host's hang bound, "
                           "for kernels whose polls have none: 100 ms plus the case's pauses)"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " missing in\n" << line;
}

// A wait that ended on its own within 4x of its case's bound is named with its case; one well
// under it is not (the negative control).
TEST(TimeBreakdown, AWaitNearTheHangBoundIsNamedWithItsCase) {
  fg::CheckResult r;
  fg::GpuCase c;
  c.hidden = 7168;
  c.calls.resize(3);
  r.times.closest_wait_case = c;
  r.times.closest_wait = 0.0824;
  r.times.closest_wait_bound = 0.25;
  const std::string note = fg::wait_margin_note(r);
  EXPECT_NE(note.find("after 82.4 ms"), std::string::npos) << note;
  EXPECT_NE(note.find("250 ms bound for that case"), std::string::npos) << note;
  EXPECT_NE(note.find(fg::describe(c)), std::string::npos) << note;
  r.times.closest_wait = 0.0121;
  EXPECT_EQ(fg::wait_margin_note(r), "");
}

// The bound allows a case's pauses in full: a hold and an in-kernel delay at every visit of a
// block, each pause before a call and each PDL producer's delay once; a case without any
// allows nothing beyond the base.
TEST(WaitBudget, ACaseAllowsItsSeededPausesOnTopOfTheBase) {
  fg::GpuCase c;
  c.calls.resize(3);
  EXPECT_EQ(fg::seeded_pause_allowance(c).count(), 0);
  EXPECT_EQ(fg::wait_budget({fg::WaitStart::every_rank_enqueued}),
            fg::base_wait_budget(fg::WaitStart::every_rank_enqueued));
  c.hold.rank = 1;
  c.hold.ns = 2'000'000;
  EXPECT_EQ(fg::seeded_pause_allowance(c).count(), 2'000'000LL * fg::kPauseVisitsPerWait);
  c.delay_seed = 7;
  c.delay_max_ns = 20'000;
  c.calls[1].producer_delay_ns = 50'000;
  const long long want =
      2'000'000LL * fg::kPauseVisitsPerWait + 20'000LL * (fg::kPauseVisitsPerWait + 3) + 50'000;
  EXPECT_EQ(fg::seeded_pause_allowance(c).count(), want);
  const fg::WaitBudget budget(fg::WaitStart::every_rank_enqueued, fg::seeded_pause_allowance(c));
  EXPECT_EQ(fg::wait_budget(budget), fg::base_wait_budget(fg::WaitStart::every_rank_enqueued) +
                                         std::chrono::nanoseconds(want));
  // The 82 ms wait of a case held 2 ms at its polls (docs/results.md) is well inside its bound.
  c.delay_seed = 0;
  c.calls[1].producer_delay_ns = 0;
  EXPECT_GT(fg::wait_budget({fg::WaitStart::every_rank_enqueued, fg::seeded_pause_allowance(c)}),
            std::chrono::milliseconds(4 * 82));
}

// Which survivors a kill table excuses, per setup; every other survivor fails the run.
TEST(KillTable, ExpectedSurvivorsDependOnTheSetup) {
  fg::GpuPlacement h200_mps;
  h200_mps.compute_capability = 90;
  h200_mps.ranks_share_gpu = true;
  h200_mps.mps_running = true;
  EXPECT_NE(fg::expected_survival(M("pdl-wait-missing"), h200_mps), "");
  EXPECT_NE(fg::expected_survival(M("empty-body"), h200_mps), "");
  EXPECT_NE(fg::expected_survival(M("barrier-no-release"), h200_mps), "");
  EXPECT_EQ(fg::expected_survival(M("torn-element"), h200_mps), "");  // MPS ranks run together
  for (const char* m : {"float-sentinel", "two-buffers", "early-trigger", "counter-not-reset"})
    EXPECT_EQ(fg::expected_survival(M(m), h200_mps), "") << m;
  for (const char* m : {"no-pdl-wait", "inputs-before-wait"})
    EXPECT_EQ(fg::expected_survival(M(m), h200_mps), "") << m;
  // A family's own copies are its own to excuse (KernelUnderTest::mutant_may_survive).
  EXPECT_EQ(fg::expected_survival(M("revert-0.6.4-fp4-cluster-coverage"), h200_mps), "");

  fg::GpuPlacement time_sliced = h200_mps;
  time_sliced.mps_running = false;
  EXPECT_NE(fg::expected_survival(M("torn-element"), time_sliced), "");

  fg::GpuPlacement sm120_pair;  // one rank per GPU on sm_120: nothing is excused
  sm120_pair.compute_capability = 120;
  for (const char* m : {"pdl-wait-missing", "empty-body", "barrier-no-release", "torn-element"})
    EXPECT_EQ(fg::expected_survival(M(m), sm120_pair), "") << m;
}

// A patch that does not apply to the tree is a row of its own, never a silent gap.
TEST(KillTable, PatchesNotBuiltForTheTreeAreListedWithWhy) {
  fg::GpuPlacement placement;
  placement.compute_capability = 90;
  fg::CheckResult control;
  const std::string md =
      fg::kill_table_markdown({control}, "setup", placement,
                              {{M("revert-0.7.2-twoshot-barrier-order"), "edit 1 occurs 0 times"}});
  EXPECT_NE(
      md.find(
          "| revert-0.7.2-twoshot-barrier-order | - | not built for this tree: edit 1 occurs 0 times |"),
      std::string::npos)
      << md;
  EXPECT_EQ(fg::kill_table_markdown({control}, "setup", placement).find("not built"),
            std::string::npos);
}

// The kill table runs a mutant of the two-shot kernel alone on mostly two-shot calls, and
// then the correct kernels on that mix too (its control); a list without one stays as is.
// A Bootstrap that is never called: OurKernels only keeps a reference until prepare().
struct UnusedBootstrap final : fk::Bootstrap {
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_gather(const void*, void*, std::size_t, const char*) override {
    ADD_FAILURE() << "all_gather";
  }
  void barrier(const char*) override { ADD_FAILURE() << "barrier"; }
};

TEST(KillTable, TwoShotMutantsRunOnMostlyTwoShotCallsBesideTheirControl) {
  using Plan = std::vector<fg::KillTableRun>;
  const int mix = fg::kTwoShotMutantPercent;
  const auto none = M("none"), fs = M("float-sentinel"), tgo = M("twoshot-gather-overlap"),
             bnr = M("barrier-no-release");
  UnusedBootstrap bootstrap;
  const fg::OurKernels ours(bootstrap, fusioncheck::protocol::Mutant::none);
  // Where our kernels' mutants live: these two in the two-shot kernel alone.
  EXPECT_TRUE(ours.mutant_in_twoshot_only(tgo));
  EXPECT_TRUE(ours.mutant_in_twoshot_only(bnr));
  EXPECT_FALSE(ours.mutant_in_twoshot_only(fs));
  // Our kernels delay blocks themselves: no mutant of theirs needs the adapter's late starts.
  for (auto m : ours.mutants()) EXPECT_FALSE(ours.mutant_needs_late_blocks(m)) << m.id();
  const auto twoshot_only = [&](const fg::MutantId& m) { return ours.mutant_in_twoshot_only(m); };
  const auto never = [](const fg::MutantId&) { return false; };
  EXPECT_EQ(fg::kill_table_plan({none, fs, tgo}, 25, twoshot_only, never),
            (Plan{{none, 25}, {none, mix}, {fs, 25}, {tgo, mix}}));
  EXPECT_EQ(fg::kill_table_plan({none, fs}, 25, twoshot_only, never), (Plan{{none, 25}, {fs, 25}}));
  EXPECT_EQ(fg::kill_table_plan({bnr}, 10, twoshot_only, never), (Plan{{bnr, mix}}));
  // With the mix as the default there is nothing to add.
  EXPECT_EQ(fg::kill_table_plan({none, bnr}, mix, twoshot_only, never),
            (Plan{{none, mix}, {bnr, mix}}));
  // A mutant that needs late blocks runs on such cases, and so does a control of its own.
  const auto fba = M("flag-before-arrival");
  const auto late = [&](const fg::MutantId& m) { return m == fba; };
  EXPECT_EQ(
      fg::kill_table_plan({none, fs, fba, tgo}, 25, twoshot_only, late),
      (Plan{{none, 25}, {none, 25, true}, {none, mix}, {fs, 25}, {fba, 25, true}, {tgo, mix}}));
  EXPECT_EQ(fg::kill_table_plan({fba}, 25, twoshot_only, late), (Plan{{fba, 25, true}}));
  // A mutant of one launch variant draws it alone, beside a control at that focus.
  const auto mrr = M("moe-remote-read");
  const auto variant_of = [&](const fg::MutantId& m) { return m == mrr ? 0 : -1; };
  EXPECT_EQ(fg::kill_table_plan({none, fs, mrr}, 25, never, never, variant_of),
            (Plan{{none, 25}, {none, 25, false, 0}, {fs, 25}, {mrr, 25, false, 0}}));
  EXPECT_EQ(fg::kill_table_plan({mrr}, 25, never, never, variant_of), (Plan{{mrr, 25, false, 0}}));
  // Foci combine: a mutant of one variant on late blocks has a control of both, and a focus
  // two mutants share has one control.
  const auto late_too = [&](const fg::MutantId& m) { return m == fba || m == mrr; };
  EXPECT_EQ(
      fg::kill_table_plan({none, mrr, fba, fs, tgo, bnr}, 25, twoshot_only, late_too, variant_of),
      (Plan{{none, 25},
            {none, 25, true, 0},
            {none, 25, true},
            {none, mix},
            {mrr, 25, true, 0},
            {fba, 25, true},
            {fs, 25},
            {tgo, mix},
            {bnr, mix}}));
  // A mutant that needs a held rank runs on such cases, beside a control of that focus.
  const auto held = [&](const fg::MutantId& m) { return m == fs; };
  EXPECT_EQ(fg::kill_table_plan({none, fs, tgo}, 25, twoshot_only, never, {}, held),
            (Plan{{none, 25},
                  {none, 25, false, -1, true},
                  {none, mix},
                  {fs, 25, false, -1, true},
                  {tgo, mix}}));
  // Every mutant our kernels have is listed once, the kill table's default.
  const auto all = ours.mutants();
  EXPECT_EQ(std::count(all.begin(), all.end(), fs), 1);
  EXPECT_EQ(std::count(all.begin(), all.end(), tgo), 1);
}

// JUnit of a kill table: a killed mutant and the clean control pass; a survivor this setup
// cannot kill is skipped with its reason; any other survivor, or a finding on the correct
// kernels, is a failure.
TEST(KillTable, JunitFailsOnlyWhatTheExitCodeFails) {
  fg::GpuPlacement h200_mps;
  h200_mps.compute_capability = 90;
  h200_mps.ranks_share_gpu = true;
  h200_mps.mps_running = true;
  auto run = [&h200_mps](const char* mutant, bool failed) {
    fg::CheckResult r;
    r.mutant = M(mutant);
    r.failed = failed;
    if (!failed) r.survival_excuse = fg::expected_survival(r.mutant, h200_mps);  // as kill-table
    r.twoshot_percent = 25;
    if (failed) r.findings.push_back({"invariant", "after call 0: invariant 5"});
    return r;
  };
  const std::vector<fg::CheckResult> fine = {run("none", false), run("float-sentinel", true),
                                             run("pdl-wait-missing", false)};
  const std::string xml = fg::junit_xml("suite", fine, &h200_mps);
  EXPECT_NE(xml.find("failures=\"0\" skipped=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped message=\"correct code on sm_90"), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"float-sentinel, 25 % two-shot calls\""), std::string::npos) << xml;

  const std::vector<fg::CheckResult> bad = {run("none", true), run("float-sentinel", false)};
  const std::string bad_xml = fg::junit_xml("suite", bad, &h200_mps);
  EXPECT_NE(bad_xml.find("failures=\"2\" skipped=\"0\""), std::string::npos) << bad_xml;
  EXPECT_NE(bad_xml.find("mutant survived"), std::string::npos) << bad_xml;

  // A check run (no kill table): findings fail it, whatever the mutant.
  EXPECT_NE(fg::junit_xml("suite", {run("float-sentinel", true)}, nullptr).find("failures=\"1\""),
            std::string::npos);
}

// The rows each rank compares with the reference: the shares of all ranks cover every row
// exactly once, in order, and differ in size by at most one; NVFP4 takes every row.
TEST(RowShare, SharesPartitionTheRows) {
  for (int ranks : {1, 2, 3, 4, 8, 16})
    for (int tokens : {1, 2, 3, 7, 16, 129, 2048}) {
      std::size_t next = 0, smallest = tokens, largest = 0;
      for (int r = 0; r < ranks; ++r) {
        const fg::RowShare s = fg::row_share(tokens, ranks, r, false);
        EXPECT_EQ(s.first, next) << ranks << " ranks, " << tokens << " tokens, rank " << r;
        next = s.first + s.count;
        smallest = std::min(smallest, s.count);
        largest = std::max(largest, s.count);
        const fg::RowShare all = fg::row_share(tokens, ranks, r, true);
        EXPECT_EQ(all.first, 0u);
        EXPECT_EQ(all.count, static_cast<std::size_t>(tokens));
      }
      EXPECT_EQ(next, static_cast<std::size_t>(tokens))
          << ranks << " ranks, " << tokens << " tokens";
      EXPECT_LE(largest - smallest, 1u);
    }
}

// A share's slice holds exactly its rows, and a mismatch found there is reported at its
// index in the whole output (element-indexed or token-indexed).
TEST(RowShare, SlicesAndIndicesMapToTheWholeOutput) {
  namespace ref = fusioncheck::reference;
  constexpr std::size_t kHidden = 5, kTokens = 7;
  ref::Tensor t(ref::DType::bf16, kTokens * kHidden);
  for (std::size_t i = 0; i < t.size(); ++i) t.set_bits(i, static_cast<std::uint32_t>(i));
  const fg::RowShare share = fg::row_share(kTokens, 2, 1, false);  // rows 3..6
  ASSERT_EQ(share.first, 3u);
  ASSERT_EQ(share.count, 4u);
  const ref::Tensor slice = fg::slice_rows(t, share, kHidden);
  ASSERT_EQ(slice.size(), 4 * kHidden);
  for (std::size_t i = 0; i < slice.size(); ++i) EXPECT_EQ(slice.bits_at(i), 3 * kHidden + i);
  ref::Mismatch element{2, 0, 0, 0, "norm_out"};
  EXPECT_EQ(fg::in_whole_output(element, share, kHidden).index, 3 * kHidden + 2);
  ref::Mismatch token{1, 0, 0, 0, "fp8_dynamic_scale (index = token)"};
  EXPECT_EQ(fg::in_whole_output(token, share, kHidden).index, 4u);
  const fg::RowShare none = fg::row_share(1, 2, 0, false);  // fewer tokens than ranks
  EXPECT_EQ(none.count, 0u);
  EXPECT_EQ(fg::slice_rows(t, none, kHidden).size(), 0u);
}

// Replay values are read strictly: each edit is refused naming the field, none is bent.
TEST(GpuCaseStrict, NumbersOfTheWrongKindOrRangeAreRefused) {
  const Edit edits[] = {
      {"ranks = 4294967298: out of range", [](nlohmann::json& j) { j["ranks"] = 4294967298ull; }},
      {"ranks = 2.7: not an integer", [](nlohmann::json& j) { j["ranks"] = 2.7; }},
      {"ranks = 2.0: not an integer", [](nlohmann::json& j) { j["ranks"] = 2.0; }},
      {"seed = -1: out of range", [](nlohmann::json& j) { j["seed"] = -1; }},
      {"delay_max_ns = -1: out of range", [](nlohmann::json& j) { j["delay_max_ns"] = -1; }},
      {"delay_seed = 4294967296: out of range",
       [](nlohmann::json& j) { j["delay_seed"] = 4294967296ull; }},
      {"calls[0].tokens = -4294967299: out of range",
       [](nlohmann::json& j) { j["calls"][0]["tokens"] = -3ll - (1ll << 32); }},
      {"calls[1].producer_delay_ns = -5: out of range",
       [](nlohmann::json& j) { j["calls"][1]["producer_delay_ns"] = -5; }},
      {"hidden = \"1024\": not an integer", [](nlohmann::json& j) { j["hidden"] = "1024"; }},
      {"fp32_lamport = 1: not true or false", [](nlohmann::json& j) { j["fp32_lamport"] = 1; }},
      {"weight_bias = \"0\": not a finite number",
       [](nlohmann::json& j) { j["weight_bias"] = "0"; }},
      {"weight_bias = 1e+300: not a finite number",
       [](nlohmann::json& j) { j["weight_bias"] = 1e300; }},
      {"calls[0].trigger 'late'", [](nlohmann::json& j) { j["calls"][0]["trigger"] = "late"; }},
      {"unknown field 'rnaks'", [](nlohmann::json& j) { j["rnaks"] = 2; }},
      {"calls[2]: unknown field 'tokenz'", [](nlohmann::json& j) { j["calls"][2]["tokenz"] = 2; }},
      {"calls is not an array", [](nlohmann::json& j) { j["calls"] = 3; }},
      {"calls[0] is not a JSON object", [](nlohmann::json& j) { j["calls"][0] = 3; }},
      {"ranks is missing", [](nlohmann::json& j) { j.erase("ranks"); }},
      {"1000 calls; at most 16 per case",
       [](nlohmann::json& j) { j["calls"] = std::vector<nlohmann::json>(1000, j["calls"][0]); }},
      {"hidden=65552 exceeds 65536", [](nlohmann::json& j) { j["hidden"] = 65552; }},
      {"tokens=65537 exceeds 65536", [](nlohmann::json& j) { j["calls"][0]["tokens"] = 65537; }},
      {"tokens=65536 x hidden=65536 exceeds 67108864 elements per call",
       [](nlohmann::json& j) { j["hidden"] = 65536, j["calls"][0]["tokens"] = 65536; }},
  };
  for (const Edit& e : edits) {
    auto j = fg::to_json(full_case());
    e.apply(j);
    try {
      fg::case_from_json(j);
      ADD_FAILURE() << "accepted a case that should fail with: " << e.expect;
    } catch (const fg::BadInput& err) {
      EXPECT_NE(std::string(err.what()).find(e.expect), std::string::npos) << err.what();
      EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos) << err.what();
    }
  }
  EXPECT_THROW(fg::case_from_json(nlohmann::json::array()), fg::BadInput);
}

// Fields older files lack still load with their documented defaults.
TEST(GpuCaseStrict, MissingOptionalFieldsTakeTheirDefaults) {
  auto j = fg::to_json(full_case());
  for (const char* name : {"delay_seed", "delay_max_ns", "neg_zero_inputs"}) j.erase(name);
  for (auto& call : j["calls"])
    for (const char* name : {"unfused", "pdl_consumer", "pdl_producer", "producer_delay_ns"})
      call.erase(name);
  const fg::GpuCase c = fg::case_from_json(j);
  EXPECT_EQ(c.delay_seed, 0u);
  EXPECT_EQ(c.delay_max_ns, 0u);
  EXPECT_TRUE(c.neg_zero_inputs);
  EXPECT_FALSE(c.calls[0].pdl_producer);
  EXPECT_EQ(c.calls[0].producer_delay_ns, 0u);
}

// A replay file: one JSON document of bounded size, nothing after it.
TEST(GpuCaseStrict, ReplayFilesAreBoundedAndEndWithTheDocument) {
  const std::string dir = testing::TempDir();
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + name, std::ios::binary) << text;
    return dir + name;
  };
  const std::string good =
      nlohmann::json{{"case", fg::to_json(full_case())}, {"kernel", "ours"}}.dump(1);
  EXPECT_EQ(fg::to_json(fg::read_replay_case(write("fc_replay_good.json", good))),
            fg::to_json(full_case()));
  const auto refused = [&](const std::string& path, const std::string& expect) {
    try {
      fg::read_replay_case(path);
      ADD_FAILURE() << "accepted " << path;
    } catch (const fg::BadInput& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  };
  refused(write("fc_replay_trailing.json", good + "\n{\"more\": 1}\n"), "not JSON");
  refused(write("fc_replay_garbage.json", good + "garbage"), "not JSON");
  refused(write("fc_replay_big.json", good + std::string(fg::kMaxReplayFileBytes, ' ')),
          "bytes; at most");
  refused(write("fc_replay_list.json", "[1, 2]"), "not a replay file");
  // 200,000 nested arrays in one field: refused by depth, never parsed or quoted recursively.
  refused(write("fc_replay_deep.json",
                "{\"case\": " + std::string(200000, '[') + std::string(200000, ']') + "}"),
          "nested more than 32 deep");
  // A long value is quoted cut short in the one-line error.
  nlohmann::json long_value = nlohmann::json::parse(good);
  long_value["case"]["hidden"] = std::vector<int>(100000, 7);
  try {
    fg::read_replay_case(write("fc_replay_long.json", long_value.dump()));
    ADD_FAILURE() << "accepted a list as hidden";
  } catch (const fg::BadInput& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u) << e.what();
  }
  refused(dir + "fc_replay_no_such_file.json", "fc_replay_no_such_file.json");
  for (const char* name : {"good", "trailing", "garbage", "big", "list", "deep", "long"})
    std::filesystem::remove(dir + "fc_replay_" + name + ".json");
}

}  // namespace
