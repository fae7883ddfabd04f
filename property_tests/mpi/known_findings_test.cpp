// The ledger of known findings: reading (and refusing) ledgers, matching a failed case to an
// entry, the states a run reports (known / new / absent), and the reports' verdicts with a
// ledger. CPU only.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fusioncheck/gpu/case_runner.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_report.hpp"
#include "fusioncheck/gpu/known_findings.hpp"

namespace {

namespace fg = fusioncheck::gpu;
namespace fk = fusioncheck::kernels;
using nlohmann::json;

const std::vector<std::string> kFamilies = {"ours", "flashinfer", "flashinfer-legacy",
                                            "flashinfer-pcie", "flashinfer-moe"};

// One valid entry, to be changed by each test.
json entry(const std::string& id = "moe-partial-warp") {
  return {{"id", id},
          {"family", "flashinfer-moe"},
          {"releases", {{"from", "0.2.7"}, {"through", "0.7.4"}}},
          {"class", "wrong-answer"},
          {"title", "threads past a token's end"},
          {"upstream", "not yet filed"},
          {"writeup", "docs/flashinfer.md"},
          {"signature", {{"checks", {"reference", "agreement"}}, {"hidden_not_multiple_of", 256}}}};
}

json ledger(std::vector<json> entries) {
  return {{"fusioncheck_known_findings", 1}, {"findings", entries}};
}

fg::KnownFindings parse(const json& j) {
  return fg::known_findings_from_json(j, "test.json", kFamilies);
}

std::string refusal(const json& j) {
  try {
    parse(j);
  } catch (const fg::BadInput& e) {
    return e.what();
  }
  return "";
}

fg::GpuCase moe_case(int hidden, int variant = 0, int calls = 1,
                     fg::IssueMode mode = fg::IssueMode::checked_each_call) {
  fg::GpuCase c;
  c.hidden = hidden;
  c.mode = mode;
  for (int i = 0; i < calls; ++i) {
    fg::CallSpec call;
    call.tokens = 3;
    call.variant = variant;
    call.moe_experts = 4;
    c.calls.push_back(call);
  }
  return c;
}

const std::vector<fg::Finding> kWrong = {{"reference", "rank 0 call 0: norm_out at element 0"},
                                         {"agreement", "invariant 8: call 0"}};
const std::vector<fg::Finding> kHang = {{"hang", "rank 1 awaited peer 0's slot"}};

TEST(KnownFindings, ShippedLedgerReadsWithTheFourFindings) {
  const fg::KnownFindings l = fg::read_known_findings(
      FUSIONCHECK_SOURCE_DIR "/adapters/flashinfer/known/flashinfer-0.7.4.json", kFamilies);
  ASSERT_EQ(l.entries.size(), 4u);
  for (const auto& e : l.entries) {
    EXPECT_FALSE(e.upstream.empty()) << e.id;
    EXPECT_TRUE(std::filesystem::exists(FUSIONCHECK_SOURCE_DIR "/" +
                                        e.writeup.substr(0, e.writeup.find('#'))))
        << e.id << ": " << e.writeup;
  }
}

// SGLang's ledger: its one entry, a hang of calls from two streams (sglang#31117), and nothing
// else: the same hang issued from one stream, or a wrong value from two, is new.
TEST(KnownFindings, ShippedSglangLedgerHoldsTheTwoStreamHangOnly) {
  const fg::KnownFindings l = fg::read_known_findings(
      FUSIONCHECK_SOURCE_DIR "/adapters/sglang/known/sglang-0.5.23.json", {"sglang-push"});
  ASSERT_EQ(l.entries.size(), 1u);
  const auto& e = l.entries[0];
  EXPECT_NE(e.upstream.find("sglang#31117"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(FUSIONCHECK_SOURCE_DIR "/" +
                                      e.writeup.substr(0, e.writeup.find('#'))));
  fg::GpuCase two = moe_case(4096, 0, 2, fg::IssueMode::two_streams);
  for (auto& call : two.calls) call.moe_experts = 0;
  EXPECT_TRUE(fg::matches(e, two, kHang));
  EXPECT_FALSE(fg::matches(e, two, kWrong));
  fg::GpuCase one_stream = two;
  one_stream.mode = fg::IssueMode::back_to_back;
  EXPECT_FALSE(fg::matches(e, one_stream, kHang));
  // The shrunk case the GPU wrote (two calls, one on each stream) is the entry's.
  const json replay =
      fg::read_replay_json(FUSIONCHECK_SOURCE_DIR "/docs/replays/sglang-push-two-streams.json");
  std::vector<fg::Finding> found;
  for (const auto& f : replay["findings"]) found.push_back({f["check"], f["message"]});
  EXPECT_TRUE(fg::matches(e, fg::case_from_json(replay["case"]), found));
  EXPECT_EQ(fg::entries_for(l, "sglang-push", "0.5.23").size(), 1u);
  EXPECT_TRUE(fg::entries_for(l, "flashinfer", "0.5.23").empty());
}

TEST(KnownFindings, ValidLedgerReads) {
  const auto l = parse(ledger({entry()}));
  ASSERT_EQ(l.entries.size(), 1u);
  EXPECT_EQ(l.entries[0].signature.hidden_not_multiple_of, 256);
  EXPECT_EQ(l.entries[0].release_through, "0.7.4");
}

TEST(KnownFindings, BadLedgersAreRefusedNamingTheEntry) {
  json unknown_field = entry();
  unknown_field["severity"] = "high";
  EXPECT_NE(refusal(ledger({unknown_field})).find("unknown field 'severity'"), std::string::npos);
  json unknown_sig = entry();
  unknown_sig["signature"]["hidden_modulo"] = 3;
  EXPECT_NE(refusal(ledger({unknown_sig})).find("signature: unknown field 'hidden_modulo'"),
            std::string::npos);
  EXPECT_NE(refusal(ledger({entry("a"), entry("a")})).find("id 'a' is used twice"),
            std::string::npos);
  json top = ledger({entry()});
  top["extra"] = 1;
  EXPECT_NE(refusal(top).find("unknown field 'extra'"), std::string::npos);
  EXPECT_NE(refusal(json{{"findings", json::array()}}).find("not a ledger of format 1"),
            std::string::npos);
  EXPECT_NE(refusal(json::array()).find("not a ledger"), std::string::npos);
  json family = entry();
  family["family"] = "nccl";
  EXPECT_NE(refusal(ledger({family})).find("family 'nccl' is not a kernel family"),
            std::string::npos);
  json releases = entry();
  releases["releases"] = {{"from", "0.8.0"}, {"through", "0.7.4"}};
  EXPECT_NE(refusal(ledger({releases})).find("is after through"), std::string::npos);
  releases["releases"] = {{"through", "latest"}};
  EXPECT_NE(refusal(ledger({releases})).find("'latest' is not a release"), std::string::npos);
  json cls = entry();
  cls["class"] = "slow";
  EXPECT_NE(refusal(ledger({cls})).find("class 'slow'"), std::string::npos);
  json id = entry("Has Spaces");
  EXPECT_NE(refusal(ledger({id})).find("id 'Has Spaces'"), std::string::npos);
  json missing = entry();
  missing.erase("upstream");
  EXPECT_NE(refusal(ledger({missing})).find("upstream is missing"), std::string::npos);
}

TEST(KnownFindings, SignaturesThatMatchNothingTheSuiteReportsAreRefused) {
  json check = entry();
  check["signature"]["checks"] = {"reference", "segfault"};
  EXPECT_NE(refusal(ledger({check})).find("'segfault' is none of"), std::string::npos);
  json wrong_class = entry();
  wrong_class["signature"]["checks"] = {"hang"};  // a wrong answer is never reported as a hang
  EXPECT_NE(refusal(ledger({wrong_class})).find("check 'hang' never reports a wrong-answer"),
            std::string::npos);
  json every_hidden = entry();
  every_hidden["signature"]["hidden_not_multiple_of"] =
      8;  // every drawn hidden is a multiple of 16
  EXPECT_NE(refusal(ledger({every_hidden})).find("every hidden size drawn is a multiple of 16"),
            std::string::npos);
  json tokens = entry();
  tokens["signature"]["min_tokens"] = fg::CaseLimits::kMaxTokens + 1;
  EXPECT_NE(refusal(ledger({tokens})).find("min_tokens"), std::string::npos);
  json pattern = entry();
  pattern["signature"]["patterns"] = {"fp4"};
  EXPECT_NE(refusal(ledger({pattern})).find("'fp4' is none of"), std::string::npos);
  json no_checks = entry();
  no_checks["signature"].erase("checks");
  EXPECT_NE(refusal(ledger({no_checks})).find("checks is missing"), std::string::npos);
  json empty_checks = entry();
  empty_checks["signature"]["checks"] = json::array();
  EXPECT_NE(refusal(ledger({empty_checks})).find("not a non-empty array"), std::string::npos);
}

TEST(KnownFindings, FilesThatCannotBeLedgersAreRefused) {
  const auto dir = std::filesystem::temp_directory_path() / "fc_known_test";
  std::filesystem::create_directories(dir);
  auto refused = [](const std::string& path) {
    try {
      fg::read_known_findings(path, kFamilies);
    } catch (const fg::BadInput& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refused((dir / "absent.json").string()).find("--known"), std::string::npos);
  EXPECT_NE(refused(dir.string()).find("not a regular file"), std::string::npos);
  const auto deep = dir / "deep.json";
  std::ofstream(deep) << std::string(100000, '[') << std::string(100000, ']');
  EXPECT_NE(refused(deep.string()).find("nested more than"), std::string::npos);
  const auto big = dir / "big.json";
  std::ofstream(big) << "\"" << std::string(2 << 20, 'x') << "\"";
  EXPECT_NE(refused(big.string()).find("bytes; at most"), std::string::npos);
  const auto bad = dir / "bad.json";
  std::ofstream(bad) << "{\"fusioncheck_known_findings\": 1, ";
  EXPECT_NE(refused(bad.string()).find("not JSON"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(KnownFindings, MatchesItsFindingAndNotOthers) {
  const auto l = parse(ledger({entry()}));
  const fg::KnownFinding& e = l.entries[0];
  EXPECT_TRUE(fg::matches(e, moe_case(2880), kWrong));
  // Negative controls: a hidden size the entry does not cover, a check it does not list, no
  // finding at all.
  EXPECT_FALSE(fg::matches(e, moe_case(4096), kWrong));
  EXPECT_FALSE(fg::matches(e, moe_case(2880), kHang));
  EXPECT_FALSE(fg::matches(e, moe_case(2880), {}));
  std::vector<fg::Finding> mixed = kWrong;
  mixed.push_back(kHang[0]);  // one finding the entry does not explain makes the case new
  EXPECT_FALSE(fg::matches(e, moe_case(2880), mixed));
}

TEST(KnownFindings, CallAndCaseConditionsAndMessage) {
  json j = entry("finalize");
  j["class"] = "hang";
  j["signature"] = {{"checks", {"hang"}},
                    {"variants", {1}},
                    {"min_calls", 2},
                    {"modes", {"back-to-back", "graph-replay"}},
                    {"message_contains", "awaited"}};
  const auto e = parse(ledger({j})).entries[0];
  EXPECT_TRUE(fg::matches(e, moe_case(4096, 1, 2, fg::IssueMode::back_to_back), kHang));
  EXPECT_FALSE(fg::matches(e, moe_case(4096, 0, 2, fg::IssueMode::back_to_back), kHang));
  EXPECT_FALSE(fg::matches(e, moe_case(4096, 1, 1, fg::IssueMode::back_to_back), kHang));
  EXPECT_FALSE(fg::matches(e, moe_case(4096, 1, 2, fg::IssueMode::checked_each_call), kHang));
  EXPECT_FALSE(fg::matches(e, moe_case(4096, 1, 2, fg::IssueMode::back_to_back),
                           {{"hang", "rank 1 timed out"}}));
  json p = entry("pdl");
  p["family"] = "flashinfer-legacy";
  p["signature"] = {{"checks", {"reference"}},
                    {"pdl_producer", true},
                    {"min_tokens", 2},
                    {"patterns", {"residual_rmsnorm"}}};
  const auto pe = parse(ledger({p})).entries[0];
  fg::GpuCase c = moe_case(1024);
  c.calls[0].pdl_producer = true;
  EXPECT_TRUE(fg::matches(pe, c, {kWrong[0]}));
  c.calls[0].tokens = 1;
  EXPECT_FALSE(fg::matches(pe, c, {kWrong[0]}));
  c.calls[0].tokens = 3;
  c.calls[0].pdl_producer = false;
  EXPECT_FALSE(fg::matches(pe, c, {kWrong[0]}));
}

TEST(KnownFindings, EntriesApplyToTheirFamilyAndReleases) {
  json other = entry("fusion");
  other["family"] = "flashinfer";
  other["releases"] = {{"from", "0.6.18"}};
  const auto l = parse(ledger({entry(), other}));
  EXPECT_EQ(fg::entries_for(l, "flashinfer-moe", "0.7.4").size(), 1u);
  EXPECT_EQ(fg::entries_for(l, "flashinfer-moe", "0.7.5").size(), 0u);  // fixed after 0.7.4
  EXPECT_EQ(fg::entries_for(l, "flashinfer-moe", "0.2.6").size(), 0u);  // before it came in
  EXPECT_EQ(fg::entries_for(l, "flashinfer-moe", "").size(), 1u);  // a tree of no known release
  EXPECT_EQ(fg::entries_for(l, "flashinfer@0.6.11", "0.6.11").size(), 0u);
  ASSERT_EQ(fg::entries_for(l, "flashinfer@0.7.2", "0.7.2").size(), 1u);
  EXPECT_EQ(fg::entries_for(l, "flashinfer@0.7.2", "0.7.2")[0].id, "fusion");
  EXPECT_EQ(fg::entries_for(l, "ours", "").size(), 0u);
}

TEST(KnownFindings, ReleasesCompareAsNumbers) {
  EXPECT_LT(fg::compare_releases("0.7.4", "0.7.10"), 0);
  EXPECT_LT(fg::compare_releases("0.2.8", "0.2.8.post1"), 0);
  EXPECT_LT(fg::compare_releases("0.2.8.post1", "0.2.9"), 0);
  EXPECT_EQ(fg::compare_releases("0.7", "0.7.0"), 0);
  EXPECT_GT(fg::compare_releases("1.0.0", "0.99.99"), 0);
  EXPECT_FALSE(fg::is_release("0.7.4rc1"));
  EXPECT_FALSE(fg::is_release(""));
}

TEST(KnownFindings, RunStatesKnownNewAbsent) {
  json finalize = entry("finalize");
  finalize["class"] = "hang";
  finalize["signature"] = {{"checks", {"hang"}}, {"variants", {1}}};
  fg::KnownFindingRun run(parse(ledger({entry(), finalize})).entries);
  run.count_trigger(moe_case(2880));  // triggers the partial-warp entry
  EXPECT_EQ(run.match(moe_case(2880), kWrong), 0);
  ++run.tallies[0].failed_cases;
  EXPECT_EQ(run.match(moe_case(4096), kWrong), -1);  // new: no entry explains it
  run.count_trigger(moe_case(4096, 1));              // triggers finalize, which never fails
  EXPECT_EQ(run.tallies[0].state(), "known");
  EXPECT_EQ(run.tallies[1].state(), "absent");
  EXPECT_EQ(run.absent(), 1);
  fg::KnownFindingRun untouched(parse(ledger({entry()})).entries);
  untouched.count_trigger(moe_case(4096));
  EXPECT_EQ(untouched.tallies[0].state(), "not drawn");
  EXPECT_EQ(untouched.absent(), 0);
}

fg::CheckResult run_with(std::vector<fg::KnownFindingTally> known, bool new_finding,
                         bool strict = false) {
  fg::CheckResult r;
  r.cases = 100;
  r.known = std::move(known);
  r.new_finding = new_finding;
  r.failed = new_finding;
  r.strict = strict;
  if (new_finding) r.findings = {{"reference", "rank 0 call 0: residual_out"}};
  return r;
}

TEST(KnownFindingReports, SummaryJsonAndJunitCarryEachState) {
  const fg::KnownFindingTally known{.id = "a", .trigger_cases = 10, .failed_cases = 4};
  const fg::KnownFindingTally absent{.id = "b", .trigger_cases = 7, .failed_cases = 0};
  fg::CheckResult r = run_with({known, absent}, false);
  EXPECT_NE(fg::summary_line(r, 2).find("no new finding (1 known reproduced)"), std::string::npos);
  EXPECT_NE(fg::known_findings_line(r).find("1 reproduced, 0 new, 1 absent"), std::string::npos);
  const json j = fg::to_json(r);
  EXPECT_EQ(j["known_findings"][0]["state"], "known");
  EXPECT_EQ(j["known_findings"][1]["state"], "absent");
  EXPECT_EQ(j["new_finding"], false);
  const std::string xml = fg::junit_xml("s", {r}, nullptr);
  EXPECT_NE(xml.find("tests=\"3\" failures=\"0\" skipped=\"1\""), std::string::npos) << xml;
  // Negative controls: strict makes the absent entry a failure; a new finding fails the run.
  fg::CheckResult strict = run_with({known, absent}, false, true);
  strict.failed = true;
  EXPECT_NE(fg::junit_xml("s", {strict}, nullptr).find("failures=\"2\""), std::string::npos);
  EXPECT_NE(fg::summary_line(strict, 2).find("a known finding is absent"), std::string::npos);
  const fg::CheckResult fresh = run_with({known}, true);
  EXPECT_NE(fg::summary_line(fresh, 2).find("FAILED [reference]"), std::string::npos);
  EXPECT_NE(fg::known_findings_line(fresh).find("1 new"), std::string::npos);
}

TEST(KnownFindingReports, TalliesAreDescribedOncePerEntryMet) {
  const fg::KnownFindingTally known{.id = "a", .trigger_cases = 10, .failed_cases = 4};
  const fg::KnownFindingTally absent{.id = "b", .trigger_cases = 7, .failed_cases = 0};
  const fg::KnownFindingTally unmet{.id = "c", .trigger_cases = 0, .failed_cases = 0};
  EXPECT_EQ(fg::describe_tallies({known, unmet, absent}),
            "a (4 of 10 cases), b (ABSENT: 7 cases drew its trigger, none failed)");
  EXPECT_EQ(fg::describe_tallies({unmet}), "");
}

TEST(KnownFindingReports, KillTableCountsOnlyNewFindingsAsKills) {
  fg::GpuPlacement placement;
  placement.compute_capability = 90;
  const fg::KnownFindingTally known{.id = "a", .trigger_cases = 10, .failed_cases = 4};
  fg::CheckResult control = run_with({known}, false);
  fg::CheckResult killed = run_with({known}, true);
  killed.mutant = fusioncheck::protocol::parse_mutant("float-sentinel").value();
  fg::CheckResult survived = run_with({known}, false);  // failed only with the known finding
  survived.mutant = killed.mutant;
  const std::string md = fg::kill_table_markdown({control, killed, survived}, "setup", placement);
  EXPECT_NE(md.find("clean (control) except known findings"), std::string::npos) << md;
  EXPECT_NE(md.find("| float-sentinel | 0 % | yes |"), std::string::npos) << md;
  EXPECT_NE(md.find("| float-sentinel | 0 % | NO |"), std::string::npos) << md;
  EXPECT_NE(md.find("a (4 of 10 cases)"), std::string::npos);
  // Negative control: a control with a new finding still fails.
  const std::string bad = fg::kill_table_markdown({run_with({known}, true)}, "setup", placement);
  EXPECT_NE(bad.find("CONTROL FAILED (the kernel as built fails"), std::string::npos);
  // A control whose known finding is absent under --strict fails, saying why.
  fg::CheckResult absent =
      run_with({{.id = "b", .trigger_cases = 7, .failed_cases = 0}}, false, true);
  absent.failed = true;
  EXPECT_NE(fg::kill_table_markdown({absent}, "setup", placement).find("a known finding is absent"),
            std::string::npos);
}

}  // namespace
