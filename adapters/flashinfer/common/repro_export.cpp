// `gpu repro`: one replay file of a FlashInfer family as a stand-alone CUDA program
// (flashinfer.hpp, export_flashinfer_repro). The program's sources are the files of
// adapters/flashinfer/repro/, built into this binary; the case becomes repro_case.h, its
// inputs and the reference's expected outputs binary files under data/.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "fusioncheck/gpu/host_bounded_wait.hpp"
#include "flashinfer_kernels.hpp"
#include "moe_kernels.hpp"
#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/gpu/case_runner.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/known_findings.hpp"
#include "fusioncheck/gpu/moe_inputs.hpp"
#include "fusioncheck/reference/generators.hpp"
#include "fusioncheck/reference/tolerance.hpp"
#include "repro_sources.hpp"
#include "repro_types.h"  // the program's own vocabulary: data files, MoE parts

namespace fusioncheck::adapters {
namespace {

namespace fs = std::filesystem;
namespace k = kernels;
namespace ref = reference;
using gpu::BadInput;

struct Family {
  const char* name;
  const char* macro;   // FC_FAMILY_* of repro_main.cu
  const char* header;  // under the include tree
};
constexpr Family kFamilies[] = {
    {"flashinfer", "FC_FAMILY_FUSION", "flashinfer/comm/trtllm_allreduce_fusion.cuh"},
    {"flashinfer-moe", "FC_FAMILY_MOE", "flashinfer/comm/trtllm_moe_allreduce_fusion.cuh"},
    {"flashinfer-legacy", "FC_FAMILY_LEGACY", "flashinfer/comm/trtllm_allreduce.cuh"},
};

const Family& family_of(const std::string& kernel) {
  for (const Family& f : kFamilies)
    if (kernel == f.name) return f;
  throw BadInput(
      "it exports flashinfer, flashinfer-moe and flashinfer-legacy cases; this "
      "replay's kernel is '" +
      kernel + "'");
}

// What the family runs (its choice's traits, known without a GPU).
gpu::KernelTraits traits_of(const Family& family, int ranks) {
  const std::string name = family.name;
  const gpu::KernelChoice choice = name == "flashinfer-moe"      ? flashinfer_moe_choice()
                                   : name == "flashinfer-legacy" ? flashinfer_legacy_choice()
                                                                 : flashinfer_choice();
  return choice.host_traits(ranks);
}

// The JSON string of a field, or BadInput.
std::string string_field(const nlohmann::json& j, const char* field) {
  if (!j.is_object() || !j.contains(field) || !j[field].is_string())
    throw BadInput(std::string("the replay file has no string field \"") + field + "\"");
  return j[field].get<std::string>();
}

// What the reproducer counts as its finding: a ledger entry the replay's findings match, or
// the replay's own findings.
struct FindingName {
  std::string id;
  std::vector<std::string> checks;
  std::string message;  // a refused launch's text that names it ("" : any)
};

FindingName name_finding(const nlohmann::json& replay, const gpu::GpuCase& c,
                         const std::string& kernel, const std::string& known_path,
                         const std::string& replay_path) {
  std::vector<gpu::Finding> findings;
  if (replay.contains("findings")) {
    if (!replay["findings"].is_array()) throw BadInput("the replay's \"findings\" is not a list");
    for (const auto& f : replay["findings"])
      findings.push_back({string_field(f, "check"), string_field(f, "message")});
  }
  if (findings.empty())
    throw BadInput(
        "the replay file lists no findings: nothing to reproduce (run it with gpu check "
        "--replay)");
  FindingName name;
  if (!known_path.empty()) {
    const gpu::KnownFindings ledger = gpu::read_known_findings(known_path);
    for (const gpu::KnownFinding& e : gpu::entries_for(ledger, kernel, flashinfer_main_release()))
      if (gpu::matches(e, c, findings))
        return {e.id, e.signature.checks, e.signature.message_contains};
    throw BadInput("no entry of " + known_path + " matches this replay's findings");
  }
  name.id = "the finding of " + fs::path(replay_path).filename().string();
  for (const gpu::Finding& f : findings)
    if (std::find(name.checks.begin(), name.checks.end(), f.check) == name.checks.end())
      name.checks.push_back(f.check);
  return name;
}

// Why the program cannot carry the case; "" if it can.
std::string not_exportable(const gpu::GpuCase& c, const Family& family) {
  if (c.mode == gpu::IssueMode::graph_replay)
    return "graph-replay cases are not exported (the program issues calls back to back or one "
           "by one): set \"mode\" to \"back-to-back\" and check that the replay still fails";
  if (c.mode == gpu::IssueMode::two_streams)
    return "two-streams cases are not exported (the program issues every call on one stream)";
  std::set<int> variants;
  for (const gpu::CallSpec& call : c.calls) {
    if (call.unfused) return "an unfused-baseline call (ours only)";
    variants.insert(call.variant);
  }
  if (std::string(family.name) == "flashinfer" && variants.size() > 1)
    return "calls of both FlashInfer builds (nvcc defaults and its JIT flags): the program is one "
           "build";
  if (c.hold.active() && c.hold.point != k::HoldPoint::before_push)
    return fmt::format(
        "the case holds rank {} {} inside the kernel; the program re-creates a rank held before "
        "its push only (the replay file stands alone)",
        c.hold.rank, k::hold_point_name(c.hold.point));
  return "";
}

std::string c_string(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out + "\"";
}

// A float as a C++ literal that reads back to the same value ("0.5f", "1e-06f", "42.0f").
std::string float_literal(float v) {
  std::string text = fmt::format("{:.9g}", v);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + "f";
}

class Writer {
 public:
  explicit Writer(fs::path dir) : dir_(std::move(dir)) {}
  void text(const std::string& name, const std::string& text) {
    gpu::write_file((dir_ / name).string(), text);
    files_.push_back(name);
  }
  void bytes(const std::string& name, const void* data, std::size_t size) {
    text("data/" + name, std::string(static_cast<const char*>(data), size));
  }
  const std::vector<std::string>& files() const { return files_; }

 private:
  fs::path dir_;
  std::vector<std::string> files_;
};

// One call's inputs (every rank's) and the reference's outputs, written; returns its CallCase.
std::string export_call(const gpu::GpuCase& c, int i, const gpu::KernelTraits& traits,
                        const Family& family, Writer& out) {
  const gpu::CallSpec& spec = c.calls[static_cast<std::size_t>(i)];
  const auto call_index = static_cast<std::uint64_t>(i);
  const ref::FusedConfig config = gpu::reference_config(c, spec, traits);
  ref::FusedInputs inputs;
  ref::SpecialsSpec specials;
  specials.seed = c.seed;
  specials.call_index = call_index;
  specials.with_neg_zero = c.neg_zero_inputs;
  inputs = spec.exact_values ? ref::make_exact_inputs(config, c.seed, call_index, c.neg_zero_inputs)
                             : ref::make_random_inputs(config, specials);
  std::size_t moe_bytes[repro::kMoeParts] = {};
  const bool moe = spec.moe_experts > 0;
  if (moe) {  // each rank's expert rows, reduced to the rank input the reference sums
    const ref::MoeConfig moe_config = gpu::moe_config(spec, traits);
    const ref::ExactSpec exact{c.seed, call_index, c.ranks, c.neg_zero_inputs};
    ref::SpecialsSpec moe_specials;
    moe_specials.with_neg_zero = c.neg_zero_inputs;
    const bool finalize = moe_config.kind == ref::MoeKind::finalize;
    for (int r = 0; r < c.ranks; ++r) {
      const ref::MoeInputs in = ref::make_moe_inputs(moe_config, c.dtype, spec.tokens, c.hidden,
                                                     exact, moe_specials, spec.exact_values, r);
      inputs.rank_inputs[static_cast<std::size_t>(r)] =
          ref::moe_combine(moe_config, c.dtype, spec.tokens, c.hidden, in);
      const std::pair<const void*, std::size_t> parts[repro::kMoeParts] = {
          {in.expert_rows.data(), in.expert_rows.bytes()},
          {in.reduction_scales.data(), finalize ? 0 : in.reduction_scales.size() * 4},
          {in.token_rows.data(), !finalize || moe_config.shared_expert ? in.token_rows.bytes() : 0},
          {in.permuted_index.data(), finalize ? in.permuted_index.size() * 4 : 0},
          {in.topk_scales.data(),
           finalize && moe_config.expert_scales ? in.topk_scales.bytes() : 0}};
      for (int part = 0; part < repro::kMoeParts; ++part) {
        moe_bytes[part] = std::max(moe_bytes[part], parts[part].second);
        if (parts[part].second > 0)
          out.bytes(repro::data_name(i, r, repro::kMoePartNames[part]), parts[part].first,
                    parts[part].second);
      }
    }
  }
  for (int r = 0; r < c.ranks; ++r) {
    const ref::Tensor& t = inputs.rank_inputs[static_cast<std::size_t>(r)];
    out.bytes(repro::data_name(i, r, "input"), t.data(), t.bytes());
  }
  out.bytes(repro::data_name(i, -1, "residual_in"), inputs.residual_in.data(),
            inputs.residual_in.bytes());
  out.bytes(repro::data_name(i, -1, "gamma"), inputs.gamma.data(), inputs.gamma.bytes());
  const ref::FusedOutputs want = ref::compute_fused(config, inputs);
  const bool allreduce = spec.pattern == k::Pattern::allreduce;
  if (allreduce || spec.moe_allreduce_out)
    out.bytes(repro::data_name(i, -1, "expected_allreduce_out"), want.allreduce.data(),
              want.allreduce.bytes());
  if (!allreduce) {
    out.bytes(repro::data_name(i, -1, "expected_residual_out"), want.residual_out.data(),
              want.residual_out.bytes());
    if (spec.norm_out) {
      out.bytes(repro::data_name(i, -1, "expected_norm_out"), want.norm_out.data(),
                want.norm_out.bytes());
      const std::vector<float> allowed =
          ref::norm_out_tolerance(config, want.residual_out, inputs.gamma);
      out.bytes(repro::data_name(i, -1, "norm_allowed"), allowed.data(), allowed.size() * 4);
    }
  }
  const std::string name = family.name;
  float scale_factor = 0.0f;
  if (name == "flashinfer-moe") scale_factor = gpu::kNvfp4GlobalScale;  // as its adapter passes it
  if (name == "flashinfer" && spec.pattern == k::Pattern::fp8_static)
    scale_factor = 1.0f / gpu::kFp8InvScale;
  if (name == "flashinfer" && spec.pattern == k::Pattern::nvfp4)
    scale_factor = gpu::kNvfp4GlobalScale;
  const bool group = spec.pattern == k::Pattern::group_fp8;
  const int sf_layout =
      spec.pattern == k::Pattern::mxfp8 && spec.scale_layout == k::Nvfp4Layout::linear ? 2 : 0;
  // In CallCase's order (repro_types.h): C++17 has no designated initializers.
  return fmt::format(
      "    {{/*tokens*/ {}, /*fi_pattern*/ {}, /*twoshot*/ {}, /*pdl*/ {}, /*trigger_at_end*/ {}, "
      "/*norm_out*/ {}, /*pattern_is_allreduce*/ {}, /*check_allreduce_out*/ {}, "
      "/*pdl_producer*/ {}, /*producer_delay_ns*/ {}, /*pdl_consumer*/ {}, /*quantises*/ {}, "
      "/*sf_layout*/ {}, "
      "/*group_size*/ {}, /*tma_aligned_mn*/ {}, /*scale_bytes*/ {}, /*scale_factor*/ {}, "
      "/*moe_finalize*/ {}, /*moe_experts*/ {}, /*moe_routed_scaling*/ {}, "
      "/*moe_allreduce_out*/ {}, /*moe_part_bytes*/ {{{}, {}, {}, {}, {}}}}},\n",
      spec.tokens, fi::fi_fusion_pattern(spec.pattern, spec.norm_out), spec.twoshot, spec.use_pdl,
      spec.trigger == k::Trigger::at_end, spec.norm_out, allreduce,
      allreduce || spec.moe_allreduce_out, spec.pdl_producer, spec.producer_delay_ns,
      spec.pdl_consumer, k::pattern_quantises(spec.pattern), sf_layout, group ? spec.group_size : 0,
      group ? gpu::group_fp8_tma_aligned_mn(spec) : 0, gpu::scale_out_bytes(spec, c.hidden),
      float_literal(scale_factor),
      moe && gpu::moe_config(spec, traits).kind == ref::MoeKind::finalize, spec.moe_experts,
      float_literal(spec.moe_routed_scaling), spec.moe_allreduce_out, moe_bytes[0], moe_bytes[1],
      moe_bytes[2], moe_bytes[3], moe_bytes[4]);
}

// The delays the adapter puts before each rank's call (pause_before), and the case's hold: its
// launch counter runs on across the runs of a replay. Runs share a line up to 130 columns (a table
// of many runs stays short).
std::string delays_table(const gpu::GpuCase& c, int runs) {
  std::string out, line;
  const int n = static_cast<int>(c.calls.size());
  for (int run = 0; run < runs; ++run) {
    std::string entry = "{";
    for (int i = 0; i < n; ++i) {
      entry += "{";
      for (int r = 0; r < c.ranks; ++r) {
        std::uint32_t ns = 0;
        bool staggered = false;
        const auto index = static_cast<std::uint32_t>(run * n + i);
        if (c.delay_seed != 0 && !c.calls[static_cast<std::size_t>(i)].pdl_producer) {
          ns = gpu::delay_for(c.delay_seed, r, index, c.delay_max_ns);
          staggered = ns != 0 && gpu::staggered_start_for(c.delay_seed, r, index);
        }
        // A held rank (before its push: the only hold of these families) pauses first.
        const bool held = c.hold.active() && c.hold.rank == r && c.hold.call == i;
        entry += held ? fmt::format("{{{}, {}, {}}}", ns, staggered, c.hold.ns)
                      : fmt::format("{{{}, {}}}", ns, staggered);
        if (r + 1 < c.ranks) entry += ", ";
      }
      entry += i + 1 < n ? "}, " : "}";
    }
    entry += run + 1 < runs ? "}," : "}";
    if (!line.empty() && line.size() + 1 + entry.size() > 130) out += line + "\n", line.clear();
    line += (line.empty() ? "    " : " ") + entry;
  }
  return out + line + "\n";
}

// The in-kernel delay of each rank, as the MoE adapter sets it (its sync-delay copy runs
// the bf16 cases with delays), and the exits of the header it draws from: no delays where the
// case has none.
struct SyncDelays {
  std::vector<gpu::SyncDelay> ranks;
  std::vector<int> sites;
};
SyncDelays sync_delays(const gpu::GpuCase& c, const Family& family) {
  if (std::string(family.name) != "flashinfer-moe" || c.dtype != k::DType::bf16 ||
      c.delay_seed == 0)
    return {};
  for (const fi::MoeInstance& i : fi::kMoeInstances) {
    if (i.launch == nullptr || !gpu::MutantId(i.mutant).none() || i.sync_site_count == 0) continue;
    SyncDelays out;
    out.sites.assign(i.sync_sites, i.sync_sites + i.sync_site_count);
    bool any = false;
    for (int r = 0; r < c.ranks; ++r) {
      out.ranks.push_back(
          gpu::sync_delay_for(c.delay_seed, r, c.delay_max_ns, i.sync_sites, i.sync_site_count));
      any |= out.ranks.back().line != 0;
    }
    return any ? out : SyncDelays{};
  }
  return {};
}

// Line `line` (from 1) of the exported header, trimmed: what a site's hook follows.
std::string header_line(const Family& family, int line) {
  std::ifstream in(fs::path(flashinfer_include_dir()) / family.header);
  std::string text;
  for (int n = 1; n <= line && std::getline(in, text); ++n) {}
  const auto first = text.find_first_not_of(" \t");
  return first == std::string::npos ? "" : text.substr(first);
}

// The Lamport buffer size the adapter gives a run of the default limits (comm_size in ctrl).
std::uint64_t comm_size_of(const gpu::GpuCase& c, const Family& family) {
  const auto elems = static_cast<std::uint64_t>(gpu::CaseLimits{}.elems_per_call());
  if (std::string(family.name) == "flashinfer-legacy")
    return std::bit_ceil(std::max<std::uint64_t>(
        64u << 10, static_cast<std::uint64_t>(c.ranks) *
                       std::min<std::uint64_t>(elems, 16ull * gpu::CaseLimits::kMaxHidden) * 2));
  return fi::lamport_comm_size(c.ranks, elems, false);
}

}  // namespace

ReproExport export_flashinfer_repro(const ReproRequest& request) {
  if (request.runs < 1 || request.runs > 1000)
    throw BadInput("--runs " + std::to_string(request.runs) + ": between 1 and 1000");
  const nlohmann::json replay = gpu::read_replay_json(request.replay_path);
  const std::string kernel = string_field(replay, "kernel");
  const Family& family = family_of(kernel);
  if (replay.contains("mutant") && replay["mutant"] != "none")
    throw BadInput("the replay is of a patched copy (mutant " + replay["mutant"].dump() +
                   "): reproducers are of the upstream header");
  if (!replay.contains("case")) throw BadInput("the replay file has no \"case\"");
  const gpu::GpuCase c = gpu::case_from_json(replay["case"]);
  if (const std::string why = gpu::case_problem(c); !why.empty())
    throw BadInput("the replay's case cannot run: " + why);
  const gpu::KernelTraits traits = traits_of(family, c.ranks);
  if (const std::string why = gpu::outside_traits(c, traits); !why.empty())
    throw BadInput("the replay's case is outside what " + kernel + " runs: " + why);
  if (const std::string why = not_exportable(c, family); !why.empty()) throw BadInput(why);
  const FindingName finding =
      name_finding(replay, c, kernel, request.known_path, request.replay_path);
  if (!flashinfer_available())
    throw BadInput("this build has no FlashInfer adapter: " + flashinfer_unavailable_reason());

  const fs::path dir = request.out_dir;
  std::error_code error;
  if (fs::exists(dir, error) && (!fs::is_directory(dir, error) || !fs::is_empty(dir, error)))
    throw BadInput("--out " + request.out_dir + ": exists and is not an empty folder");
  fs::create_directories(dir / "data", error);
  if (error) throw BadInput("--out " + request.out_dir + ": " + error.message());

  Writer out(dir);
  std::string calls;
  int max_tokens = 0;
  bool nvfp4 = false;
  for (int i = 0; i < static_cast<int>(c.calls.size()); ++i) {
    calls += export_call(c, i, traits, family, out);
    max_tokens = std::max(max_tokens, c.calls[static_cast<std::size_t>(i)].tokens);
    nvfp4 |= c.calls[static_cast<std::size_t>(i)].pattern == k::Pattern::nvfp4;
  }
  std::string checks;
  for (const std::string& check : finding.checks)
    checks += (checks.empty() ? "" : ", ") + c_string(check);
  const bool fast =
      std::string(family.name) == "flashinfer" && !c.calls.empty() && c.calls.front().variant == 1;
  const SyncDelays sync = sync_delays(c, family);
  const std::vector<gpu::SyncDelay>& holds = sync.ranks;
  std::string holds_table, holds_text;
  for (int r = 0; r < static_cast<int>(holds.size()); ++r) {
    const gpu::SyncDelay& d = holds[static_cast<std::size_t>(r)];
    const auto site = std::find(sync.sites.begin(), sync.sites.end(), d.line) - sync.sites.begin();
    holds_table +=
        fmt::format("    {{{}, {}, {}u, {}}},\n", d.line, d.block, d.ns, d.line == 0 ? 0 : site);
    if (d.line != 0)
      holds_text += fmt::format("    rank {} holds block {} for {} ns at line {}: {}\n", r, d.block,
                                d.ns, d.line, header_line(family, d.line));
  }
  std::string header = fmt::format(
      "// Written by `fusioncheck gpu repro` from {}: the case, as fusioncheck ran it.\n"
      "#pragma once\n#define {} 1\n#define FC_BF16 {}\n#define FC_SYNC_DELAY {}\n",
      fs::path(request.replay_path).filename().string(), family.macro,
      c.dtype == k::DType::bf16 ? 1 : 0, holds.empty() ? 0 : 1);
  for (const Family& f : kFamilies)
    if (&f != &family) header += fmt::format("#define {} 0\n", f.macro);
  header += fmt::format(
      "namespace repro {{\ninline constexpr const char* kFinding = {};\n"
      "inline constexpr const char* kFindingChecks[] = {{{}}};\n"
      "inline constexpr const char* kFindingMessage = {};\n"
      "inline constexpr const char* kFamily = {};\n"
      "inline constexpr const char* kExportedHeaderSha256 = {};\n"
      "inline constexpr int kRanks = {};\ninline constexpr int kHidden = {};\n"
      "inline constexpr int kCalls = {};\ninline constexpr int kRuns = {};\n"
      "inline constexpr int kMaxTokens = {};\ninline constexpr int kMinComputeMajor = {};\n"
      "inline constexpr bool kBackToBack = {};\ninline constexpr float kEps = 1e-6f;\n"
      "inline constexpr float kWeightBias = {};\ninline constexpr bool kFp32Acc = {};\n"
      "inline constexpr unsigned long long kCommSize = {};\n"
      "inline constexpr unsigned long long kTwoshotBytes = {};\n"
      "inline constexpr CallCase kCallCases[kCalls] = {{\n{}}};\n"
      "// [run][call][rank]\ninline constexpr Delay kDelays[kRuns][kCalls][kRanks] = {{\n{}}};\n"
      "{}"
      "}}  // namespace repro\n",
      c_string(finding.id), checks, c_string(finding.message),
      c_string(kernel + (fast ? " (FlashInfer's JIT flags)" : "")),
      c_string(flashinfer_header_sha256(family.header)), c.ranks, c.hidden, c.calls.size(),
      request.runs, max_tokens, nvfp4 ? 10 : 9,
      c.mode != gpu::IssueMode::checked_each_call ? "true" : "false", float_literal(c.weight_bias),
      c.fp32_accumulation, comm_size_of(c, family),
      std::string(family.name) == "flashinfer" ? comm_size_of(c, family) : 256, calls,
      delays_table(c, request.runs),
      holds.empty()
          ? std::string()
          : fmt::format("inline constexpr int kSyncSiteCount = {};  // the header's exits\n"
                        "// [rank]: the block held at a synchronisation exit, every call\n"
                        "inline constexpr SyncDelay kSyncDelays[kRanks] = {{\n{}}};\n",
                        sync.sites.size(), holds_table));
  out.text("repro_case.h", header);
  out.text("repro_main.cu", std::string(repro_sources::kMain));
  out.text("repro_run.cuh", std::string(repro_sources::kRun));
  out.text("repro_types.h", std::string(repro_sources::kTypes));
  std::string cmake = repro_sources::kCMakeLists;
  if (!holds.empty()) cmake += "\n" + std::string(repro_sources::kCMakeSyncDelay);
  auto replace = [](std::string& text, const std::string& key, const std::string& value) {
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
      text.replace(at, key.size(), value);
  };
  replace(cmake, "FCX_INCLUDE_DEFAULT", flashinfer_include_dir());
  replace(cmake, "FCX_HEADER_FILE", family.header);
  replace(cmake, "FCX_EXTRA_FLAGS", fast ? flashinfer_fast_math_flags() : "");
  out.text("CMakeLists.txt", cmake);
  if (!holds.empty()) {
    out.text("fi_sync_delay.cuh", std::string(repro_sources::kSyncDelayHook));
    out.text("sync_delay.cmake", std::string(repro_sources::kSyncDelayRewrite));
  }
  std::string readme = repro_sources::kReadme;
  replace(readme, "FCX_FINDING", finding.id);
  replace(readme, "FCX_REPLAY", fs::path(request.replay_path).filename().string());
  replace(readme, "FCX_CASE",
          gpu::describe_block(c, "    ") +
              (holds_text.empty() ? "" : "    in-kernel delays (every call):\n" + holds_text));
  replace(readme, "FCX_HEADER_FILE", family.header);
  replace(readme, "FCX_SOURCE", flashinfer_source());
  replace(readme, "FCX_RUNS", std::to_string(request.runs));
  out.text("README.md", readme);
  out.text("replay.json", replay.dump(1) + "\n");
  return {finding.id, kernel, out.files()};
}

}  // namespace fusioncheck::adapters
