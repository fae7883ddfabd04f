// `fusioncheck sim`: explores the protocol model on a profile, prints and writes a minimal
// counterexample, replays one from a file, or prints the kill table.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <system_error>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/cli/options.hpp"
#include "fusioncheck/cli/paths.hpp"
#include "fusioncheck/files/json_file.hpp"
#include "fusioncheck/sim/counterexample.hpp"
#include "fusioncheck/sim/kill_table.hpp"

namespace fusioncheck::cli {
namespace {

using namespace fusioncheck::sim;

constexpr std::uint64_t kMaxBudget = 1000000000;              // days of search: more is a typo
constexpr std::uint64_t kDefaultBudget = 10000;               // random and pct: schedules
constexpr std::uint64_t kDefaultExhaustiveBudget = 10000000;  // exhaustive: executions
constexpr int kMaxPctDepth = 16;
constexpr int kMaxDeviations = 4;
constexpr int kMaxGraphReplays = 64;

struct SimArgs {
  std::string profile, mutant = "none", scheduler = "random", replay, out = ".", calls;
  std::string protocol;  // empty: the mutant's model (lamport for none)
  std::string table_out;
  std::optional<std::uint64_t> budget;  // default: per scheduler (or the table's)
  std::uint64_t seed = 1;
  int depth = 3, deviations = 2;
  std::optional<int> ranks, blocks, vectors, elems, graph_replays, streams;
  std::string vllm_barrier;  // empty: the model's default (counter sets)
  bool independent_lanes = false;
  bool late_trigger = false, tiny = false, no_minimise = false, table = false;
};

// The mutant's provoking configuration (the default one for most), then the options.
SimConfig config_from(const SimArgs& a, Mutant mutant) {
  SimProtocol protocol = SimProtocol::lamport;
  for (SimProtocol p : kSimProtocols)
    if (a.protocol == protocol_name(p)) protocol = p;
  if (!a.protocol.empty() && !in_sim(mutant, protocol))
    throw UsageError(fmt::format("mutant {} is not in the sim's {} model (see fusioncheck mutants)",
                                 protocol::mutant_id(mutant), protocol_name(protocol)));
  SimConfig c =
      a.tiny ? provoking_tiny_config(mutant, protocol) : provoking_config(mutant, protocol);
  if (a.ranks) c.ranks = *a.ranks;
  if (a.blocks) c.blocks = *a.blocks;
  if (a.vectors) c.vectors_per_block = *a.vectors;
  if (a.elems) c.elems_per_vector = *a.elems;
  if (a.graph_replays) c.graph_replays = *a.graph_replays;
  if (a.late_trigger) c.late_trigger = true;
  if (a.streams) c.streams = *a.streams;
  if (!a.vllm_barrier.empty()) c.vllm_barrier = *parse_vllm_barrier(a.vllm_barrier);
  if (a.independent_lanes) c.independent_lanes = true;
  if (!a.calls.empty() && !parse_calls(a.calls, c.calls))
    throw UsageError("bad --calls '" + a.calls +
                     "' (expected e.g. os4,os2,ts4 or pp4,rs2 or vs4,vt2 or mo2,mt1 or sp4,sf1)");
  // The calls say which model runs: --protocol must not name the other one.
  if (!a.protocol.empty() && protocol_of(c) != protocol)
    throw UsageError(fmt::format("--calls {} are calls of the {} model, --protocol is {}", a.calls,
                                 protocol_name(protocol_of(c)), a.protocol));
  if (!in_sim(mutant, protocol_of(c)))
    throw UsageError(fmt::format("mutant {} is not in the sim's {} model (see fusioncheck mutants)",
                                 protocol::mutant_id(mutant), protocol_name(protocol_of(c))));
  return c;
}

// Everything but these options configures a search of one profile; say which do not apply.
constexpr std::initializer_list<const char*> kSearchOptions = {
    "--profile",    "--mutant",      "--scheduler", "--seed",          "--depth",
    "--deviations", "--protocol",    "--out",       "--ranks",         "--blocks",
    "--vectors",    "--elems",       "--calls",     "--graph-replays", "--late-trigger",
    "--tiny",       "--no-minimise", "--streams",   "--vllm-barrier",  "--independent-lanes"};

// The mode (--replay, --table or a search) and the options that apply to it; every path is
// checked here, before any work.
void check_mode(const CLI::App& sub, const SimArgs& a) {
  const bool replay_mode = sub.count("--replay") > 0;
  if (replay_mode && a.table) throw UsageError("--replay and --table exclude each other");
  if (replay_mode) {
    const std::string why =
        "the counterexample file fixes the profile, mutant, configuration and schedule";
    refuse_options(sub, kSearchOptions, "to --replay", why);
    refuse_options(sub, {"--budget", "--table-out"}, "to --replay", why);
    require_readable_file("--replay", a.replay);
    return;
  }
  if (a.table) {
    refuse_options(sub, kSearchOptions, "to --table",
                   "the table runs fixed searches of every mutant on every profile; only --budget "
                   "and --table-out apply");
    if (sub.count("--table-out") > 0) require_output_file("--table-out", a.table_out);
    return;
  }
  refuse_options(sub, {"--table-out"}, "without --table", "it is where the kill table is written");
  if (a.profile.empty()) throw UsageError("sim needs --profile (or --replay FILE, or --table)");
  if (a.scheduler != "pct")
    refuse_options(sub, {"--depth"}, "to --scheduler " + a.scheduler,
                   "it is the PCT bug depth; use --scheduler pct");
  if (a.scheduler != "exhaustive")
    refuse_options(sub, {"--deviations"}, "to --scheduler " + a.scheduler,
                   "it bounds the exhaustive search; use --scheduler exhaustive");
  require_output_folder("--out", a.out);
}

// Where a search on `profile` writes its counterexample.
std::string counterexample_path(const std::string& out_dir, const Profile& profile, Mutant mutant,
                                const SimConfig& config) {
  Counterexample cx;
  cx.profile = profile.name;
  cx.mutant = mutant;
  cx.config = config;
  return (std::filesystem::path(out_dir) / counterexample_file_name(cx)).string();
}

int report_counterexample(const Counterexample& cx, const std::string& out_dir) {
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) throw WriteError("creating folder " + out_dir + ": " + error.message());
  const std::string file = (std::filesystem::path(out_dir) / counterexample_file_name(cx)).string();
  write_output_file(file, to_json(cx).dump(2) + "\n");
  const Replay r = replay(cx);
  fmt::print("{}", format_counterexample(cx, r.trace, file));
  return kExitFindings;
}

constexpr std::uintmax_t kMaxCounterexampleBytes = 1 << 20;  // one minimised schedule: a few KB

// `j[name]` is absent, or a JSON integer in [0, hi]: nothing bent into range (2.7 read as 2,
// -1 wrapped to 2^64-1, 2^32+2 truncated to 2).
void require_count(const nlohmann::json& j, const char* name, std::uint64_t hi,
                   const std::string& file) {
  if (!j.is_object() || !j.contains(name)) return;
  const nlohmann::json& v = j.at(name);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > hi)
    throw UsageError(fmt::format("--replay {}: {} = {}: expected an integer in [0, {}]", file, name,
                                 files::quote_json(v), hi));
}

// The counterexample file as one JSON document (nothing after it), its numbers strict.
nlohmann::json read_counterexample_json(const std::string& file) {
  std::string text;
  if (const std::string why = files::read_small_file(file, kMaxCounterexampleBytes, text);
      !why.empty())
    throw UsageError("--replay " + file + ": " + why + " (a counterexample file)");
  nlohmann::json j;  // strict: no trailing text
  if (const std::string why = files::parse_json(text, j); !why.empty())
    throw UsageError("--replay " + file + ": " + why);
  constexpr std::uint64_t kInt = std::numeric_limits<int>::max();
  constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
  require_count(j, "seed", std::numeric_limits<std::uint64_t>::max(), file);
  require_count(j, "steps", std::numeric_limits<std::uint64_t>::max(), file);
  if (j.is_object() && j.contains("config"))
    for (const char* name :
         {"ranks", "blocks", "vectors_per_block", "elems_per_vector", "graph_replays"})
      require_count(j["config"], name, kInt, file);
  if (j.is_object() && j.contains("deviations") && j["deviations"].is_array())
    for (const auto& d : j["deviations"]) {
      const nlohmann::json pair = d.is_array() && d.size() == 2
                                      ? nlohmann::json{{"step", d[0]}, {"choice", d[1]}}
                                      : nlohmann::json{{"step", d}};
      require_count(pair, "step", kU32, file);
      require_count(pair, "choice", kU32, file);
      if (!pair.contains("choice"))
        throw UsageError("--replay " + file + ": a deviation is not a pair [step, choice]");
    }
  return j;
}

int run_replay_file(const SimArgs& a) {
  Counterexample cx;
  try {
    cx = counterexample_from_json(read_counterexample_json(a.replay));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const Replay r = replay(cx);
  if (!r.run.violation) {
    fmt::print("replay of {} is clean: the recorded violation did not happen\n", a.replay);
    return kExitClean;
  }
  Counterexample shown = cx;
  shown.violation = r.run.violation->text;
  shown.kind = r.run.violation->kind;
  shown.steps = r.run.steps;
  fmt::print("{}", format_counterexample(shown, r.trace, ""));
  fmt::print("{}\n", r.reproduced ? "reproduced: the same violation as recorded"
                                  : "a different violation than recorded: " + cx.violation);
  return kExitFindings;
}

// The mutants whose search starts from their own configuration, one line each.
std::string provoking_configs_text() {
  const auto describe = [](const SimConfig& c) {
    return fmt::format("{}, {} ranks x {} blocks x {} vectors x {} elements", format_calls(c.calls),
                       c.ranks, c.blocks, c.vectors_per_block, c.elems_per_vector);
  };
  std::string out;
  for (const auto& info : protocol::kMutantCatalogue) {
    const SimProtocol protocol = mutant_protocol(info.mutant);
    const SimConfig config = provoking_config(info.mutant, protocol);
    const SimConfig tiny = provoking_tiny_config(info.mutant, protocol);
    if (config == default_config(protocol) && tiny == tiny_config(protocol)) continue;
    out += fmt::format(
        "`{}` needs a call pattern those sequences lack; its searches start from "
        "{} and (tiny) {}.\n",
        info.id, describe(config), describe(tiny));
  }
  return out.empty() ? out : out + "\n";
}

// Today as YYYY-MM-DD (UTC), for the table's provenance line.
std::string today_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &tm);
  return text;
}

// The Markdown file of the kill table: how it was made, then the table.
std::string kill_table_document(const KillTableOptions& options, const std::string& table) {
  std::ostringstream out;
  out << "# Sim kill table: mutant x profile\n\n"
         "Generated on "
      << today_utc()
      << " by `fusioncheck sim --table --table-out docs/sim_kill_table.md`, built from the "
         "commit that holds this file (see\n"
         "docs/sim.md). For every mutant of the catalogue and every architecture profile: "
         "seeded\nrandom search of the default configuration ("
      << format_calls(default_config().calls) << " for the Lamport model, "
      << format_calls(default_config(SimProtocol::pcie).calls)
      << " for the model of the PCIe protocol, "
      << format_calls(default_config(SimProtocol::vllm).calls)
      << " for the model of vLLM's; 2 ranks x 2 blocks x 2 vectors x 2 elements; "
      << format_calls(default_config(SimProtocol::mnnvl).calls)
      << " for the model of the MNNVL protocol, 72 ranks x 2 blocks (a token each) x 1 vector "
         "x 2 elements, on the rack profiles only; "
      << format_calls(default_config(SimProtocol::sglang).calls)
      << " for the model of SGLang's push plane, 2 ranks x 2 blocks x 2 vectors x 2 elements; "
      << format_calls(default_config(SimProtocol::ce_ring).calls)
      << " for the model of the copy-engine ring, 4 ranks, 2 words per piece), "
      << options.random_budget
      << " schedules, seed 1), then as many PCT schedules (depth 3), then as many held-rank "
         "schedules, then the bounded exhaustive\nsearch of the tiny configuration (<= 2 deviations). *Time to detect* "
         "is the search time until\nthe first violation on the machine that generated the "
         "table (it varies from run to run);\n*schedules* counts the executions until then "
         "(for a clean row: all of them). The counterexample\nis the minimised one: ranks x "
         "blocks x vectors x elements, calls, deviations from the default\nschedule, "
         "steps. `none` is the correct protocol: it must be clean everywhere. Rows marked (PCIe)\n"
         "run the model of FlashInfer's PCIe protocol, rows marked (vLLM) the model of vLLM's "
         "custom\nallreduce barriers, rows marked (MNNVL) the model of FlashInfer's MNNVL "
         "allreduce, rows marked (SGLang)\nthe model of SGLang's push plane, rows marked (CE ring) "
         "the model of the copy-engine ring\nof FlashInfer's PCIe allreduce; a model's searches "
         "stop after "
      << options.row_time_limit_s << " s each (schedules counts what ran).\n\n"
      << provoking_configs_text() << table;
  return out.str();
}

int run_table(const SimArgs& a) {
  KillTableOptions options;
  if (a.budget) options.random_budget = *a.budget;
  options.on_row = [](const KillRow& row) {
    fmt::print(stderr, "sim table: {} ({} model) on {}: {}\n", protocol::mutant_id(row.mutant),
               protocol_name(row.protocol), row.profile, row.killed ? "killed" : "clean");
  };
  const auto rows = kill_table(options);
  const std::string text = format_kill_table(rows);
  fmt::print("{}", text);
  if (!a.table_out.empty()) write_output_file(a.table_out, kill_table_document(options, text));
  for (const auto& row : rows)
    if (row.mutant == Mutant::none && row.killed) return kExitFindings;
  return kExitClean;
}

int run_search(const SimArgs& a) {
  const auto mutant = protocol::parse_mutant(a.mutant);
  if (!mutant) throw UsageError("unknown mutant '" + a.mutant + "' (see fusioncheck mutants)");
  if (std::none_of(std::begin(kSimProtocols), std::end(kSimProtocols),
                   [&](SimProtocol p) { return in_sim(*mutant, p); }))
    throw UsageError("mutant '" + a.mutant + "' cannot be expressed in the sim");
  const auto scheduler = parse_scheduler(a.scheduler);
  if (!scheduler)
    throw UsageError("unknown scheduler '" + a.scheduler + "' (random, pct or exhaustive)");
  std::vector<const Profile*> profiles;
  const SimConfig config = config_from(a, *mutant);
  if (a.profile == "all") {
    for (const auto& p : profiles_of(protocol_of(config))) profiles.push_back(&p);
  } else if (const Profile* p = find_profile(a.profile)) {
    profiles.push_back(p);
  } else {
    throw UsageError("unknown profile '" + a.profile + "' (known: " + profile_names() + ", all)");
  }
  for (const Profile* p : profiles) {
    const std::string error = validate(config, *p);
    if (!error.empty()) throw UsageError(error);
    // The file a violation is written to, in a folder that exists already: before the search.
    if (std::filesystem::is_directory(a.out))
      require_output_file("--out", counterexample_path(a.out, *p, *mutant, config));
  }

  for (const Profile* p : profiles) {
    SearchOptions options;
    options.scheduler = *scheduler;
    options.budget = a.budget.value_or(
        *scheduler == SchedulerKind::exhaustive ? kDefaultExhaustiveBudget : kDefaultBudget);
    options.seed = a.seed;
    options.pct_depth = a.depth;
    options.deviation_bound = a.deviations;
    const std::string what = fmt::format("{} mutant {} {}", p->name, a.mutant, a.scheduler);
    options.progress = [&](const SearchProgress& s) {
      fmt::print(stderr, "sim: {}: {} {}, {:.3g} memory events, {:.1f} s\n", what, s.executions,
                 *scheduler == SchedulerKind::exhaustive ? "executions" : "schedules",
                 static_cast<double>(s.memory_events), s.seconds);
    };
    const SearchResult result = search(config, *p, *mutant, options);
    const double rate =
        result.seconds > 0 ? static_cast<double>(result.memory_events) / result.seconds : 0;
    if (!result.counterexample) {
      fmt::print("sim: {}: clean, {} {} ({}), {:.3g} memory events, {:.2f} s ({:.3g} events/s)\n",
                 what, result.executions,
                 *scheduler == SchedulerKind::exhaustive ? "executions" : "schedules",
                 *scheduler == SchedulerKind::exhaustive
                     ? (result.complete ? fmt::format("complete, <= {} deviations", a.deviations)
                                        : std::string("budget reached"))
                     : fmt::format("seed {}", a.seed),
                 static_cast<double>(result.memory_events), result.seconds, rate);
      continue;
    }
    const std::string& hold = result.counterexample->hold;
    fmt::print("sim: {}: violation after {} schedules{}, {:.3f} s\n", what, result.executions,
               hold.empty() ? "" : " (" + hold + ")", result.seconds);
    Counterexample cx = make_counterexample(config, *p, *mutant, *scheduler, result);
    if (!a.no_minimise) cx = minimise(cx);
    return report_counterexample(cx, a.out);
  }
  return kExitClean;
}

}  // namespace

void add_sim_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SimArgs>();
  const SimConfig start = default_config();
  const SimConfig tiny = tiny_config();
  auto* sub = app.add_subcommand(
      "sim",
      "Explore the protocol model on an architecture profile (CPU only). Modes: a search "
      "(--profile), --replay FILE, or --table");
  sub->add_option("--profile", args->profile,
                  "Search: the architecture profile (" + profile_names() + ", or all)");
  sub->add_option("--mutant", args->mutant,
                  "Search: mutant id (see `fusioncheck mutants`), or none");
  sub->add_option(
         "--protocol", args->protocol,
         "Search: the protocol whose default configuration a search starts from: lamport "
         "(our kernels), pcie (FlashInfer's PCIe allreduce), vllm (vLLM's custom allreduce), "
         "mnnvl (FlashInfer's MNNVL allreduce, on nvl72 and nvl72-mnnvl), sglang (SGLang's "
         "push plane), ce-ring (the copy-engine ring of FlashInfer's PCIe allreduce); a mutant "
         "of one model alone implies it")
      ->check(CLI::IsMember({"lamport", "pcie", "vllm", "mnnvl", "sglang", "ce-ring"}));
  sub->add_option("--scheduler", args->scheduler,
                  "Search: how schedules are explored (held-rank: one rank held at a drawn step "
                  "of a drawn call while the others run ahead)")
      ->check(CLI::IsMember({"random", "pct", "exhaustive", "held-rank"}));
  sub->add_option(
         "--budget", args->budget,
         fmt::format("Search: schedules (random, pct; default {}) or executions (exhaustive; "
                     "default {}). --table: random and PCT schedules per row (default {})",
                     kDefaultBudget, kDefaultExhaustiveBudget, KillTableOptions{}.random_budget))
      ->check(integer_in<std::uint64_t>(1, kMaxBudget));
  sub->add_option("--seed", args->seed, "Search: base seed of the random and pct schedules")
      ->check(any_seed());
  sub->add_option("--depth", args->depth, "Search with --scheduler pct: the PCT bug depth")
      ->check(integer_in(1, kMaxPctDepth));
  sub->add_option(
         "--deviations", args->deviations,
         "Search with --scheduler exhaustive: every schedule with at most this many deviations")
      ->check(integer_in(0, kMaxDeviations));
  sub->add_option("--replay", args->replay,
                  "Replay a counterexample file (written by a search); no other option applies")
      ->type_name("FILE");
  sub->add_option("--out", args->out,
                  "Search: folder for counterexample files (created if missing)")
      ->type_name("DIR");
  sub->add_option("--ranks", args->ranks,
                  fmt::format("Search: ranks (default {}; at most {}, and {} for the MNNVL "
                              "protocol on the rack profiles)",
                              start.ranks, protocol::kMaxRanks, kRackProfiles[0].max_ranks))
      ->check(integer_in(protocol::kMinRanks, kRackProfiles[0].max_ranks));
  sub->add_option(
         "--blocks", args->blocks,
         fmt::format("Search: blocks per kernel, at most the profile's SM count (default {})",
                     start.blocks))
      ->check(integer_in(1, kMaxBlocks));
  sub->add_option("--vectors", args->vectors,
                  fmt::format("Search: vectors (threads) per block (default {}, --tiny {})",
                              start.vectors_per_block, tiny.vectors_per_block))
      ->check(integer_in(1, kMaxVectorsPerBlock));
  sub->add_option("--elems", args->elems,
                  fmt::format("Search: elements per vector (default {}, --tiny {})",
                              start.elems_per_vector, tiny.elems_per_vector))
      ->check(integer_in(1, kMaxElemsPerVector));
  sub->add_option(
      "--calls", args->calls,
      fmt::format("Search: call sequence, os<N> one-shot / ts<N> two-shot over N vectors "
                  "(default {}, --tiny {}); PCIe: pp<N> push, rs<N> reduce-scatter (block "
                  "region), rf<N> reduce-scatter (pack region), pb<N> barrier kernel (default {}); "
                  "vLLM: vs<N> one-stage, vt<N> two-stage kernel (default {}); MNNVL: mo<N> "
                  "one-shot, mt<N> two-shot over N tokens (default {}); SGLang: sp<N> one-shot, "
                  "st<N> two-shot push over N vectors, sf<N> fused MoE finalize over N tokens "
                  "(default {}); copy-engine ring: cf<N> flag kernels, cm<N> stream memops, "
                  "chunks in N pieces (default {})",
                  format_calls(start.calls), format_calls(tiny.calls),
                  format_calls(default_config(SimProtocol::pcie).calls),
                  format_calls(default_config(SimProtocol::vllm).calls),
                  format_calls(default_config(SimProtocol::mnnvl).calls),
                  format_calls(default_config(SimProtocol::sglang).calls),
                  format_calls(default_config(SimProtocol::ce_ring).calls)));
  sub->add_option(
         "--graph-replays", args->graph_replays,
         fmt::format("Search: replay the sequence as a CUDA graph this many times (default {}; "
                     "at most {} calls in all)",
                     start.graph_replays, kMaxTotalCalls))
      ->check(integer_in(1, kMaxGraphReplays));
  sub->add_flag("--late-trigger", args->late_trigger,
                "Search: launch_dependents at the end of the kernel");
  sub->add_option("--streams", args->streams,
                  "Search: calls alternate over this many streams per rank (2: two streams issue "
                  "on one communicator, sglang#31117; the SGLang model only; default 1)")
      ->check(integer_in(1, 2));
  sub->add_option("--vllm-barrier", args->vllm_barrier,
                  "Search, vLLM model: counter-sets (FlashInfer's copy of the header, the default) "
                  "or start-end (vLLM's own header today: a flag per block, start and end arrays)")
      ->check(CLI::IsMember({"counter-sets", "start-end"}));
  sub->add_flag("--independent-lanes", args->independent_lanes,
                "Search, start-end vLLM barrier: the barrier lanes of a block read its flag each "
                "on its own (as the PTX model allows), not in one converged load");
  sub->add_flag(
      "--tiny", args->tiny,
      fmt::format("Search: start from the tiny configuration ({}x{}x{}x{}, {} calls)", tiny.ranks,
                  tiny.blocks, tiny.vectors_per_block, tiny.elems_per_vector, tiny.calls.size()));
  sub->add_flag("--no-minimise", args->no_minimise, "Search: report the counterexample as found");
  sub->add_flag("--table", args->table,
                "Print the mutant x profile kill table (about a minute; progress on stderr)");
  sub->add_option("--table-out", args->table_out,
                  "--table: also write the kill table to this file (Markdown)")
      ->type_name("FILE");
  sub->footer(
      "A mutant's search starts from its own configuration where the default lacks the "
      "pattern it needs (see docs/sim.md); --ranks, --blocks, ... override it.");
  sub->callback([args, sub, &exit_code] {
    const SimArgs& a = *args;
    refuse_empty_values(*sub);
    check_mode(*sub, a);
    if (sub->count("--replay") > 0) {
      exit_code = run_replay_file(a);
    } else if (a.table) {
      exit_code = run_table(a);
    } else {
      exit_code = run_search(a);
    }
  });
}

}  // namespace fusioncheck::cli
