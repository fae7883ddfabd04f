#include "fusioncheck/gpu/gpu_case.hpp"

#include <fmt/core.h>

#include "fusioncheck/gpu/errors.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;

constexpr const char* kModeNames[] = {"checked-each-call", "back-to-back", "graph-replay"};
constexpr const char* kClusterNames[] = {"auto", "cluster", "no-cluster"};
constexpr const char* kPatternIds[] = {"allreduce", "residual_rmsnorm", "fp8_static",
                                       "fp8_dynamic", "nvfp4"};

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
                     {"pattern", kPatternIds[static_cast<int>(call.pattern)]},
                     {"tokens", call.tokens},
                     {"exact_values", call.exact_values},
                     {"pdl", call.use_pdl},
                     {"trigger", call.trigger == k::Trigger::early ? "early" : "at_end"},
                     {"cluster", kClusterNames[static_cast<int>(call.cluster)]},
                     {"pdl_consumer", call.pdl_consumer}});
  return {{"seed", c.seed},
          {"ranks", c.ranks},
          {"hidden", c.hidden},
          {"dtype", c.dtype == k::DType::bf16 ? "bf16" : "f16"},
          {"fp32_lamport", c.fp32_lamport},
          {"fp32_accumulation", c.fp32_accumulation},
          {"weight_bias", c.weight_bias},
          {"mode", kModeNames[static_cast<int>(c.mode)]},
          {"delay_seed", c.delay_seed},
          {"delay_max_ns", c.delay_max_ns},
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
    for (const auto& call : j.at("calls")) {
      CallSpec s;
      s.twoshot = call.at("twoshot").get<bool>();
      s.unfused = call.value("unfused", false);
      s.pattern = static_cast<k::Pattern>(index_of(kPatternIds, call.at("pattern").get<std::string>(), "pattern"));
      s.tokens = call.at("tokens").get<int>();
      s.exact_values = call.at("exact_values").get<bool>();
      s.use_pdl = call.at("pdl").get<bool>();
      s.trigger = call.at("trigger").get<std::string>() == "early" ? k::Trigger::early : k::Trigger::at_end;
      s.cluster = static_cast<k::ClusterMode>(index_of(kClusterNames, call.at("cluster").get<std::string>(), "cluster"));
      s.pdl_consumer = call.value("pdl_consumer", false);
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
  }
  return "";
}

std::string describe(const CallSpec& call) {
  return fmt::format("{} {} tokens={} {} pdl={} trigger={} cluster={}{}",
                     call.unfused ? "unfused" : call.twoshot ? "two-shot" : "one-shot",
                     kPatternIds[static_cast<int>(call.pattern)],
                     call.tokens, call.exact_values ? "exact" : "random",
                     call.use_pdl ? "on" : "off", call.trigger == k::Trigger::early ? "early" : "end",
                     kClusterNames[static_cast<int>(call.cluster)], call.pdl_consumer ? " +consumer" : "");
}

std::string describe(const GpuCase& c) {
  return fmt::format("seed={} ranks={} hidden={} {} lamport={} acc={} wb={} {} calls={}{}", c.seed,
                     c.ranks, c.hidden, c.dtype == k::DType::bf16 ? "bf16" : "f16",
                     c.fp32_lamport ? "fp32" : "16b", c.fp32_accumulation ? "fp32" : "per-step",
                     c.weight_bias, kModeNames[static_cast<int>(c.mode)], c.calls.size(),
                     c.delay_seed ? fmt::format(" delays={}:{}ns", c.delay_seed, c.delay_max_ns) : "");
}

std::vector<std::pair<std::string, std::string>> named_fields(const RunConfig& r) {
  return {{"binary_version", r.binary_version},
          {"ranks", std::to_string(r.ranks)},
          {"seed", std::to_string(r.seed)},
          {"cases", std::to_string(r.cases)},
          {"mutant", r.mutant},
          {"max_tokens", std::to_string(r.max_tokens)},
          {"max_hidden", std::to_string(r.max_hidden)},
          {"fp32_lamport_allowed", r.fp32_lamport_allowed ? "yes" : "no"}};
}

}  // namespace fusioncheck::gpu
