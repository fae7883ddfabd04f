// Counterexamples as values: JSON, replay, readable trace.
#include "fusioncheck/sim/counterexample.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>

namespace fusioncheck::sim {

namespace {

// The ranks a text names ("rank 12", "rank 3's").
std::set<int> ranks_named(const std::string& text) {
  static const std::regex rank(R"(\brank (\d+))");
  std::set<int> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), rank); it != std::sregex_iterator();
       ++it)
    out.insert(std::stoi((*it)[1].str()));
  return out;
}

}  // namespace

std::vector<std::string> trace_of_ranks(const std::vector<std::string>& trace,
                                        const std::set<int>& ranks) {
  std::vector<std::string> out;
  std::size_t left_out = 0;
  for (const std::string& line : trace) {
    const std::set<int> named = ranks_named(line);
    if (std::includes(ranks.begin(), ranks.end(), named.begin(), named.end())) {
      out.push_back(line);
      continue;
    }
    ++left_out;
    if (line.find("VIOLATION") != std::string::npos) out.push_back(line);
  }
  if (left_out > 0)
    out.insert(out.begin(), fmt::format("({} steps of other ranks left out)", left_out));
  return out;
}

Counterexample make_counterexample(const SimConfig& config, const Profile& profile, Mutant mutant,
                                   SchedulerKind scheduler, const SearchResult& result) {
  Counterexample cx;
  cx.profile = std::string(profile.name);
  cx.mutant = mutant;
  cx.config = config;
  cx.scheduler = scheduler;
  cx.seed = result.counterexample_seed;
  cx.deviations = result.counterexample->deviations;
  cx.hold = result.counterexample->hold;
  cx.kind = result.counterexample->violation->kind;
  cx.violation = result.counterexample->violation->text;
  cx.steps = result.counterexample->steps;
  return cx;
}

nlohmann::json to_json(const Counterexample& cx) {
  nlohmann::json calls = nlohmann::json::array();
  auto devs = nlohmann::json::array();
  for (const auto& d : cx.deviations) devs.push_back({d.step, d.choice});
  nlohmann::json j = {
      {"format", "fusioncheck-sim-counterexample-1"},
      {"profile", cx.profile},
      {"mutant", std::string(protocol::mutant_id(cx.mutant))},
      {"config",
       {{"ranks", cx.config.ranks},
        {"blocks", cx.config.blocks},
        {"vectors_per_block", cx.config.vectors_per_block},
        {"elems_per_vector", cx.config.elems_per_vector},
        {"calls", format_calls(cx.config.calls)},
        {"graph_replays", cx.config.graph_replays},
        {"late_trigger", cx.config.late_trigger}}},
      {"scheduler", scheduler_name(cx.scheduler)},
      {"seed", cx.seed},
      {"deviations", devs},
      {"violation_kind", violation_kind_name(cx.kind)},
      {"violation", cx.violation},
      {"steps", cx.steps},
  };
  if (!cx.hold.empty()) j["hold"] = cx.hold;  // held-rank schedules only
  if (cx.config.streams > 1) j["config"]["streams"] = cx.config.streams;  // else one (older files)
  if (cx.config.vllm_barrier != VllmBarrier::counter_sets)  // else counter sets (older files)
    j["config"]["vllm_barrier"] = vllm_barrier_name(cx.config.vllm_barrier);
  if (cx.config.independent_lanes) j["config"]["independent_lanes"] = true;
  return j;
}

Counterexample counterexample_from_json(const nlohmann::json& j) {
  try {
    Counterexample cx;
    if (j.at("format").get<std::string>() != "fusioncheck-sim-counterexample-1")
      throw std::invalid_argument("unknown counterexample format");
    cx.profile = j.at("profile").get<std::string>();
    if (!find_profile(cx.profile))
      throw std::invalid_argument("unknown profile '" + cx.profile + "'");
    const auto mutant = protocol::parse_mutant(j.at("mutant").get<std::string>());
    if (!mutant)
      throw std::invalid_argument("unknown mutant '" + j.at("mutant").get<std::string>() + "'");
    cx.mutant = *mutant;
    const auto& c = j.at("config");
    cx.config.ranks = c.at("ranks").get<int>();
    cx.config.blocks = c.at("blocks").get<int>();
    cx.config.vectors_per_block = c.at("vectors_per_block").get<int>();
    cx.config.elems_per_vector = c.at("elems_per_vector").get<int>();
    if (!parse_calls(c.at("calls").get<std::string>(), cx.config.calls))
      throw std::invalid_argument("bad call list '" + c.at("calls").get<std::string>() + "'");
    cx.config.graph_replays = c.at("graph_replays").get<int>();
    cx.config.late_trigger = c.at("late_trigger").get<bool>();
    if (c.contains("streams")) cx.config.streams = c.at("streams").get<int>();
    if (c.contains("vllm_barrier")) {
      const auto barrier = parse_vllm_barrier(c.at("vllm_barrier").get<std::string>());
      if (!barrier) throw std::invalid_argument("unknown vllm_barrier");
      cx.config.vllm_barrier = *barrier;
    }
    if (c.contains("independent_lanes"))
      cx.config.independent_lanes = c.at("independent_lanes").get<bool>();
    const auto scheduler = parse_scheduler(j.at("scheduler").get<std::string>());
    if (!scheduler) throw std::invalid_argument("unknown scheduler");
    cx.scheduler = *scheduler;
    cx.seed = j.at("seed").get<std::uint64_t>();
    for (const auto& d : j.at("deviations"))
      cx.deviations.push_back({d.at(0).get<std::uint32_t>(), d.at(1).get<std::uint32_t>()});
    for (std::size_t i = 1; i < cx.deviations.size(); ++i)
      if (cx.deviations[i].step <= cx.deviations[i - 1].step)
        throw std::invalid_argument("deviations must be in increasing step order");
    cx.violation = j.at("violation").get<std::string>();
    cx.hold = j.value("hold", std::string());
    cx.steps = j.value("steps", std::uint64_t{0});
    const std::string error = validate(cx.config, *find_profile(cx.profile));
    if (!error.empty()) throw std::invalid_argument(error);
    if (!in_sim(cx.mutant, protocol_of(cx.config)))
      throw std::invalid_argument(fmt::format("mutant {} is not in the sim's {} model",
                                              protocol::mutant_id(cx.mutant),
                                              protocol_name(protocol_of(cx.config))));
    return cx;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("malformed counterexample: ") + e.what());
  }
}

void write_counterexample(const Counterexample& cx, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << to_json(cx).dump(2) << "\n";
}

Counterexample read_counterexample(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read counterexample file '" + path + "'");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("'" + path + "' is not JSON");
  }
  return counterexample_from_json(j);
}

std::string counterexample_file_name(const Counterexample& cx) {
  // Another model's files say which where the id does not (a mutant may be in several).
  const std::string_view id = protocol::mutant_id(cx.mutant);
  const SimProtocol model = protocol_of(cx.config);
  const std::string prefix =
      model == SimProtocol::lamport ? "" : std::string(protocol_name(model)) + "-";
  const bool mark = !prefix.empty() && !id.starts_with(prefix);
  return fmt::format("sim-{}{}-{}.json", mark ? prefix : "", id, cx.profile);
}

Replay replay(const Counterexample& cx) {
  Replay out;
  const auto model = make_model(cx.config, *find_profile(cx.profile), cx.mutant);
  model->set_trace(&out.trace);
  out.run = run_replay(*model, cx.deviations);
  out.reproduced = out.run.violation && out.run.violation->text == cx.violation;
  return out;
}

std::string format_counterexample(const Counterexample& cx, const std::vector<std::string>& trace,
                                  const std::string& file) {
  std::string out = fmt::format(
      "counterexample: mutant {} on {}{}\n"
      "  config: {} ranks x {} blocks x {} vectors/block x {} elements/vector, calls {}{}{}\n"
      "  schedule: found by {}{}; replays from {} deviation(s) from the default order, {} steps\n"
      "  violation ({}): {}\n",
      protocol::mutant_id(cx.mutant), cx.profile,
      protocol_of(cx.config) == SimProtocol::pcie      ? " (model of the PCIe protocol)"
      : protocol_of(cx.config) == SimProtocol::vllm    ? " (model of vLLM's barrier protocol)"
      : protocol_of(cx.config) == SimProtocol::mnnvl   ? " (model of the MNNVL protocol)"
      : protocol_of(cx.config) == SimProtocol::sglang  ? " (model of SGLang's push plane)"
      : protocol_of(cx.config) == SimProtocol::ce_ring ? " (model of the copy-engine ring)"
                                                       : "",
      cx.config.ranks, cx.config.blocks, cx.config.vectors_per_block, cx.config.elems_per_vector,
      format_calls(cx.config.calls),
      cx.config.graph_replays > 1 ? fmt::format(" replayed {}x", cx.config.graph_replays) : "",
      cx.config.streams > 1 ? fmt::format(", {} streams", cx.config.streams)
      : cx.config.vllm_barrier == VllmBarrier::start_end
          ? fmt::format(", start-end barrier{}",
                        cx.config.independent_lanes ? ", independent lanes" : "")
      : protocol_of(cx.config) != SimProtocol::lamport ? ""
      : cx.config.late_trigger                         ? ", late trigger"
                                                       : ", early trigger",
      scheduler_name(cx.scheduler),
      cx.scheduler == SchedulerKind::exhaustive ? "" : fmt::format(" (seed {})", cx.seed),
      cx.deviations.size(), cx.steps, violation_kind_name(cx.kind), cx.violation);
  if (!cx.hold.empty()) out += fmt::format("  held: {}\n", cx.hold);
  if (cx.deviations.size() > kDeviationsShown) {
    out += fmt::format("  deviations: {} (the file lists them)\n", cx.deviations.size());
  } else if (!cx.deviations.empty()) {
    out += "  deviations (step:choice):";
    for (const auto& d : cx.deviations) out += fmt::format(" {}:{}", d.step, d.choice);
    out += "\n";
  }
  // At rack scale only the ranks the violation (and the hold) names are followed.
  std::set<int> involved = ranks_named(cx.violation + " " + cx.hold);
  const bool filter = cx.config.ranks > kRanksTracedWhole && !involved.empty();
  out += filter ? fmt::format("trace of ranks {}:\n", fmt::join(involved, ", ")) : "trace:\n";
  for (const auto& line : filter ? trace_of_ranks(trace, involved) : trace)
    out += "  " + line + "\n";
  if (!file.empty())
    out += fmt::format("written to {}\nreplay with: fusioncheck sim --replay {}\n", file, file);
  return out;
}

}  // namespace fusioncheck::sim
