#include "fusioncheck/gpu/gpu_report.hpp"

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/wait_start.hpp"
#include "fusioncheck/files/whole_file.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace fusioncheck::gpu {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

// The focus of a run's cases, as its summary and kill table row say it ("" for none).
std::string focus_words(const CheckResult& r) {
  return std::string(r.late_blocks ? ", blocks started late" : "") +
         (r.held_rank ? ", a rank held a call behind" : "");
}

std::string first_finding(const CheckResult& r) {
  return r.findings.empty() ? std::string("-")
                            : "[" + r.findings.front().check + "] " + r.findings.front().message;
}

// "known a (12 cases), b (absent: 40 cases drew its trigger)" or "".
std::string known_summary(const CheckResult& r) { return describe_tallies(r.known); }

int known_reproduced(const CheckResult& r) {
  return static_cast<int>(
      std::count_if(r.known.begin(), r.known.end(),
                    [](const KnownFindingTally& t) { return t.state() == "known"; }));
}

}  // namespace

std::string known_findings_line(const CheckResult& r) {
  if (r.known.empty()) return "";
  int absent = 0;
  for (const auto& t : r.known) absent += t.state() == "absent";
  return fmt::format("known findings: {} reproduced, {} new, {} absent{}{}{}", known_reproduced(r),
                     r.new_finding ? 1 : 0, absent,
                     absent > 0 ? (r.strict ? " (--strict: fixed upstream? update the ledger)"
                                            : " (fixed upstream? --strict fails on it)")
                                : "",
                     known_summary(r).empty() ? "" : ": ", known_summary(r));
}

void write_file(const std::string& path, const std::string& text) {
  if (const std::string why = files::write_whole_file(path, text); !why.empty())
    throw RunFailure("cannot write " + path + ": " + why);
}

std::string summary_line(const CheckResult& r, int ranks) {
  const double rate = r.seconds > 0 ? r.cases / r.seconds : 0.0;
  return fmt::format(
      "{} ranks, mutant {}, {} % two-shot calls{}{}: {} cases ({} kernel calls per rank, {} refused) in "
      "{:.1f} s = {:.0f} checked cases/s: {}",
      ranks, r.mutant.id(), r.twoshot_percent, focus_words(r),
      r.variant >= 0 ? fmt::format(", variant {} only", r.variant) : "", r.cases, r.calls,
      r.refused, r.seconds, rate,
      r.new_finding ? "FAILED " + first_finding(r)
      : r.failed    ? std::string("FAILED: a known finding is absent (--strict)")
      : known_reproduced(r) > 0
          ? fmt::format("no new finding ({} known reproduced)", known_reproduced(r))
          : std::string("all passed"));
}

std::string time_breakdown(const CheckResult& r) {
  const int n = std::max(1, r.cases + r.refused);
  const PhaseTimes& t = r.times;
  const double other =
      r.seconds - t.inputs - t.uploads - t.kernels - t.reference - t.invariants - t.exchange;
  auto ms = [n](double s) { return 1e3 * s / n; };
  return fmt::format(
      "time per case, rank 0, ms: inputs {:.2f}, uploads {:.2f}, barrier+kernels {:.2f}, "
      "reference {:.2f}, invariants {:.2f}, report exchange {:.2f}, other (case generation and "
      "broadcast, workspace set-up) {:.2f}; longest wait that ended without a hang {:.1f} ms "
      "(the host's hang bound, for kernels whose polls have none: {} ms plus the case's pauses)",
      ms(t.inputs), ms(t.uploads), ms(t.kernels), ms(t.reference), ms(t.invariants), ms(t.exchange),
      ms(other), 1e3 * t.longest_finished_wait,
      base_wait_budget(WaitStart::every_rank_enqueued).count());
}

std::string wait_margin_note(const CheckResult& r) {
  const PhaseTimes& t = r.times;
  if (!t.closest_wait_case || t.closest_wait * 4 < t.closest_wait_bound) return "";
  return fmt::format(
      "near the hang bound: a case's kernels ended on their own after {:.1f} ms, more than a "
      "quarter of the host's {:.0f} ms bound for that case; the case: {}",
      1e3 * t.closest_wait, 1e3 * t.closest_wait_bound, describe(*t.closest_wait_case));
}

std::string failure_report(const CheckResult& r, const GpuPlacement& placement, int ranks) {
  std::string out =
      fmt::format("\nFAILED: {}{}\n", r.minimal ? "the smallest failing case" : "the run",
                  r.mutant.none() ? std::string() : fmt::format(" (mutant {})", r.mutant.id()));
  out += fmt::format("  {:<18}{}\n", "ranks", ranks);
  out += fmt::format("  {:<18}{}\n", "GPUs", describe(placement, ranks));
  if (r.minimal) out += describe_block(*r.minimal, "  ");
  for (const std::string& note : r.minimal_notes) out += fmt::format("  {:<18}{}\n", "", note);
  for (const auto& f : r.findings)
    out += fmt::format("  {:<18}[{}] {}\n", "finding", f.check, f.message);
  if (!r.known.empty()) out += fmt::format("  {:<18}{}\n", "ledger", known_findings_line(r));
  if (r.cases_to_first_failure)
    out += fmt::format("  {:<18}case {} after {:.2f} s; shrunk to {} calls\n", "first failure",
                       r.cases_to_first_failure, r.seconds_to_first_failure, r.minimal_calls);
  if (r.replay_failed_run)
    out += fmt::format("  {:<18}run {} of {}\n", "replay failed on", r.replay_failed_run,
                       r.replay_runs);
  if (!r.replay_file.empty()) out += fmt::format("  {:<18}{}\n", "replay file", r.replay_file);
  if (!r.reproducer.empty()) out += fmt::format("  {:<18}{}\n", "reproducer", r.reproducer);
  if (!r.replay_command.empty())
    out += fmt::format("  {:<18}{}\n", "replay with", r.replay_command);
  return out;
}

nlohmann::json to_json(const CheckResult& r) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : r.findings) findings.push_back({{"check", f.check}, {"message", f.message}});
  nlohmann::json known = nlohmann::json::array();
  for (const auto& t : r.known)
    known.push_back({{"id", t.id},
                     {"class", finding_class_name(t.finding_class)},
                     {"state", t.state()},
                     {"trigger_cases", t.trigger_cases},
                     {"failed_cases", t.failed_cases},
                     {"replay_file", t.replay_file}});
  return {{"mutant", r.mutant.id()},
          {"twoshot_percent", r.twoshot_percent},
          {"late_blocks", r.late_blocks},
          {"held_rank", r.held_rank},
          {"failed", r.failed},
          {"cases", r.cases},
          {"refused", r.refused},
          {"refusals", r.refusals},
          {"calls_per_rank", r.calls},
          {"seconds", r.seconds},
          {"seconds_to_first_failure", r.seconds_to_first_failure},
          {"cases_to_first_failure", r.cases_to_first_failure},
          {"minimal_case", r.minimal ? to_json(*r.minimal) : nlohmann::json()},
          {"minimal_case_notes", r.minimal_notes},
          {"findings", findings},
          {"new_finding", r.new_finding},
          {"known_findings", known},
          {"replay", r.replay_command},
          {"reproducer", r.reproducer},
          {"seconds_by_phase",
           {{"inputs", r.times.inputs},
            {"uploads", r.times.uploads},
            {"kernels", r.times.kernels},
            {"reference", r.times.reference},
            {"invariants", r.times.invariants},
            {"exchange", r.times.exchange}}},
          {"longest_finished_wait_seconds", r.times.longest_finished_wait},
          {"closest_finished_wait",
           r.times.closest_wait_case ? nlohmann::json{{"seconds", r.times.closest_wait},
                                                      {"bound_seconds", r.times.closest_wait_bound},
                                                      {"case", to_json(*r.times.closest_wait_case)}}
                                     : nlohmann::json()}};
}

std::string junit_xml(const std::string& suite, const std::vector<CheckResult>& runs,
                      const GpuPlacement* kill_table) {
  int failures = 0, skipped = 0;
  std::size_t tests = runs.size();
  std::string body;
  for (const auto& r : runs) {
    // A mutant run passes when the mutant is killed; the correct kernels pass when clean. A
    // survivor this setup cannot kill is skipped, with the reason.
    const bool expected_failure = kill_table != nullptr && !r.mutant.none();
    const std::string excuse = expected_failure && !r.failed ? r.survival_excuse : "";
    const bool bad = excuse.empty() && (expected_failure ? !r.failed : r.failed);
    failures += bad ? 1 : 0;
    skipped += excuse.empty() ? 0 : 1;
    body += fmt::format(
        "  <testcase classname=\"{}\" name=\"{}, {} % two-shot calls\" time=\"{:.3f}\">\n",
        xml_escape(suite), r.mutant.id(), r.twoshot_percent, r.seconds);
    if (!excuse.empty()) body += fmt::format("    <skipped message=\"{}\"/>\n", xml_escape(excuse));
    if (bad)
      body += fmt::format(
          "    <failure message=\"{}\"/>\n",
          xml_escape(expected_failure ? "mutant survived " + std::to_string(r.cases) + " cases"
                                      : first_finding(r)));
    body += "  </testcase>\n";
    // Each ledger entry of the run: passed when reproduced, skipped when not drawn or (without
    // --strict) absent, failed when absent under --strict.
    for (const auto& t : r.known) {
      const std::string state = t.state();
      const bool absent_fails = state == "absent" && r.strict;
      failures += absent_fails ? 1 : 0;
      skipped += state != "known" && !absent_fails ? 1 : 0;
      ++tests;
      body += fmt::format("  <testcase classname=\"{}\" name=\"{}: known {}\" time=\"0\">\n",
                          xml_escape(suite), r.mutant.id(), xml_escape(t.id));
      const std::string what =
          fmt::format("{}: {} of {} cases that drew its trigger failed with it", state,
                      t.failed_cases, t.trigger_cases);
      if (absent_fails)
        body += fmt::format("    <failure message=\"{}\"/>\n",
                            xml_escape("absent, fixed upstream? update the ledger; " + what));
      else if (state != "known")
        body += fmt::format("    <skipped message=\"{}\"/>\n", xml_escape(what));
      else body += fmt::format("    <system-out>{}</system-out>\n", xml_escape(what));
      body += "  </testcase>\n";
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n{}</testsuite>\n",
      xml_escape(suite), tests, failures, skipped, body);
}

std::string expected_survival(const MutantId& mutant, const GpuPlacement& placement) {
  using protocol::Mutant;
  if ((mutant == Mutant::pdl_wait_missing || mutant == Mutant::empty_body) &&
      placement.compute_capability < 120)
    return fmt::format("correct code on sm_{} (the bug is in sm_120 code; the audit flags it)",
                       placement.compute_capability);
  if (mutant == Mutant::barrier_no_release && placement.ranks_share_gpu)
    return "seldom observable between ranks on one GPU (one coherent L2); the sim kills it";
  if (mutant == Mutant::torn_element && placement.ranks_share_gpu && !placement.mps_running)
    return "time-sliced ranks never run at the same moment";
  return "";
}

std::vector<KillTableRun> kill_table_plan(const std::vector<MutantId>& mutants, int default_percent,
                                          const std::function<bool(const MutantId&)>& twoshot_only,
                                          const std::function<bool(const MutantId&)>& late_blocks,
                                          const std::function<int(const MutantId&)>& variant_of,
                                          const std::function<bool(const MutantId&)>& held_rank) {
  std::vector<KillTableRun> plan;
  const KillTableRun plain{MutantId(), default_percent, false, -1, false};
  std::vector<KillTableRun> focuses;  // each focus a mutant runs under, as its control runs it
  for (const auto& m : mutants) {
    plan.push_back({m, twoshot_only(m) ? kTwoShotMutantPercent : default_percent, late_blocks(m),
                    variant_of ? variant_of(m) : -1, held_rank && held_rank(m)});
    KillTableRun control = plan.back();
    control.mutant = MutantId();
    if (control != plain && std::find(focuses.begin(), focuses.end(), control) == focuses.end())
      focuses.push_back(control);
  }
  if (plan.empty() || !plan.front().mutant.none()) return plan;
  plan.insert(plan.begin() + 1, focuses.begin(), focuses.end());
  return plan;
}

namespace {

// The "killed" cell of a kill table row.
std::string kill_verdict(const CheckResult& r, const GpuPlacement& placement) {
  if (r.mutant.none()) {
    if (r.new_finding) return "CONTROL FAILED (the kernel as built fails: see gpu check)";
    if (r.failed) return "CONTROL FAILED: a known finding is absent (--strict; fixed upstream?)";
    return known_reproduced(r) > 0 ? "clean (control) except known findings" : "clean (control)";
  }
  if (r.failed) return "yes";
  return r.survival_excuse.empty() ? "NO" : "no, as expected here: " + r.survival_excuse;
}

}  // namespace

std::string kill_table_markdown(const std::vector<CheckResult>& runs, const std::string& setup,
                                const GpuPlacement& placement,
                                const std::vector<std::pair<MutantId, std::string>>& not_built) {
  std::string out = fmt::format(
      "Setup: {}\n\n| mutant | two-shot calls | killed | how (first check that failed) "
      "| time to detect (s) | cases to detect | first finding | known findings met |\n"
      "|---|---|---|---|---|---|---|---|\n",
      setup);
  for (const auto& r : runs) {
    std::string how = r.findings.empty() ? "-" : r.findings.front().check;
    std::string message = r.findings.empty() ? "-" : r.findings.front().message;
    if (message.size() > 160) message = message.substr(0, 157) + "...";
    for (auto& ch : message)
      if (ch == '|') ch = '/';
    std::string known = known_summary(r);
    for (auto& ch : known)
      if (ch == '|') ch = '/';
    out += fmt::format(
        "| {} | {} %{}{} | {} | {} | {} | {} | {} | {} |\n", r.mutant.id(), r.twoshot_percent,
        focus_words(r), r.variant >= 0 ? fmt::format(", variant {} only", r.variant) : "",
        kill_verdict(r, placement), how,
        r.failed ? fmt::format("{:.2f}", r.seconds_to_first_failure) : "-",
        r.failed ? std::to_string(r.cases_to_first_failure) : std::to_string(r.cases), message,
        known.empty() ? "-" : known);
  }
  for (const auto& [mutant, why] : not_built)
    out += fmt::format("| {} | - | not built for this tree: {} | - | - | - | - | - |\n",
                       mutant.id(), why);
  return out;
}

}  // namespace fusioncheck::gpu
