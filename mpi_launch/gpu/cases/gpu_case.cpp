#include "fusioncheck/gpu/gpu_case.hpp"

#include "fusioncheck/files/json_file.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <numeric>
#include <limits>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/reference/moe.hpp"
#include "fusioncheck/reference/quant.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;

constexpr const char* kClusterNames[] = {"auto", "cluster", "no-cluster"};
constexpr const char* kScaleLayoutNames[] = {"linear", "swizzled128x4"};  // Nvfp4Layout order
static_assert(static_cast<int>(k::Nvfp4Layout::linear) == 0 &&
              static_cast<int>(k::Nvfp4Layout::swizzled128x4) == 1);
constexpr int kMaxTmaPadding = 128;  // CallSpec::tma_aligned_mn - tokens, at most
constexpr int kMinGroupSize = 16;

k::Pattern pattern_from_name(const std::string& name) {
  for (k::Pattern p : protocol::kAllPatterns)
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
  for (const CallSpec& call : c.calls) {
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
                     {"producer_delay_ns", call.producer_delay_ns},
                     {"variant", call.variant},
                     {"norm_out", call.norm_out}});
    // Only the patterns that have them: other cases' files stay as they were.
    if (call.pattern == k::Pattern::mxfp8)
      calls.back()["scale_layout"] = kScaleLayoutNames[static_cast<int>(call.scale_layout)];
    if (call.pattern == k::Pattern::group_fp8) {
      calls.back()["group_size"] = call.group_size;
      calls.back()["tma_aligned_mn"] = call.tma_aligned_mn;
    }
    if (call.moe_experts > 0) {  // MoE calls only
      calls.back()["moe_experts"] = call.moe_experts;
      calls.back()["moe_expert_scales"] = call.moe_expert_scales;
      calls.back()["moe_shared_expert"] = call.moe_shared_expert;
      calls.back()["moe_routed_scaling"] = call.moe_routed_scaling;
      calls.back()["moe_allreduce_out"] = call.moe_allreduce_out;
    }
  }
  nlohmann::json out = {{"seed", c.seed},
                        {"ranks", c.ranks},
                        {"hidden", c.hidden},
                        {"dtype", dtype_text(c.dtype)},
                        {"fp32_lamport", c.fp32_lamport},
                        {"fp32_accumulation", c.fp32_accumulation},
                        {"weight_bias", c.weight_bias},
                        {"mode", kIssueModeNames[static_cast<int>(c.mode)]},
                        {"delay_seed", c.delay_seed},
                        {"delay_max_ns", c.delay_max_ns},
                        {"neg_zero_inputs", c.neg_zero_inputs},
                        {"calls", calls}};
  if (c.hold.active())  // files of cases without a hold stay as they were
    out["hold"] = {{"rank", c.hold.rank},
                   {"call", c.hold.call},
                   {"point", k::hold_point_name(c.hold.point)},
                   {"ns", c.hold.ns}};
  return out;
}

namespace {

// Strict field readers: a value of another JSON type, an integer outside its C++ type's range
// (a negative count, 2^32 + 2 ranks), a fraction where an integer goes: each is BadInput
// naming the field, never a value bent into range.
const nlohmann::json& field(const nlohmann::json& object, const char* name,
                            const std::string& where) {
  const auto it = object.find(name);
  if (it == object.end()) throw BadInput(fmt::format("replay file: {}{} is missing", where, name));
  return *it;
}

template <typename T>
T integer_value(const nlohmann::json& v, const char* name, const std::string& where) {
  const auto bad = [&](const std::string& why) {
    return BadInput(
        fmt::format("replay file: {}{} = {}: {}", where, name, files::quote_json(v), why));
  };
  if (!v.is_number_integer()) throw bad("not an integer");
  using Limits = std::numeric_limits<T>;
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(Limits::max()))
      throw bad(fmt::format("out of range [{}, {}]", Limits::min(), Limits::max()));
    return static_cast<T>(v.get<std::uint64_t>());
  }
  const std::int64_t value = v.get<std::int64_t>();
  if (value < static_cast<std::int64_t>(Limits::min()) ||
      (value > 0 && static_cast<std::uint64_t>(value) > static_cast<std::uint64_t>(Limits::max())))
    throw bad(fmt::format("out of range [{}, {}]", Limits::min(), Limits::max()));
  return static_cast<T>(value);
}

template <typename T>
T integer_field(const nlohmann::json& object, const char* name, const std::string& where) {
  return integer_value<T>(field(object, name, where), name, where);
}

// A field that a replay file may lack: `fallback` when absent.
template <typename T>
T integer_field_or(const nlohmann::json& object, const char* name, T fallback,
                   const std::string& where) {
  return object.contains(name) ? integer_field<T>(object, name, where) : fallback;
}

bool bool_field(const nlohmann::json& object, const char* name, const std::string& where) {
  const nlohmann::json& v = field(object, name, where);
  if (!v.is_boolean())
    throw BadInput(fmt::format("replay file: {}{} = {}: not true or false", where, name,
                               files::quote_json(v)));
  return v.get<bool>();
}

bool bool_field_or(const nlohmann::json& object, const char* name, bool fallback,
                   const std::string& where) {
  return object.contains(name) ? bool_field(object, name, where) : fallback;
}

std::string string_field(const nlohmann::json& object, const char* name, const std::string& where) {
  const nlohmann::json& v = field(object, name, where);
  if (!v.is_string())
    throw BadInput(
        fmt::format("replay file: {}{} = {}: not a string", where, name, files::quote_json(v)));
  return v.get<std::string>();
}

float float_field(const nlohmann::json& object, const char* name, const std::string& where) {
  const nlohmann::json& v = field(object, name, where);
  const double value = v.is_number() ? v.get<double>() : 0.0;
  if (!v.is_number() || !std::isfinite(value) ||
      std::fabs(value) > std::numeric_limits<float>::max())
    throw BadInput(fmt::format("replay file: {}{} = {}: not a finite number", where, name,
                               files::quote_json(v)));
  return static_cast<float>(value);
}

// An object holding only `known` keys: a misspelt optional field would otherwise fall back
// to its default unnoticed.
void require_known_keys(const nlohmann::json& object, std::initializer_list<const char*> known,
                        const std::string& what) {
  if (!object.is_object())
    throw BadInput(fmt::format("replay file: {} is not a JSON object", what));
  for (const auto& [key, value] : object.items())
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; }))
      throw BadInput(fmt::format("replay file: {}: unknown field '{}'", what, key));
}

CallSpec call_from_json(const nlohmann::json& call, std::size_t index) {
  const std::string where = fmt::format("calls[{}].", index);
  require_known_keys(call, {"twoshot",           "unfused",
                            "pattern",           "tokens",
                            "exact_values",      "pdl",
                            "trigger",           "cluster",
                            "pdl_consumer",      "pdl_producer",
                            "producer_delay_ns", "variant",
                            "norm_out",          "scale_layout",
                            "group_size",        "tma_aligned_mn",
                            "moe_experts",       "moe_expert_scales",
                            "moe_shared_expert", "moe_routed_scaling",
                            "moe_allreduce_out"},
                     "calls[" + std::to_string(index) + "]");
  CallSpec s;
  s.twoshot = bool_field(call, "twoshot", where);
  s.unfused = bool_field_or(call, "unfused", false, where);
  s.pattern = pattern_from_name(string_field(call, "pattern", where));
  s.tokens = integer_field<int>(call, "tokens", where);
  s.exact_values = bool_field(call, "exact_values", where);
  s.use_pdl = bool_field(call, "pdl", where);
  const std::string trigger = string_field(call, "trigger", where);
  if (trigger != "early" && trigger != "at_end")
    throw BadInput(
        fmt::format("replay file: {}trigger '{}': expected early or at_end", where, trigger));
  s.trigger = trigger == "early" ? k::Trigger::early : k::Trigger::at_end;
  s.cluster = static_cast<k::ClusterMode>(
      index_of(kClusterNames, string_field(call, "cluster", where), "cluster"));
  // Absent in files written before consumers, producers and the unfused baseline existed.
  s.pdl_consumer = bool_field_or(call, "pdl_consumer", false, where);
  s.pdl_producer = bool_field_or(call, "pdl_producer", false, where);
  s.producer_delay_ns = integer_field_or<std::uint32_t>(call, "producer_delay_ns", 0, where);
  s.variant = integer_field_or<int>(call, "variant", 0, where);  // absent: the only variant
  s.norm_out = bool_field_or(call, "norm_out", true, where);
  // The block-scaled FP8 fields, for their patterns only.
  const bool mx = s.pattern == k::Pattern::mxfp8, group = s.pattern == k::Pattern::group_fp8;
  for (const char* key : {"scale_layout", "group_size", "tma_aligned_mn"})
    if (call.contains(key) && (key[0] == 's' ? !mx : !group))
      throw BadInput(fmt::format("replay file: {}{}: not a field of pattern {}", where, key,
                                 protocol::pattern_name(s.pattern)));
  if (call.contains("scale_layout"))
    s.scale_layout = static_cast<k::Nvfp4Layout>(
        index_of(kScaleLayoutNames, string_field(call, "scale_layout", where), "scale_layout"));
  s.group_size = integer_field_or<int>(call, "group_size", s.group_size, where);
  s.tma_aligned_mn = integer_field_or<int>(call, "tma_aligned_mn", s.tma_aligned_mn, where);
  // The MoE fields: all of them in a MoE call, none in another.
  if (call.contains("moe_experts")) {
    s.moe_experts = integer_field<int>(call, "moe_experts", where);
    s.moe_expert_scales = bool_field(call, "moe_expert_scales", where);
    s.moe_shared_expert = bool_field(call, "moe_shared_expert", where);
    s.moe_routed_scaling = float_field(call, "moe_routed_scaling", where);
    s.moe_allreduce_out = bool_field(call, "moe_allreduce_out", where);
  } else {
    for (const char* key :
         {"moe_expert_scales", "moe_shared_expert", "moe_routed_scaling", "moe_allreduce_out"})
      if (call.contains(key))
        throw BadInput(
            fmt::format("replay file: {}{}: a field of MoE calls (moe_experts)", where, key));
  }
  return s;
}

RankHold hold_from_json(const nlohmann::json& j) {
  require_known_keys(j, {"rank", "call", "point", "ns"}, "hold");
  RankHold h;
  h.rank = integer_field<int>(j, "rank", "hold.");
  h.call = integer_field<int>(j, "call", "hold.");
  const std::string point = string_field(j, "point", "hold.");
  const auto* known = std::find_if(std::begin(k::kHoldPoints), std::end(k::kHoldPoints),
                                   [&](k::HoldPoint p) { return point == k::hold_point_name(p); });
  if (known == std::end(k::kHoldPoints))
    throw BadInput("replay file: hold.point '" + point +
                   "' is none of before_push, before_poll, before_flag");
  h.point = *known;
  h.ns = integer_field<std::uint32_t>(j, "ns", "hold.");
  if (h.rank < 0) throw BadInput("replay file: hold.rank is negative");
  return h;
}

}  // namespace

GpuCase case_from_json(const nlohmann::json& j) {
  require_known_keys(
      j,
      {"seed", "ranks", "hidden", "dtype", "fp32_lamport", "fp32_accumulation", "weight_bias",
       "mode", "delay_seed", "delay_max_ns", "neg_zero_inputs", "hold", "calls"},
      "the case");
  GpuCase c;
  c.seed = integer_field<std::uint64_t>(j, "seed", "");
  c.ranks = integer_field<int>(j, "ranks", "");
  c.hidden = integer_field<int>(j, "hidden", "");
  const std::string dtype = string_field(j, "dtype", "");
  if (dtype != "bf16" && dtype != "f16") throw BadInput("replay file: dtype must be bf16 or f16");
  c.dtype = dtype == "bf16" ? k::DType::bf16 : k::DType::f16;
  c.fp32_lamport = bool_field(j, "fp32_lamport", "");
  c.fp32_accumulation = bool_field(j, "fp32_accumulation", "");
  c.weight_bias = float_field(j, "weight_bias", "");
  c.mode = static_cast<IssueMode>(index_of(kIssueModeNames, string_field(j, "mode", ""), "mode"));
  c.delay_seed =
      integer_field_or<std::uint32_t>(j, "delay_seed", 0, "");  // absent before delays existed
  c.delay_max_ns = integer_field_or<std::uint32_t>(j, "delay_max_ns", 0, "");
  c.neg_zero_inputs = bool_field_or(j, "neg_zero_inputs", true, "");  // absent before it existed
  if (j.contains("hold")) c.hold = hold_from_json(j["hold"]);         // absent: no rank held
  const nlohmann::json& calls = field(j, "calls", "");
  if (!calls.is_array()) throw BadInput("replay file: calls is not an array");
  // Before reading them: a file of a million calls is refused at once.
  if (calls.size() > static_cast<std::size_t>(kMaxCallsPerCase))
    throw BadInput(
        fmt::format("replay file: {} calls; at most {} per case", calls.size(), kMaxCallsPerCase));
  for (std::size_t i = 0; i < calls.size(); ++i) c.calls.push_back(call_from_json(calls[i], i));
  if (const std::string problem = case_problem(c); !problem.empty())
    throw BadInput("replay file: " + problem);
  return c;
}

nlohmann::json read_replay_json(const std::string& path) {
  std::string text;
  if (const std::string why = files::read_small_file(path, kMaxReplayFileBytes, text); !why.empty())
    throw BadInput(fmt::format("--replay {}: {} (a replay file is one case of at most {} calls)",
                               path, why, kMaxCallsPerCase));
  nlohmann::json j;  // strict: text after the document is an error
  if (const std::string why = files::parse_json(text, j); !why.empty())
    throw BadInput("--replay " + path + ": " + why);
  return j;
}

GpuCase read_replay_case(const std::string& path) {
  const nlohmann::json j = read_replay_json(path);
  if (!j.is_object()) throw BadInput("--replay " + path + ": not a replay file (a JSON object)");
  return case_from_json(j.contains("case") ? j.at("case") : j);
}

namespace {

// What a MoE call cannot hold: experts outside [0, kMaxMoeExperts], a routed scaling that is
// not positive, options without experts, a pattern the MoE kernels do not have.
std::string moe_problem(const CallSpec& call) {
  if (call.moe_experts < 0 || call.moe_experts > reference::kMaxMoeExperts)
    return fmt::format("moe_experts={} is outside [0, {}]", call.moe_experts,
                       reference::kMaxMoeExperts);
  if (!(call.moe_routed_scaling > 0.0f))
    return fmt::format("moe_routed_scaling={} is not positive", call.moe_routed_scaling);
  if (call.moe_experts == 0) {
    if (!call.moe_expert_scales || call.moe_shared_expert || call.moe_routed_scaling != 1.0f ||
        call.moe_allreduce_out)
      return "MoE options without moe_experts";
    return "";
  }
  if (call.pattern != k::Pattern::residual_rmsnorm && call.pattern != k::Pattern::nvfp4)
    return fmt::format("a MoE call has pattern residual_rmsnorm or nvfp4, not {}",
                       protocol::pattern_name(call.pattern));
  if (call.twoshot || call.unfused) return "a MoE call is one-shot and fused";
  return "";
}

}  // namespace

std::chrono::nanoseconds seeded_pause_allowance(const GpuCase& c) {
  std::uint64_t ns = 0;
  if (c.hold.active()) ns += std::uint64_t{c.hold.ns} * kPauseVisitsPerWait;
  if (c.delay_seed != 0)
    ns += std::uint64_t{c.delay_max_ns} * (kPauseVisitsPerWait + c.calls.size());
  for (const CallSpec& call : c.calls) ns += call.producer_delay_ns;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
}

std::string case_problem(const GpuCase& c) {
  if (c.calls.empty()) return "a case needs at least one call";
  for (const CallSpec& call : c.calls)
    if (call.variant < 0 || call.variant > kMaxVariant)
      return fmt::format("variant={} is outside [0, {}]", call.variant, kMaxVariant);
  if (c.calls.size() > static_cast<std::size_t>(kMaxCallsPerCase))
    return fmt::format("{} calls; at most {} per case", c.calls.size(), kMaxCallsPerCase);
  if (c.mode == IssueMode::two_streams && c.calls.size() < 2)
    return "mode two-streams needs at least two calls (one for each stream)";
  if (c.hidden < 16 || c.hidden % 16 != 0)
    return fmt::format("hidden={} is not a positive multiple of 16", c.hidden);
  if (c.hidden > CaseLimits::kMaxHidden)
    return fmt::format("hidden={} exceeds {}", c.hidden, CaseLimits::kMaxHidden);
  if (c.delay_max_ns > k::kMaxInjectedDelayNs)
    return fmt::format("delay_max_ns={} exceeds {}", c.delay_max_ns, k::kMaxInjectedDelayNs);
  if (c.hold.active()) {
    if (c.hold.rank >= c.ranks)
      return fmt::format("hold.rank={} is not a rank of {}", c.hold.rank, c.ranks);
    if (c.hold.call < 0 || c.hold.call >= static_cast<int>(c.calls.size()))
      return fmt::format("hold.call={} is not a call of the {}", c.hold.call, c.calls.size());
    if (c.hold.ns == 0 || c.hold.ns > k::kMaxInjectedDelayNs)
      return fmt::format("hold.ns={} is outside [1, {}]", c.hold.ns, k::kMaxInjectedDelayNs);
  }
  for (const CallSpec& call : c.calls) {
    if (call.tokens < 1) return fmt::format("tokens={} is not positive", call.tokens);
    // The generator's bounds: at most kMaxCallsPerCase calls of at most kMaxElems each.
    if (call.tokens > CaseLimits::kMaxTokens)
      return fmt::format("tokens={} exceeds {}", call.tokens, CaseLimits::kMaxTokens);
    if (static_cast<std::int64_t>(call.tokens) * c.hidden > CaseLimits::kMaxElems)
      return fmt::format("tokens={} x hidden={} exceeds {} elements per call", call.tokens,
                         c.hidden, CaseLimits::kMaxElems);
    if (call.unfused && (call.twoshot || call.pattern == k::Pattern::allreduce))
      return "the unfused baseline has an epilogue (not pattern allreduce) and no two-shot form";
    if (call.pdl_consumer && (!call.use_pdl || call.trigger != k::Trigger::at_end))
      return "pdl_consumer needs pdl on and trigger at_end";
    if (!call.norm_out &&
        (!k::pattern_quantises(call.pattern) || call.pdl_consumer || call.unfused))
      return "norm_out=false needs a quantising pattern, no pdl_consumer and no unfused baseline";
    if (call.pdl_producer && (!call.use_pdl || call.unfused))
      return "pdl_producer needs pdl on and a fused call";
    if (call.producer_delay_ns > k::kMaxPdlProducerDelayNs)
      return fmt::format("producer_delay_ns={} exceeds {}", call.producer_delay_ns,
                         k::kMaxPdlProducerDelayNs);
    if (call.pattern == k::Pattern::mxfp8 && c.hidden % protocol::kMxfp8BlockSize != 0)
      return fmt::format("mxfp8 needs hidden to be a multiple of {}, not {}",
                         protocol::kMxfp8BlockSize, c.hidden);
    if (const std::string moe = moe_problem(call); !moe.empty()) return moe;
    if (call.pattern != k::Pattern::group_fp8) continue;
    if (call.group_size < kMinGroupSize || c.hidden % call.group_size != 0)
      return fmt::format("group_size={} must be >= {} and divide hidden={}", call.group_size,
                         kMinGroupSize, c.hidden);
    if (call.tma_aligned_mn != 0 &&
        (call.tma_aligned_mn < call.tokens || call.tma_aligned_mn > call.tokens + kMaxTmaPadding))
      return fmt::format("tma_aligned_mn={} must be 0 or within [tokens, tokens + {}] (tokens={})",
                         call.tma_aligned_mn, kMaxTmaPadding, call.tokens);
  }
  return "";
}

int group_fp8_tma_aligned_mn(const CallSpec& call) {
  return call.tma_aligned_mn != 0 ? call.tma_aligned_mn : (call.tokens + 3) / 4 * 4;
}

std::size_t scale_out_bytes(const CallSpec& call, int hidden) {
  const auto tokens = static_cast<std::size_t>(call.tokens);
  const auto h = static_cast<std::size_t>(hidden);
  switch (call.pattern) {
    case k::Pattern::fp8_dynamic: return tokens * 4;
    case k::Pattern::nvfp4:
      return protocol::nvfp4_scale_storage(k::Nvfp4Layout::swizzled128x4, tokens,
                                           h / k::kNvfp4BlockSize);
    case k::Pattern::mxfp8:
      return protocol::nvfp4_scale_storage(call.scale_layout, tokens,
                                           h / protocol::kMxfp8BlockSize);
    case k::Pattern::group_fp8:
      return reference::group_fp8_scale_bytes(
          tokens, h / static_cast<std::size_t>(call.group_size),
          static_cast<std::size_t>(group_fp8_tma_aligned_mn(call)));
    default: return 0;
  }
}

bool KernelTraits::holds_in_kernel(k::HoldPoint point, k::DType dtype) const {
  const auto has = [](const auto& list, auto value) {
    return std::find(list.begin(), list.end(), value) != list.end();
  };
  return has(in_kernel_holds, point) &&
         (in_kernel_hold_dtypes.empty() || has(in_kernel_hold_dtypes, dtype));
}

std::vector<k::HoldPoint> KernelTraits::hold_points(k::DType dtype) const {
  std::vector<k::HoldPoint> points = {k::HoldPoint::before_push};
  for (k::HoldPoint p : k::kHoldPoints)
    if (p != k::HoldPoint::before_push && holds_in_kernel(p, dtype)) points.push_back(p);
  return points;
}

bool KernelTraits::runs_hidden(int hidden) const {
  return hidden_sizes.empty()
             ? hidden >= 16 && hidden % 16 == 0
             : std::find(hidden_sizes.begin(), hidden_sizes.end(), hidden) != hidden_sizes.end();
}

bool KernelTraits::runs_pattern(k::Pattern pattern) const {
  if (protocol::pattern_block_scaled_fp8(pattern) && !block_scaled_fp8) return false;
  return patterns.empty() || std::find(patterns.begin(), patterns.end(), pattern) != patterns.end();
}

// A variant whose calls must hold a multiple of elements: the tokens rounded down to the
// nearest count that does (up, where that is none), within the kernel's limit.
void fit_tokens_to_variant(CallSpec& call, int hidden, int max_tokens, const KernelTraits& traits) {
  if (call.variant >= static_cast<int>(traits.variants.size())) return;
  const std::uint64_t multiple =
      traits.variants[static_cast<std::size_t>(call.variant)].elems_multiple;
  if (multiple <= 1) return;
  const auto step = static_cast<int>(
      multiple / std::gcd<std::uint64_t>(multiple, static_cast<std::uint64_t>(hidden)));
  if (step <= max_tokens) call.tokens = std::max(step, call.tokens / step * step);
}

bool reaches_deep_path(int variant, int hidden, int max_tokens, const KernelTraits& traits) {
  if (variant < 0 || variant >= static_cast<int>(traits.variants.size())) return false;
  const std::uint64_t deep = traits.variants[static_cast<std::size_t>(variant)].deep_from_elems;
  if (deep == 0) return false;
  CallSpec largest;
  largest.variant = variant;
  largest.tokens = max_tokens;
  fit_tokens_to_variant(largest, hidden, max_tokens, traits);
  return static_cast<std::uint64_t>(largest.tokens) * static_cast<std::uint64_t>(hidden) >= deep;
}

CaseLimits limits_reaching_deep_paths(CaseLimits limits, const KernelTraits& traits) {
  if (limits.max_elems_chosen) return limits;
  const std::int64_t widest = std::min<std::int64_t>(
      static_cast<std::int64_t>(limits.max_tokens) * limits.max_hidden, CaseLimits::kMaxElems);
  for (const KernelVariant& v : traits.variants) {
    const auto deep = static_cast<std::int64_t>(v.deep_from_elems);
    if (deep > limits.max_elems && deep <= widest) limits.max_elems = deep;
  }
  return limits;
}

std::string outside_traits(const GpuCase& c, const KernelTraits& t) {
  if (!t.runs_hidden(c.hidden))
    return fmt::format("hidden={} is not one the kernel runs", c.hidden);
  if (c.fp32_lamport && !t.fp32_lamport) return "fp32 Lamport elements";
  if (c.fp32_accumulation && !t.fp32_accumulation) return "fp32 accumulation";
  if (!c.fp32_accumulation && !t.per_step_accumulation) return "rounding after every add";
  if (c.weight_bias != 0.0f && !t.weight_bias) return fmt::format("weight_bias={}", c.weight_bias);
  if (c.mode == IssueMode::graph_replay && !t.graph_replay) return "graph replay";
  if (c.neg_zero_inputs && !t.neg_zero_inputs) return "inputs with -0";
  if (c.hold.active()) {
    const auto points = t.hold_points(c.dtype);
    if (std::find(points.begin(), points.end(), c.hold.point) == points.end())
      return fmt::format("a rank held {} (the kernel holds {} calls before their push only)",
                         k::hold_point_name(c.hold.point), k::dtype_name(c.dtype));
    if (!t.holds_behind_pdl_producer(c.hold.point, c.dtype) &&
        c.calls[static_cast<std::size_t>(c.hold.call)].pdl_producer)
      return "a rank held before a call behind its PDL producer (nothing may come between them)";
  }
  for (const CallSpec& call : c.calls) {
    const std::string what = describe(call);
    if (t.max_tokens > 0 && call.tokens > t.max_tokens)
      return fmt::format("{}: more than {} tokens", what, t.max_tokens);
    if (!t.runs_pattern(call.pattern)) return what + ": pattern";
    if (!call.norm_out && !t.quant_without_norm_out) return what + ": a pattern without norm_out";
    if ((call.moe_experts > 0) != t.moe)
      return what + (t.moe ? ": not a MoE call (the kernel's calls are)" : ": a MoE call");
    if (call.variant >= std::max<int>(1, static_cast<int>(t.variants.size())))
      return fmt::format("{}: the kernel has {} launch variant(s)", what,
                         std::max<std::size_t>(1, t.variants.size()));
    if (call.variant < static_cast<int>(t.variants.size())) {
      const std::uint64_t multiple =
          t.variants[static_cast<std::size_t>(call.variant)].elems_multiple;
      if (multiple > 1 && static_cast<std::uint64_t>(call.tokens) * c.hidden % multiple != 0)
        return fmt::format("{}: tokens x hidden not a multiple of {} (the variant's)", what,
                           multiple);
    }
    if (call.twoshot && !t.twoshot) return what + ": two-shot";
    if (call.twoshot && t.twoshot_more_tokens_than_ranks && call.tokens <= c.ranks)
      return what + ": two-shot with tokens <= ranks";
    if (call.unfused && !t.unfused) return what + ": unfused baseline";
    if (call.cluster != k::ClusterMode::automatic && !t.forced_cluster)
      return what + ": forced cluster path";
    if (call.trigger == k::Trigger::early && !t.early_trigger) return what + ": early trigger";
    if (call.pdl_consumer && !t.outputs_visible_at_trigger)
      return what + ": PDL consumer before the wait";
    if (c.mode != IssueMode::checked_each_call && !t.shape_changes_without_sync &&
        call.tokens != c.calls[0].tokens)
      return what + ": a shape change without a host sync";
  }
  return "";
}

void CaseLimits::validate() const {
  if (max_tokens < 1 || max_tokens > kMaxTokens)
    throw BadInput(fmt::format("--max-tokens must be in [1, {}]", kMaxTokens));
  if (max_hidden < 16 || max_hidden % 16)
    throw BadInput("--max-hidden must be a positive multiple of 16");
  if (max_hidden > kMaxHidden)
    throw BadInput(fmt::format("--max-hidden must be at most {}", kMaxHidden));
  if (max_elems < max_hidden)
    throw BadInput("--max-elems must be at least --max-hidden (one token of the widest row)");
  if (max_calls < 1 || max_calls > kMaxCallsPerCase)
    throw BadInput(fmt::format("--max-calls must be in [1, {}]", kMaxCallsPerCase));
}

std::int64_t CaseLimits::elems_per_call() const {
  return std::min<std::int64_t>(static_cast<std::int64_t>(max_tokens) * max_hidden, max_elems);
}

int CaseLimits::max_tokens_for(int hidden) const {
  return static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(max_tokens, elems_per_call() / hidden)));
}

std::string CaseLimits::does_not_fit(const GpuCase& c) const {
  if (c.calls.size() > static_cast<std::size_t>(max_calls))
    return fmt::format("the case has {} calls, this run allows {} (--max-calls)", c.calls.size(),
                       max_calls);
  if (c.hidden > max_hidden)
    return fmt::format("hidden={} exceeds --max-hidden {}", c.hidden, max_hidden);
  for (const CallSpec& call : c.calls)
    if (call.tokens > max_tokens ||
        static_cast<std::int64_t>(call.tokens) * c.hidden > elems_per_call())
      return fmt::format(
          "tokens={} x hidden={} exceeds this run's --max-tokens {} or --max-elems {}", call.tokens,
          c.hidden, max_tokens, elems_per_call());
  return "";
}

std::size_t CaseLimits::scale_out_capacity() const {
  // The largest of every pattern's storage over the calls within these limits: per token
  // floats; NVFP4's scales (more than MXFP8's), rows padded to 128; group FP8's, with
  // groups of 16 and the most padding tokens: (hidden/16 + 3) x (tokens + 128) bytes at most.
  const auto tokens = static_cast<std::size_t>(max_tokens);
  const auto hidden = static_cast<std::size_t>(max_hidden);
  const auto elems = static_cast<std::size_t>(elems_per_call());
  const std::size_t nvfp4 = protocol::nvfp4_scale_storage(k::Nvfp4Layout::swizzled128x4, tokens,
                                                          hidden / k::kNvfp4BlockSize);
  const std::size_t group = elems / kMinGroupSize + hidden / kMinGroupSize * kMaxTmaPadding +
                            3 * (tokens + kMaxTmaPadding);
  return std::max({tokens * 4, nvfp4, group}) + kScaleCanaryTail;
}

std::size_t CaseLimits::moe_rows_capacity() const {
  // [experts][tokens][hidden], or [tokens x top_k + padding][hidden], of any call within these.
  return static_cast<std::size_t>(reference::kMaxMoeExperts) *
             static_cast<std::size_t>(elems_per_call()) +
         static_cast<std::size_t>(reference::kMaxMoePaddedRows) * max_hidden;
}

namespace {
std::string describe_moe(const CallSpec& call) {
  if (call.moe_experts == 0) return "";
  return fmt::format(
      " moe(experts={}{}{}{}{})", call.moe_experts, call.moe_expert_scales ? "" : " unscaled",
      call.moe_shared_expert ? " +shared" : "",
      call.moe_routed_scaling != 1.0f ? fmt::format(" routed={}", call.moe_routed_scaling) : "",
      call.moe_allreduce_out ? " +allreduce_out" : "");
}
}  // namespace

std::string describe(const CallSpec& call) {
  std::string pattern(protocol::pattern_name(call.pattern));
  if (call.pattern == k::Pattern::mxfp8)
    pattern += fmt::format("({})", kScaleLayoutNames[static_cast<int>(call.scale_layout)]);
  if (call.pattern == k::Pattern::group_fp8)
    pattern += fmt::format("(g{} mn{})", call.group_size, group_fp8_tma_aligned_mn(call));
  return fmt::format(
             "{} {}{} tokens={} {} pdl={} trigger={} cluster={}{}{}{}",
             call.unfused   ? "unfused"
             : call.twoshot ? "two-shot"
                            : "one-shot",
             pattern, call.norm_out ? "" : " (no norm_out)", call.tokens,
             call.exact_values ? "exact" : "random", call.use_pdl ? "on" : "off",
             call.trigger == k::Trigger::early ? "early" : "end",
             kClusterNames[static_cast<int>(call.cluster)], call.pdl_consumer ? " +consumer" : "",
             call.pdl_producer ? fmt::format(" +producer({}ns)", call.producer_delay_ns) : "",
             call.variant != 0 ? fmt::format(" variant={}", call.variant) : "") +
         describe_moe(call);
}

std::string describe(const GpuCase& c) {
  return fmt::format(
      "seed={} ranks={} hidden={} {} lamport={} acc={} wb={} {} calls={}{}{}{}", c.seed, c.ranks,
      c.hidden, dtype_text(c.dtype), c.fp32_lamport ? "fp32" : "16b",
      c.fp32_accumulation ? "fp32" : "per-step", c.weight_bias,
      kIssueModeNames[static_cast<int>(c.mode)], c.calls.size(),
      c.delay_seed ? fmt::format(" delays={}:{}ns", c.delay_seed, c.delay_max_ns) : "",
      c.hold.active() ? fmt::format(" hold=r{}:c{}:{}:{}ns", c.hold.rank, c.hold.call,
                                    k::hold_point_name(c.hold.point), c.hold.ns)
                      : "",
      c.neg_zero_inputs ? "" : " no-neg-zero");
}

std::string describe(const RankHold& h) {
  if (!h.active()) return "none";
  static constexpr const char* kWhere[] = {
      "", "before its push", "after its push, before its loads", "before its flag update"};
  return fmt::format("rank {} {} in call {}, {} ns (every block)", h.rank,
                     kWhere[static_cast<int>(h.point)], h.call, h.ns);
}

std::string describe_block(const GpuCase& c, const std::string& in) {
  std::string out;
  auto line = [&](const char* label, const std::string& value) {
    out += fmt::format("{}{:<18}{}\n", in, label, value);
  };
  line("dtype", dtype_text(c.dtype));
  line("hidden", std::to_string(c.hidden));
  line("Lamport element", c.fp32_lamport ? "f32" : dtype_text(c.dtype));
  line("accumulation",
       c.fp32_accumulation ? "fp32, rounded once" : "rounded to the dtype after every rank");
  line("weight_bias", fmt::format("{}", c.weight_bias));
  line("issue mode", kIssueModeNames[static_cast<int>(c.mode)]);
  line("delays", c.delay_seed
                     ? fmt::format("seed {}, up to {} ns per pause", c.delay_seed, c.delay_max_ns)
                     : "none");
  line("held rank", describe(c.hold));
  line("input seed", std::to_string(c.seed));
  line("-0 in inputs", c.neg_zero_inputs ? "yes" : "no (the kernel's precondition)");
  out += fmt::format(
      "{}calls ({}):\n{}  {:>4} {:>6}  {:<17}{:<10}{:<8}{:<5}{:<9}{:<12}{:<14}{:<16}{}\n", in,
      c.calls.size(), in, "#", "tokens", "pattern", "kernel", "values", "PDL", "trigger", "cluster",
      "PDL consumer", "PDL producer", "variant");
  for (std::size_t i = 0; i < c.calls.size(); ++i) {
    const CallSpec& call = c.calls[i];
    out +=
        fmt::format("{}  {:>4} {:>6}  {:<17}{:<10}{:<8}{:<5}{:<9}{:<12}{:<14}{:<16}{}\n", in, i,
                    call.tokens, protocol::pattern_name(call.pattern),
                    call.unfused   ? "unfused"
                    : call.twoshot ? "two-shot"
                                   : "one-shot",
                    call.exact_values ? "exact" : "random", call.use_pdl ? "on" : "off",
                    call.trigger == k::Trigger::early ? "early" : "at end",
                    kClusterNames[static_cast<int>(call.cluster)], call.pdl_consumer ? "yes" : "no",
                    call.pdl_producer ? fmt::format("after {} ns", call.producer_delay_ns) : "no",
                    call.variant);
  }
  return out;
}

void showValue(const GpuCase& c, std::ostream& os) {
  os << "\n" << fmt::format("  ranks             {}\n", c.ranks) << describe_block(c, "  ");
}

std::vector<std::pair<std::string, std::string>> named_fields(const RunConfig& r) {
  return {
      {"binary_version", r.binary_version},         {"kernel", r.kernel},
      {"ranks", std::to_string(r.ranks)},           {"seed", std::to_string(r.seed)},
      {"cases", std::to_string(r.cases)},           {"mutant", r.mutant},
      {"max_tokens", std::to_string(r.max_tokens)}, {"max_hidden", std::to_string(r.max_hidden)},
      {"variant", std::to_string(r.variant)},       {"hidden_sizes", r.hidden_sizes}};
}

}  // namespace fusioncheck::gpu
