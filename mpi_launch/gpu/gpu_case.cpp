#include "fusioncheck/gpu/gpu_case.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;

constexpr const char* kModeNames[] = {"checked-each-call", "back-to-back", "graph-replay"};
constexpr const char* kClusterNames[] = {"auto", "cluster", "no-cluster"};
// The patterns in enum order, named by protocol::pattern_name.
constexpr k::Pattern kPatterns[] = {k::Pattern::allreduce, k::Pattern::residual_rmsnorm, k::Pattern::fp8_static,
                                    k::Pattern::fp8_dynamic, k::Pattern::nvfp4};

k::Pattern pattern_from_name(const std::string& name) {
  for (k::Pattern p : kPatterns)
    if (name == protocol::pattern_name(p)) return p;
  throw BadInput(fmt::format("replay file: unknown pattern '{}'", name));
}

std::string dtype_text(k::DType d) { return std::string(protocol::dtype_name(d)); }

template <std::size_t N>
int index_of(const char* const (&names)[N], const std::string& value, const char* field) {
  for (std::size_t i = 0; i < N; ++i)
    if (value == names[i]) return static_cast<int>(i);
  throw BadInput(fmt::format("replay file: unknown {} '{}'", field, value));
}

}  // namespace

nlohmann::json to_json(const GpuCase& c) {
  nlohmann::json calls = nlohmann::json::array();
  for (const CallSpec& call : c.calls)
    calls.push_back({{"twoshot", call.twoshot},
                     {"unfused", call.unfused},
                     {"pattern", protocol::pattern_name(call.pattern)},
                     {"tokens", call.tokens},
                     {"exact_values", call.exact_values},
                     {"pdl", call.use_pdl},
                     {"trigger", call.trigger == k::Trigger::early ? "early" : "at_end"},
                     {"cluster", kClusterNames[static_cast<int>(call.cluster)]},
                     {"pdl_consumer", call.pdl_consumer},
                     {"pdl_producer", call.pdl_producer},
                     {"producer_delay_ns", call.producer_delay_ns}});
  return {{"seed", c.seed},
          {"ranks", c.ranks},
          {"hidden", c.hidden},
          {"dtype", dtype_text(c.dtype)},
          {"fp32_lamport", c.fp32_lamport},
          {"fp32_accumulation", c.fp32_accumulation},
          {"weight_bias", c.weight_bias},
          {"mode", kModeNames[static_cast<int>(c.mode)]},
          {"delay_seed", c.delay_seed},
          {"delay_max_ns", c.delay_max_ns},
          {"neg_zero_inputs", c.neg_zero_inputs},
          {"calls", calls}};
}

GpuCase case_from_json(const nlohmann::json& j) {
  try {
    GpuCase c;
    c.seed = j.at("seed").get<std::uint64_t>();
    c.ranks = j.at("ranks").get<int>();
    c.hidden = j.at("hidden").get<int>();
    const auto dtype = j.at("dtype").get<std::string>();
    if (dtype != "bf16" && dtype != "f16") throw BadInput("replay file: dtype must be bf16 or f16");
    c.dtype = dtype == "bf16" ? k::DType::bf16 : k::DType::f16;
    c.fp32_lamport = j.at("fp32_lamport").get<bool>();
    c.fp32_accumulation = j.at("fp32_accumulation").get<bool>();
    c.weight_bias = j.at("weight_bias").get<float>();
    c.mode = static_cast<IssueMode>(index_of(kModeNames, j.at("mode").get<std::string>(), "mode"));
    c.delay_seed = j.value("delay_seed", 0u);  // absent in files written before delays existed
    c.delay_max_ns = j.value("delay_max_ns", 0u);
    c.neg_zero_inputs = j.value("neg_zero_inputs", true);  // absent in files written before it existed
    for (const auto& call : j.at("calls")) {
      CallSpec s;
      s.twoshot = call.at("twoshot").get<bool>();
      s.unfused = call.value("unfused", false);
      s.pattern = pattern_from_name(call.at("pattern").get<std::string>());
      s.tokens = call.at("tokens").get<int>();
      s.exact_values = call.at("exact_values").get<bool>();
      s.use_pdl = call.at("pdl").get<bool>();
      s.trigger = call.at("trigger").get<std::string>() == "early" ? k::Trigger::early : k::Trigger::at_end;
      s.cluster = static_cast<k::ClusterMode>(index_of(kClusterNames, call.at("cluster").get<std::string>(), "cluster"));
      s.pdl_consumer = call.value("pdl_consumer", false);
      s.pdl_producer = call.value("pdl_producer", false);  // absent in files written before it existed
      s.producer_delay_ns = call.value("producer_delay_ns", 0u);
      c.calls.push_back(s);
    }
    if (const std::string problem = case_problem(c); !problem.empty())
      throw BadInput("replay file: " + problem);
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw BadInput(std::string("replay file: ") + e.what());
  }
}

std::string case_problem(const GpuCase& c) {
  if (c.calls.empty()) return "a case needs at least one call";
  if (c.calls.size() > static_cast<std::size_t>(kMaxCallsPerCase))
    return fmt::format("{} calls; at most {} per case", c.calls.size(), kMaxCallsPerCase);
  if (c.hidden < 16 || c.hidden % 16 != 0) return fmt::format("hidden={} is not a positive multiple of 16", c.hidden);
  if (c.delay_max_ns > k::kMaxInjectedDelayNs)
    return fmt::format("delay_max_ns={} exceeds {}", c.delay_max_ns, k::kMaxInjectedDelayNs);
  for (const CallSpec& call : c.calls) {
    if (call.tokens < 1) return fmt::format("tokens={} is not positive", call.tokens);
    if (call.unfused && (call.twoshot || call.pattern == k::Pattern::allreduce))
      return "the unfused baseline has an epilogue (not pattern allreduce) and no two-shot form";
    if (call.pdl_consumer && (!call.use_pdl || call.trigger != k::Trigger::at_end))
      return "pdl_consumer needs pdl on and trigger at_end";
    if (call.pdl_producer && (!call.use_pdl || call.unfused))
      return "pdl_producer needs pdl on and a fused call";
    if (call.producer_delay_ns > k::kMaxPdlProducerDelayNs)
      return fmt::format("producer_delay_ns={} exceeds {}", call.producer_delay_ns, k::kMaxPdlProducerDelayNs);
  }
  return "";
}

bool KernelTraits::runs_hidden(int hidden) const {
  return hidden_sizes.empty() ? hidden >= 16 && hidden % 16 == 0
                              : std::find(hidden_sizes.begin(), hidden_sizes.end(), hidden) != hidden_sizes.end();
}

bool KernelTraits::runs_pattern(k::Pattern pattern) const {
  return patterns.empty() || std::find(patterns.begin(), patterns.end(), pattern) != patterns.end();
}

std::string outside_traits(const GpuCase& c, const KernelTraits& t) {
  if (!t.runs_hidden(c.hidden)) return fmt::format("hidden={} is not one the kernel runs", c.hidden);
  if (c.fp32_lamport && !t.fp32_lamport) return "fp32 Lamport elements";
  if (c.fp32_accumulation && !t.fp32_accumulation) return "fp32 accumulation";
  if (c.weight_bias != 0.0f && !t.weight_bias) return fmt::format("weight_bias={}", c.weight_bias);
  if (c.mode == IssueMode::graph_replay && !t.graph_replay) return "graph replay";
  if (c.neg_zero_inputs && !t.neg_zero_inputs) return "inputs with -0";
  for (const CallSpec& call : c.calls) {
    const std::string what = describe(call);
    if (t.max_tokens > 0 && call.tokens > t.max_tokens)
      return fmt::format("{}: more than {} tokens", what, t.max_tokens);
    if (!t.runs_pattern(call.pattern)) return what + ": pattern";
    if (call.twoshot && !t.twoshot) return what + ": two-shot";
    if (call.twoshot && t.twoshot_more_tokens_than_ranks && call.tokens <= c.ranks)
      return what + ": two-shot with tokens <= ranks";
    if (call.unfused && !t.unfused) return what + ": unfused baseline";
    if (call.cluster != k::ClusterMode::automatic && !t.forced_cluster) return what + ": forced cluster path";
    if (call.trigger == k::Trigger::early && !t.early_trigger) return what + ": early trigger";
    if (call.pdl_consumer && !t.outputs_visible_at_trigger) return what + ": PDL consumer before the wait";
    if (c.mode != IssueMode::checked_each_call && !t.shape_changes_without_sync && call.tokens != c.calls[0].tokens)
      return what + ": a shape change without a host sync";
  }
  return "";
}

void CaseLimits::validate() const {
  if (max_tokens < 1 || max_tokens > kMaxTokens)
    throw BadInput(fmt::format("--max-tokens must be in [1, {}]", kMaxTokens));
  if (max_hidden < 16 || max_hidden % 16) throw BadInput("--max-hidden must be a positive multiple of 16");
  if (max_hidden > kMaxHidden) throw BadInput(fmt::format("--max-hidden must be at most {}", kMaxHidden));
  if (max_elems < max_hidden) throw BadInput("--max-elems must be at least --max-hidden (one token of the widest row)");
  if (max_calls < 1 || max_calls > kMaxCallsPerCase)
    throw BadInput(fmt::format("--max-calls must be in [1, {}]", kMaxCallsPerCase));
}

std::int64_t CaseLimits::elems_per_call() const {
  return std::min<std::int64_t>(static_cast<std::int64_t>(max_tokens) * max_hidden, max_elems);
}

int CaseLimits::max_tokens_for(int hidden) const {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(max_tokens, elems_per_call() / hidden)));
}

std::string CaseLimits::does_not_fit(const GpuCase& c) const {
  if (c.calls.size() > static_cast<std::size_t>(max_calls))
    return fmt::format("the case has {} calls, this run allows {} (--max-calls)", c.calls.size(), max_calls);
  if (c.hidden > max_hidden) return fmt::format("hidden={} exceeds --max-hidden {}", c.hidden, max_hidden);
  for (const CallSpec& call : c.calls)
    if (call.tokens > max_tokens || static_cast<std::int64_t>(call.tokens) * c.hidden > elems_per_call())
      return fmt::format("tokens={} x hidden={} exceeds this run's --max-tokens {} or --max-elems {}", call.tokens,
                         c.hidden, max_tokens, elems_per_call());
  return "";
}

std::string describe(const CallSpec& call) {
  return fmt::format("{} {} tokens={} {} pdl={} trigger={} cluster={}{}{}",
                     call.unfused ? "unfused" : call.twoshot ? "two-shot" : "one-shot",
                     protocol::pattern_name(call.pattern),
                     call.tokens, call.exact_values ? "exact" : "random",
                     call.use_pdl ? "on" : "off", call.trigger == k::Trigger::early ? "early" : "end",
                     kClusterNames[static_cast<int>(call.cluster)], call.pdl_consumer ? " +consumer" : "",
                     call.pdl_producer ? fmt::format(" +producer({}ns)", call.producer_delay_ns) : "");
}

std::string describe(const GpuCase& c) {
  return fmt::format("seed={} ranks={} hidden={} {} lamport={} acc={} wb={} {} calls={}{}{}", c.seed,
                     c.ranks, c.hidden, dtype_text(c.dtype),
                     c.fp32_lamport ? "fp32" : "16b", c.fp32_accumulation ? "fp32" : "per-step",
                     c.weight_bias, kModeNames[static_cast<int>(c.mode)], c.calls.size(),
                     c.delay_seed ? fmt::format(" delays={}:{}ns", c.delay_seed, c.delay_max_ns) : "",
                     c.neg_zero_inputs ? "" : " no-neg-zero");
}

std::string describe_block(const GpuCase& c, const std::string& in) {
  std::string out;
  auto line = [&](const char* label, const std::string& value) { out += fmt::format("{}{:<18}{}\n", in, label, value); };
  line("dtype", dtype_text(c.dtype));
  line("hidden", std::to_string(c.hidden));
  line("Lamport element", c.fp32_lamport ? "f32" : dtype_text(c.dtype));
  line("accumulation", c.fp32_accumulation ? "fp32, rounded once" : "rounded to the dtype after every rank");
  line("weight_bias", fmt::format("{}", c.weight_bias));
  line("issue mode", kModeNames[static_cast<int>(c.mode)]);
  line("delays", c.delay_seed ? fmt::format("seed {}, up to {} ns per pause", c.delay_seed, c.delay_max_ns) : "none");
  line("input seed", std::to_string(c.seed));
  line("-0 in inputs", c.neg_zero_inputs ? "yes" : "no (the kernel's precondition)");
  out += fmt::format("{}calls ({}):\n{}  {:>4} {:>6}  {:<17}{:<10}{:<8}{:<5}{:<9}{:<12}{:<14}{}\n", in, c.calls.size(), in,
                     "#", "tokens", "pattern", "kernel", "values", "PDL", "trigger", "cluster", "PDL consumer",
                     "PDL producer");
  for (std::size_t i = 0; i < c.calls.size(); ++i) {
    const CallSpec& call = c.calls[i];
    out += fmt::format("{}  {:>4} {:>6}  {:<17}{:<10}{:<8}{:<5}{:<9}{:<12}{:<14}{}\n", in, i, call.tokens,
                       protocol::pattern_name(call.pattern),
                       call.unfused ? "unfused" : call.twoshot ? "two-shot" : "one-shot",
                       call.exact_values ? "exact" : "random", call.use_pdl ? "on" : "off",
                       call.trigger == k::Trigger::early ? "early" : "at end",
                       kClusterNames[static_cast<int>(call.cluster)], call.pdl_consumer ? "yes" : "no",
                       call.pdl_producer ? fmt::format("after {} ns", call.producer_delay_ns) : "no");
  }
  return out;
}

void showValue(const GpuCase& c, std::ostream& os) {
  os << "\n" << fmt::format("  ranks             {}\n", c.ranks) << describe_block(c, "  ");
}

std::vector<std::pair<std::string, std::string>> named_fields(const RunConfig& r) {
  return {{"binary_version", r.binary_version},
          {"kernel", r.kernel},
          {"ranks", std::to_string(r.ranks)},
          {"seed", std::to_string(r.seed)},
          {"cases", std::to_string(r.cases)},
          {"mutant", r.mutant},
          {"max_tokens", std::to_string(r.max_tokens)},
          {"max_hidden", std::to_string(r.max_hidden)}};
}

}  // namespace fusioncheck::gpu
