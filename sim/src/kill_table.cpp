// The mutant x profile kill table.
#include "fusioncheck/sim/kill_table.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <string_view>

namespace fusioncheck::sim {

std::string counterexample_size(const Counterexample& cx) {
  const auto& c = cx.config;
  return fmt::format("{}r x {}b x {}v x {}e, {} calls, {} dev, {} steps", c.ranks, c.blocks,
                     c.vectors_per_block, c.elems_per_vector, c.calls.size() * c.graph_replays,
                     cx.deviations.size(), cx.steps);
}

// "float-sentinel", or "float-sentinel (PCIe)" for a row of the PCIe model.
std::string row_label(const KillRow& row) {
  return fmt::format("{}{}", protocol::mutant_id(row.mutant), protocol_label(row.protocol));
}

KillRow kill_row(Mutant mutant, const Profile& profile, const KillTableOptions& options,
                 SimProtocol protocol) {
  KillRow row;
  row.mutant = mutant;
  row.protocol = mutant_protocol(mutant, protocol);
  row.profile = std::string(profile.name);
  struct Attempt {
    SchedulerKind scheduler;
    SimConfig config;
    std::uint64_t budget;
  };
  const Attempt attempts[] = {
      {SchedulerKind::random, provoking_config(mutant, row.protocol), options.random_budget},
      {SchedulerKind::pct, provoking_config(mutant, row.protocol), options.random_budget},
      {SchedulerKind::held_rank, provoking_config(mutant, row.protocol), options.random_budget},
      {SchedulerKind::exhaustive, provoking_tiny_config(mutant, row.protocol),
       options.exhaustive_budget},
  };
  for (const auto& attempt : attempts) {
    SearchOptions search_options;
    search_options.scheduler = attempt.scheduler;
    search_options.budget = attempt.budget;
    search_options.seed = 1;
    search_options.time_limit_s = options.row_time_limit_s;
    const SearchResult result = search(attempt.config, profile, mutant, search_options);
    row.seconds_to_detect += result.seconds;
    row.schedules += result.executions;
    if (!result.counterexample) continue;
    row.killed = true;
    row.scheduler = attempt.scheduler;
    const Counterexample found =
        make_counterexample(attempt.config, profile, mutant, attempt.scheduler, result);
    row.minimal = mutant == Mutant::none ? found : minimise(found);
    break;
  }
  return row;
}

std::vector<KillRow> kill_table(const KillTableOptions& options) {
  std::vector<KillRow> rows;
  for (SimProtocol protocol : options.protocols) {
    std::vector<Mutant> mutants;
    if (options.include_correct) mutants.push_back(Mutant::none);
    for (const auto& info : protocol::kMutantCatalogue)
      if (in_sim(info.mutant, protocol)) mutants.push_back(info.mutant);
    for (Mutant m : mutants)
      for (const auto& profile : profiles_of(protocol)) {
        rows.push_back(kill_row(m, profile, options, protocol));
        if (options.on_row) options.on_row(rows.back());
      }
  }
  return rows;
}

std::string format_kill_table(const std::vector<KillRow>& rows) {
  std::string out;
  // Summary: one line per mutant, one column per profile that a row ran on.
  std::vector<std::string_view> columns;
  for (const auto& p : kProfiles) columns.push_back(p.name);
  for (const auto& p : kRackProfiles)
    if (std::any_of(rows.begin(), rows.end(),
                    [&](const KillRow& r) { return r.profile == p.name; }))
      columns.push_back(p.name);
  out += "| mutant |";
  for (const auto name : columns) out += fmt::format(" {} |", name);
  out += "\n|---|";
  for (std::size_t i = 0; i < columns.size(); ++i) out += "---|";
  out += "\n";
  std::map<std::string, std::vector<const KillRow*>> by_label;
  std::vector<std::string> order;
  for (const auto& r : rows) {
    const std::string label = row_label(r);
    if (by_label[label].empty()) order.push_back(label);
    by_label[label].push_back(&r);
  }
  for (const std::string& label : order) {
    out += fmt::format("| {} |", label);
    for (const auto name : columns) {
      std::string cell = " |";
      for (const KillRow* r : by_label[label])
        if (r->profile == name)
          cell =
              r->killed ? (r->mutant == Mutant::none ? " **FLAGGED** |" : " killed |") : " clean |";
      out += cell;
    }
    out += "\n";
  }
  out +=
      "\n| mutant | profile | killed | time to detect | schedules | found by | minimised "
      "counterexample | violation |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const std::string time = r.seconds_to_detect < 0.01
                                 ? fmt::format("{:.2f} ms", r.seconds_to_detect * 1e3)
                                 : fmt::format("{:.3f} s", r.seconds_to_detect);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", row_label(r), r.profile,
                       r.killed ? "yes" : "no", time, r.schedules,
                       r.killed ? scheduler_name(r.scheduler) : "-",
                       r.killed ? counterexample_size(r.minimal) : "-",
                       r.killed ? violation_kind_name(r.minimal.kind) : "-");
  }
  return out;
}

}  // namespace fusioncheck::sim
