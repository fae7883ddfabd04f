// `fusioncheck gpu check`: the property suite. Rank 0 runs RapidCheck: it generates each
// case, broadcasts it, and every rank runs it (CaseRunner); shrinking is driven by rank 0
// the same way, so every rank always runs the same case. The minimal failing case is
// written as a replay file.
#include <rapidcheck.h>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <cstdlib>
#include <fstream>

#include "fusioncheck/gpu/case_runner.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_check.hpp"
#include "fusioncheck/gpu/gpu_report.hpp"
#include "fusioncheck/gpu/mpi_bootstrap.hpp"
#include "fusioncheck/reference/moe.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;
using Clock = std::chrono::steady_clock;

enum Command : long long { kRunCase = 1, kDone = 2, kBadInput = 3 };

// Rank 0 -> all: a command and, for kRunCase, the case as JSON.
void send_case(mpi::MpiComm& comm, const GpuCase* c) {
  const std::string text = c ? to_json(*c).dump() : std::string();
  long long header[2] = {c ? kRunCase : kDone, static_cast<long long>(text.size())};
  comm.broadcast(header, sizeof(header), 0, "next case from rank 0");
  if (c) comm.broadcast(const_cast<char*>(text.data()), text.size(), 0, "case body");
}

// Rank 0 -> all: bad input only rank 0 could see (a replay file); every rank exits 2 with it.
void send_bad_input(mpi::MpiComm& comm, const std::string& message) {
  long long header[2] = {kBadInput, static_cast<long long>(message.size())};
  comm.broadcast(header, sizeof(header), 0, "next case from rank 0");
  comm.broadcast(const_cast<char*>(message.data()), message.size(), 0, "bad input message");
}

std::optional<GpuCase> receive_case(mpi::MpiComm& comm) {
  long long header[2] = {0, 0};
  comm.broadcast(header, sizeof(header), 0, "next case from rank 0");
  if (header[0] == kDone) return std::nullopt;
  std::string text(static_cast<std::size_t>(header[1]), '\0');
  comm.broadcast(text.data(), text.size(), 0,
                 header[0] == kBadInput ? "bad input message" : "case body");
  if (header[0] == kBadInput) throw BadInput(text);
  return case_from_json(nlohmann::json::parse(text));
}

// Rank 0: the case in a replay file, checked against this job; throws BadInput.
GpuCase load_replay(const std::string& path, int ranks, const std::string& kernel,
                    const CaseRunner& runner) {
  const nlohmann::json j = read_replay_json(path);
  if (!j.is_object()) throw BadInput("--replay " + path + ": not a replay file (a JSON object)");
  if (j.contains("kernel") && !j["kernel"].is_string())
    throw BadInput("--replay " + path + ": kernel = " + j["kernel"].dump() + ": not a string");
  const std::string recorded =
      j.value("kernel", std::string("ours"));  // absent before adapters existed
  if (recorded != kernel)
    throw BadInput(
        fmt::format("--replay {}: the case was found with --kernel {}; this run drives --kernel {}",
                    path, recorded, kernel));
  GpuCase c = case_from_json(j.contains("case") ? j["case"] : j);
  if (c.ranks != ranks)
    throw BadInput(
        fmt::format("--replay: the case needs {} ranks, the job has {}", c.ranks, ranks));
  if (const std::string problem = runner.limits().does_not_fit(c); !problem.empty())
    throw BadInput("--replay: " + problem);
  return c;
}

}  // namespace

// Cases: small shapes most of the time (throughput), occasionally the large ones; every
// option that selects different code is drawn, within the kernel's traits (outside_traits
// finds nothing in a drawn case). One generated value, so that RapidCheck shrinks and prints
// the case as a whole (showValue in gpu_case.hpp). For the default traits the draws are
// those of the suite before traits narrowed them (a seed replays the same cases).
namespace {

// The block-scaled FP8 knobs of a call whose tokens are final: mxfp8's scale layout; group
// FP8's group (128 as DeepSeek-V3 and most FP8 block-quantised models use it, the others
// through both of the kernel's amax reductions: warp shuffles for 32, 64, 128 and 256
// elements, shared memory for 96 and 512) and its scales' token padding (DeepGEMM's
// rounding up to 4, or a few more).
void draw_block_scales(CallSpec& call, int hidden) {
  if (call.pattern == k::Pattern::mxfp8)
    call.scale_layout = *rc::gen::element(k::Nvfp4Layout::swizzled128x4, k::Nvfp4Layout::linear);
  if (call.pattern != k::Pattern::group_fp8) return;
  std::vector<int> sizes;  // each as often as its weight
  for (const auto& [weight, size] :
       {std::pair{4, 128}, {2, 64}, {2, 32}, {1, 96}, {1, 256}, {1, 512}})
    if (hidden % size == 0) sizes.insert(sizes.end(), static_cast<std::size_t>(weight), size);
  call.group_size = *rc::gen::elementOf(sizes);
  call.tma_aligned_mn = *rc::gen::weightedOneOf<int>(
      {{3, rc::gen::just(0)}, {1, rc::gen::inRange(call.tokens, call.tokens + 9)}});
}

// A MoE call's experts and options, once its variant (which of the two kernels) is drawn: the
// active experts or top_k as models route them (8: DeepSeek-V3, Qwen3's MoE; 4: gpt-oss; 2:
// Mixtral; 1: Llama 4), now and then any count up to the most the suite draws; the finalize
// kernel's scales, shared expert and routed scaling (DeepSeek-V3's 2.5; exact calls 1 or 2,
// which keep their sums exact); the reduction kernel's sum written out as well.
void draw_moe(CallSpec& call, const KernelTraits& traits) {
  if (!traits.moe) return;
  call.moe_experts = *rc::gen::weightedOneOf<int>(
      {{3, rc::gen::element(8, 4, 2, 1)}, {1, rc::gen::inRange(1, reference::kMaxMoeExperts + 1)}});
  if (traits.variants.at(static_cast<std::size_t>(call.variant)).moe_finalize) {
    call.moe_expert_scales = *rc::gen::element(true, false);
    call.moe_shared_expert = *rc::gen::element(false, true);
    call.moe_routed_scaling =
        call.exact_values ? *rc::gen::element(1.0f, 2.0f) : *rc::gen::element(1.0f, 2.5f, 0.5f);
  } else {
    call.moe_allreduce_out = *rc::gen::element(false, true);
  }
}

}  // namespace

namespace {

// The held-rank schedule, in one case of four: a rank, a call, a point the kernel can hold at
// (never before a call behind its PDL producer, unless the kernel holds itself), a time.
// focus: in every case, in a call that another follows.
void draw_hold(GpuCase& c, const KernelTraits& traits, bool focus) {
  if (!focus &&
      !*rc::gen::weightedOneOf<bool>({{3, rc::gen::just(false)}, {1, rc::gen::just(true)}}))
    return;
  // Uniform whatever RapidCheck's size (inRange favours small values early on).
  const auto index_below = [](int n) {
    std::vector<int> all(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
    return *rc::gen::elementOf(all);
  };
  RankHold h;
  h.rank = index_below(c.ranks);
  const int calls = static_cast<int>(c.calls.size());
  h.call = index_below(focus && calls > 1 ? calls - 1 : calls);
  h.point = *rc::gen::elementOf(traits.hold_points(c.dtype));
  h.ns = *rc::gen::elementOf(std::vector<std::uint32_t>(std::begin(kHoldNs), std::end(kHoldNs)));
  CallSpec& held = c.calls[static_cast<std::size_t>(h.call)];
  if (!traits.holds_behind_pdl_producer(h.point, c.dtype) && held.pdl_producer) {
    if (!focus) return;
    held.pdl_producer = false;  // every case of the focus holds a rank
    held.producer_delay_ns = 0;
  }
  c.hold = h;
}

}  // namespace

GpuCase draw_case(const DrawSettings& o, const KernelTraits& traits) {
  GpuCase c;
  c.seed = *rc::gen::arbitrary<std::uint32_t>();
  c.ranks = o.ranks;
  const int hidden_units = o.limits.max_hidden / 16;
  if (!o.hidden_sizes.empty()) {  // the user's shapes that the kernel runs (run_check checks one)
    std::vector<int> sizes;
    for (int h : o.hidden_sizes)
      if (h <= o.limits.max_hidden && traits.runs_hidden(h)) sizes.push_back(h);
    c.hidden = *rc::gen::elementOf(sizes);
  } else if (traits.hidden_sizes.empty()) {
    std::vector<int> model_units;  // the released models' sizes within --max-hidden
    for (int h : kModelHiddenSizes)
      if (h <= o.limits.max_hidden) model_units.push_back(h / 16);
    if (model_units.empty()) model_units.push_back(hidden_units);
    c.hidden = 16 * *rc::gen::weightedOneOf<int>(
                        {{6, rc::gen::inRange(1, std::min(hidden_units, 64) + 1)},
                         {3, rc::gen::element(std::min(hidden_units, 256), hidden_units)},
                         {2, rc::gen::elementOf(model_units)},
                         {1, rc::gen::inRange(1, hidden_units + 1)}});
  } else {  // the kernel's own list, within --max-hidden (shrinks towards the smallest)
    std::vector<int> sizes;
    for (int h : traits.hidden_sizes)
      if (h <= o.limits.max_hidden) sizes.push_back(h);
    c.hidden = *rc::gen::elementOf(sizes);
  }
  c.dtype = *rc::gen::element(k::DType::bf16, k::DType::f16);
  c.fp32_lamport = traits.fp32_lamport && *rc::gen::element(false, true);
  c.fp32_accumulation =
      (*rc::gen::element(true, false) || !traits.per_step_accumulation) && traits.fp32_accumulation;
  c.weight_bias = traits.weight_bias ? *rc::gen::element(0.0f, 1.0f) : 0.0f;
  c.mode = traits.graph_replay
               ? *rc::gen::element(IssueMode::checked_each_call, IssueMode::back_to_back,
                                   IssueMode::graph_replay)
               : *rc::gen::element(IssueMode::checked_each_call, IssueMode::back_to_back);
  c.neg_zero_inputs = traits.neg_zero_inputs;
  if (!o.mutant.none()) {
    c.dtype = k::DType::bf16;  // mutant instances are compiled for bf16 (kernels/README.md)
    c.fp32_lamport = o.mutant == protocol::Mutant::sentinel_width;
  }
  if (o.delays &&
      *rc::gen::weightedOneOf<bool>({{3, rc::gen::just(false)}, {1, rc::gen::just(true)}})) {
    c.delay_seed = *rc::gen::inRange<std::uint32_t>(1, 1u << 30);
    c.delay_max_ns = *rc::gen::element(2'000u, 20'000u, 200'000u);
  }
  int max_tokens_here = o.limits.max_tokens_for(c.hidden);
  if (traits.max_tokens > 0) max_tokens_here = std::min(max_tokens_here, traits.max_tokens);
  // What provokes a flag advanced before every block read it: blocks of a call that start
  // after block 0 has finished. Every case is delayed with the longest spread (an adapter
  // starts half of the delayed calls block by block, over the delay), calls are one-shot and
  // of many tokens (a grid of many blocks), issued eagerly (a graph captures no staggering).
  const bool late_blocks = o.focus_late_blocks && o.delays;
  if (late_blocks) {
    c.delay_seed = *rc::gen::inRange<std::uint32_t>(1, 1u << 30);
    c.delay_max_ns = kLateBlocksDelayNs;
    c.mode = *rc::gen::element(IssueMode::checked_each_call, IssueMode::back_to_back);
  }
  std::vector<k::Pattern> patterns;
  for (k::Pattern p : protocol::kAllPatterns)
    if (traits.runs_pattern(p) && (p != k::Pattern::nvfp4 || o.nvfp4_supported) &&
        (!protocol::pattern_block_scaled_fp8(p) || c.hidden % protocol::kMxfp8BlockSize == 0))
      patterns.push_back(p);
  int ncalls = *rc::gen::inRange(1, o.limits.max_calls + 1);
  // What lets a rank's peers run ahead of it: a rank held in a call that another follows,
  // issued without a host sync between them.
  const bool held_rank = o.focus_held_rank && o.delays;
  if (held_rank) {
    ncalls = std::max(ncalls, std::min(2, o.limits.max_calls));
    c.mode = traits.graph_replay
                 ? *rc::gen::element(IssueMode::back_to_back, IssueMode::graph_replay)
                 : IssueMode::back_to_back;
  }
  // What provokes a two-shot race (a flag seen before the data it guards, a region reused by
  // the next call): two-shot calls only, as many as the case may hold, issued without a host
  // sync between them, of changing and larger sizes.
  const bool race_twoshot = o.focus_twoshot && traits.twoshot && !c.fp32_lamport;
  if (race_twoshot) {
    c.mode = *rc::gen::element(IssueMode::back_to_back, IssueMode::graph_replay);
    ncalls = o.limits.max_calls;  // the kill table raises it to kMaxCallsPerCase for these runs
  }
  // Two users of one communicator: calls from two streams that nothing orders (not in the
  // focus runs, which choose their own issue). Drawn only when asked for, so that a seed
  // draws the same cases as before without the option.
  const bool two_streams = o.two_streams_percent > 0 && !late_blocks && !held_rank &&
                           !race_twoshot && o.limits.max_calls >= 2 &&
                           *rc::gen::inRange(0, 100) < o.two_streams_percent;
  if (two_streams) {
    c.mode = IssueMode::two_streams;
    ncalls = std::max(ncalls, 2);
  }
  for (int i = 0; i < ncalls; ++i) {
    CallSpec call;
    call.twoshot =
        traits.twoshot && !c.fp32_lamport && *rc::gen::inRange(0, 100) < o.twoshot_percent;
    call.twoshot = (call.twoshot || race_twoshot) && !late_blocks;
    call.pattern = *rc::gen::elementOf(patterns);
    call.tokens = race_twoshot ? *rc::gen::weightedOneOf<int>(
                                     {{1, rc::gen::inRange(1, std::min(16, max_tokens_here) + 1)},
                                      {2, rc::gen::inRange(1, max_tokens_here + 1)}})
                               : *rc::gen::weightedOneOf<int>(
                                     {{6, rc::gen::inRange(1, std::min(16, max_tokens_here) + 1)},
                                      {3, rc::gen::inRange(1, std::min(128, max_tokens_here) + 1)},
                                      {1, rc::gen::inRange(1, max_tokens_here + 1)}});
    if (late_blocks)
      call.tokens =
          *rc::gen::inRange(std::min(kLateBlocksMinTokens, max_tokens_here), max_tokens_here + 1);
    if (call.twoshot && traits.twoshot_more_tokens_than_ranks) {  // else the kernel refuses it
      if (max_tokens_here > o.ranks) call.tokens = std::max(call.tokens, o.ranks + 1);
      else call.twoshot = false;
    }
    // One shape per sequence issued without a host sync, where the kernel needs it.
    if (i > 0 && !traits.shape_changes_without_sync && c.mode != IssueMode::checked_each_call)
      call.tokens = c.calls[0].tokens;
    call.exact_values =
        *rc::gen::weightedOneOf<bool>({{3, rc::gen::just(true)}, {1, rc::gen::just(false)}});
    call.use_pdl = *rc::gen::element(true, false);
    call.trigger = traits.early_trigger ? *rc::gen::element(k::Trigger::at_end, k::Trigger::early)
                                        : k::Trigger::at_end;
    call.cluster = traits.forced_cluster
                       ? *rc::gen::element(k::ClusterMode::automatic, k::ClusterMode::force_cluster,
                                           k::ClusterMode::force_no_cluster)
                       : k::ClusterMode::automatic;
    // A quantising pattern without norm_out, where the kernel has one (half of them).
    call.norm_out = !(traits.quant_without_norm_out && k::pattern_quantises(call.pattern)) ||
                    *rc::gen::element(true, false);
    // A next layer reading the output right after the trigger (kills early-trigger).
    call.pdl_consumer = traits.outputs_visible_at_trigger && call.use_pdl &&
                        call.trigger == k::Trigger::at_end && call.norm_out &&
                        *rc::gen::element(false, true);
    // The kernel that writes the call's inputs, right before it (kills reading before the wait).
    call.pdl_producer =
        o.pdl_producer && call.use_pdl &&
        *rc::gen::weightedOneOf<bool>({{2, rc::gen::just(false)}, {1, rc::gen::just(true)}});
    call.producer_delay_ns = call.pdl_producer ? *rc::gen::element(5'000u, 20'000u, 50'000u) : 0u;
    // Uniform whatever RapidCheck's size (inRange would favour the first variants early on).
    std::vector<int> variants(std::max<std::size_t>(1, traits.variants.size()));
    for (std::size_t v = 0; v < variants.size(); ++v) variants[v] = static_cast<int>(v);
    call.variant = o.variant >= 0 ? o.variant : *rc::gen::elementOf(variants);
    if (reaches_deep_path(call.variant, c.hidden, max_tokens_here, traits) &&
        *rc::gen::inRange(0, 4) == 0 && !late_blocks)
      call.tokens = max_tokens_here;
    fit_tokens_to_variant(call, c.hidden, max_tokens_here, traits);
    draw_block_scales(call, c.hidden);
    draw_moe(call, traits);
    c.calls.push_back(call);
  }
  if (o.delays) draw_hold(c, traits, held_rank);
  return c;
}

namespace {

void write_replay(const std::string& path, const GpuCase& c, const CaseVerdict& v,
                  const std::string& kernel, const MutantId& mutant, const std::string& command) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : v.findings) findings.push_back({{"check", f.check}, {"message", f.message}});
  write_file(path, nlohmann::json{{"case", to_json(c)},
                                  {"kernel", kernel},
                                  {"mutant", mutant.id()},
                                  {"findings", findings},
                                  {"replay", command}}
                           .dump(1) +
                       "\n");
}

// --mutant: the kernel under test must have an instance of it (BadInput otherwise).
void require_mutant_instance(const KernelUnderTest& kernel, const MutantId& mutant) {
  const auto have = kernel.mutants();
  if (!mutant.none() && std::find(have.begin(), have.end(), mutant) == have.end()) {
    std::vector<std::string> ids;
    for (auto m : have) ids.emplace_back(m.id());
    throw BadInput(
        fmt::format("--mutant {}: {} has no instance of this mutant (it has: {})",
                    std::string(mutant.id()), kernel.name(),
                    ids.empty() ? std::string("none") : fmt::format("{}", fmt::join(ids, ", "))));
  }
}

// --max-hidden: a kernel with its own list of hidden sizes must have one within it.
void require_hidden_size_within(const KernelTraits& traits, int max_hidden,
                                const KernelUnderTest& kernel) {
  if (traits.hidden_sizes.empty()) return;
  const int smallest = *std::min_element(traits.hidden_sizes.begin(), traits.hidden_sizes.end());
  if (smallest > max_hidden)
    throw BadInput(
        fmt::format("--max-hidden {}: {} runs no hidden size that small (the smallest is {})",
                    max_hidden, kernel.name(), smallest));
}

// --hidden: every size within --max-hidden, and one the kernel runs.
void require_listed_hidden_size(const KernelTraits& traits, const CheckOptions& o,
                                const KernelUnderTest& kernel) {
  if (o.hidden_sizes.empty()) return;
  bool runs_one = false;
  for (int h : o.hidden_sizes) {
    if (h > o.limits.max_hidden)
      throw BadInput(fmt::format("--hidden {}: above --max-hidden {}", h, o.limits.max_hidden));
    runs_one = runs_one || traits.runs_hidden(h);
  }
  if (!runs_one)
    throw BadInput(fmt::format("--hidden: {} runs none of these hidden sizes", kernel.name()));
}

DrawSettings draw_settings(const CheckOptions& o, int ranks, const GpuPlacement& placement) {
  DrawSettings draw;
  draw.ranks = ranks;
  draw.limits = o.limits;
  draw.mutant = o.mutant;
  draw.nvfp4_supported = placement.compute_capability >= 100;  // NVFP4 is refused below sm_100
  draw.delays = o.delays;
  draw.pdl_producer = o.pdl_producer;
  draw.twoshot_percent = o.twoshot_percent;
  draw.variant = o.variant;
  draw.hidden_sizes = o.hidden_sizes;
  draw.focus_twoshot = o.focus_twoshot;
  draw.focus_late_blocks = o.focus_late_blocks;
  draw.focus_held_rank = o.focus_held_rank;
  draw.two_streams_percent = o.two_streams_percent;
  return draw;
}

// The command that replays a case file on as many ranks.
std::string replay_command(int ranks, const CheckOptions& o, const std::string& file) {
  return fmt::format("mpirun -np {} fusioncheck gpu check{} --mutant {} --replay {}", ranks,
                     o.kernel.name == "ours" ? std::string() : " --kernel " + o.kernel.name,
                     std::string(o.mutant.id()), file);
}

// Runs the cases of this rank and counts them into the result; rank 0 prints a progress
// line, with where the time goes, every 15 s of a long run.
class CaseCounter {
 public:
  CaseCounter(mpi::MpiComm& comm, const CheckOptions& o, KernelUnderTest& kernel,
              CaseRunner& runner, CheckResult& result)
      : comm_(comm), o_(o), kernel_(kernel), runner_(runner), result_(result), start_(Clock::now()),
        last_progress_(start_) {}

  CaseVerdict run(const GpuCase& c) {
    CaseVerdict v;
    try {
      v = runner_.run(c);
    } catch (const k::CudaError& e) {
      throw k::CudaError(e.what() +
                         keep_case_in_flight(comm_.rank(), comm_.size(), o_, c, e.what()));
    }
    if (v.refused) {
      ++result_.refused;
      ++result_.refusals[v.refusal.substr(0, v.refusal.find_first_of("0123456789"))];
    } else ++result_.cases;
    if (v.failed()) kernel_.reset();  // protocol state after a failure is not trusted
    if (comm_.rank() == 0 && Clock::now() - last_progress_ > std::chrono::seconds(15)) {
      last_progress_ = Clock::now();
      result_.seconds = std::chrono::duration<double>(last_progress_ - start_).count();
      result_.times = runner_.times();
      fmt::print("  ... {} cases ({} refused) in {:.0f} s = {:.0f} cases/s; {}\n", result_.cases,
                 result_.refused, result_.seconds, result_.cases / result_.seconds,
                 time_breakdown(result_));
      std::fflush(stdout);
    }
    return v;
  }

  Clock::time_point start() const { return start_; }

 private:
  mpi::MpiComm& comm_;
  const CheckOptions& o_;
  KernelUnderTest& kernel_;
  CaseRunner& runner_;
  CheckResult& result_;
  const Clock::time_point start_;
  Clock::time_point last_progress_;
};

// Ranks other than 0: the cases rank 0 sends, until it sends none.
void follow_rank_0(mpi::MpiComm& comm, CaseCounter& cases) {
  while (auto c = receive_case(comm)) cases.run(*c);
}

// Rank 0 with --replay: the case of the replay file on every rank, up to replay_runs times,
// stopping at the first run that fails (with a ledger, the first whose finding is new).
void replay_case(mpi::MpiComm& comm, const CheckOptions& o, const CaseRunner& runner,
                 CaseCounter& cases, KnownFindingRun& known, CheckResult& result) {
  GpuCase c;
  try {
    c = load_replay(o.replay_file, comm.size(), o.kernel.name, runner);
  } catch (const BadInput& e) {
    send_bad_input(comm, e.what());  // the other ranks exit 2 with the same line
    throw;
  }
  result.replay_runs = o.replay_runs;
  result.minimal = c;
  known.count_trigger(c);
  for (int run = 1; run <= o.replay_runs; ++run) {
    send_case(comm, &c);
    const CaseVerdict v = cases.run(c);
    if (v.refused) break;  // the same case is refused every time
    if (!v.failed()) continue;
    if (const int e = known.match(c, v.findings); e >= 0) {
      ++known.tallies[static_cast<std::size_t>(e)].failed_cases;
      fmt::print("known {}, reproduced on run {}: [{}] {}\n", known.entries[e].id, run,
                 v.findings.front().check, v.findings.front().message);
      continue;
    }
    result.failed = result.new_finding = true;
    result.findings = v.findings;
    result.replay_failed_run = run;
    break;
  }
  send_case(comm, nullptr);
}

// Rank 0: the smallest failing case RapidCheck shrank to, and its replay file where
// --replay-out asks for one.
void keep_minimal_failure(mpi::MpiComm& comm, const CheckOptions& o, const GpuCase& failure,
                          const CaseVerdict& verdict, CheckResult& result) {
  result.findings = verdict.findings;
  result.minimal = failure;
  result.minimal_calls = static_cast<int>(failure.calls.size());
  if (o.replay_out.empty()) return;
  result.replay_command = replay_command(comm.size(), o, o.replay_out);
  write_replay(o.replay_out, failure, verdict, o.kernel.name, o.mutant, result.replay_command);
  result.replay_file = o.replay_out;
  // A new finding of an upstream kernel: its stand-alone reproducer beside the replay.
  if (!o.kernel.export_reproducer || !o.mutant.none()) return;
  const auto dot = o.replay_out.rfind(".json");
  const std::string dir =
      (dot == std::string::npos ? o.replay_out : o.replay_out.substr(0, dot)) + "-repro";
  try {  // the finding stands whatever the export says: its failure is only reported
    result.reproducer = o.kernel.export_reproducer(o.replay_out, dir);
  } catch (const std::exception& e) {
    result.reproducer = std::string("none: ") + e.what();
  }
}

// Rank 0: the first case that matched a ledger entry (shrunk, or as drawn): its replay beside
// --replay-out, named by the entry's id, and one line.
void keep_known_failure(mpi::MpiComm& comm, const CheckOptions& o, const GpuCase& failure,
                        const CaseVerdict& verdict, const KnownFinding& entry, bool shrunk,
                        KnownFindingTally& tally) {
  std::string file;
  if (!o.replay_out.empty()) {
    const std::string& out = o.replay_out;
    const auto dot = out.rfind(".json");
    file = (dot == std::string::npos ? out : out.substr(0, dot)) + "-known-" + entry.id + ".json";
    write_replay(file, failure, verdict, o.kernel.name, o.mutant,
                 replay_command(comm.size(), o, file));
    tally.replay_file = file;
  }
  fmt::print("  known {}, reproduced ({} {} calls, hidden {}): [{}] {}{}\n", entry.id,
             shrunk ? "shrunk to" : "as drawn:", failure.calls.size(), failure.hidden,
             verdict.findings.front().check, verdict.findings.front().message,
             file.empty() ? "" : "; replay " + file);
  std::fflush(stdout);
}

// Rank 0 without --replay: RapidCheck draws the cases and shrinks a failing one; every rank
// runs each case. A failing case that matches a ledger entry counts as known and the search
// goes on; the entry's first one is kept as drawn (a check) or, with shrink_known, shrunk,
// matched again and kept, the search then going on with a seed of its own for the cases not
// yet drawn, until the cases are drawn or a finding is new. A kill table (no shrinking)
// keeps none.
void search_cases(mpi::MpiComm& comm, const CheckOptions& o, const DrawSettings& draw,
                  const KernelTraits& traits, const std::string& kernel_name, CaseCounter& cases,
                  KnownFindingRun& known, CheckResult& result) {
  std::vector<bool> confirmed(known.entries.size(), false);
  int drawn = 0;  // cases drawn (not shrinking) that ran to completion
  for (int segment = 0; drawn < o.cases && segment <= static_cast<int>(known.entries.size());
       ++segment) {
    std::optional<GpuCase> last_failure;
    CaseVerdict last_verdict;
    const std::string params = fmt::format(
        "seed={} max_success={} max_size=100 noshrink={} max_discard_ratio=50",
        o.seed + static_cast<std::uint64_t>(segment), o.cases - drawn, o.shrink ? 0 : 1);
    setenv("RC_PARAMS", params.c_str(), 1);  // RapidCheck reads its configuration here
    // RapidCheck takes any exception thrown in the property for a failing case and shrinks
    // it, calling the other ranks again. An error of the run itself (an MPI timeout, a CUDA
    // error, a refused workspace) is kept instead; later cases are discarded without touching
    // MPI, and it is rethrown once rc::check returns.
    std::exception_ptr run_error;
    const bool passed = rc::check(fmt::format("{} on {} ranks", kernel_name, comm.size()), [&] {
      if (run_error) RC_DISCARD("the run already failed");
      const GpuCase c = *rc::gen::exec([&] { return draw_case(draw, traits); });
      CaseVerdict v;
      try {
        send_case(comm, &c);
        v = cases.run(c);
      } catch (const std::exception&) {
        run_error = std::current_exception();
        RC_DISCARD("the run failed");
      }
      if (v.refused) RC_DISCARD(v.refusal);
      const bool shrinking = last_failure.has_value();
      if (!shrinking) {
        ++drawn;
        known.count_trigger(c);
      }
      if (!v.failed()) return;
      if (const int e = known.match(c, v.findings);
          e >= 0 && (confirmed[e] || !o.shrink || !o.shrink_known)) {
        if (shrinking) return;  // a new finding's shrinking does not drift into a known one
        auto& tally = known.tallies[static_cast<std::size_t>(e)];
        ++tally.failed_cases;
        if (!confirmed[e] && o.shrink)
          keep_known_failure(comm, o, c, v, known.entries[e], false, tally);
        confirmed[e] = true;
        return;  // a known finding: the case counts, the search goes on
      }
      if (!last_failure) {
        result.seconds_to_first_failure =
            std::chrono::duration<double>(Clock::now() - cases.start()).count();
        result.cases_to_first_failure = result.cases;
      }
      last_failure = c;  // shrinking ends on the smallest case that still fails
      last_verdict = v;
      RC_FAIL(fmt::format("[{}] {}", v.findings.front().check, v.findings.front().message));
    });
    if (run_error) std::rethrow_exception(run_error);
    if (passed || !last_failure) break;
    if (const int e = known.match(*last_failure, last_verdict.findings); e >= 0) {
      auto& tally = known.tallies[static_cast<std::size_t>(e)];
      ++tally.failed_cases;
      confirmed[e] = true;
      result.cases_to_first_failure = 0;  // the first failure counts a new finding's
      result.seconds_to_first_failure = 0;
      keep_known_failure(comm, o, *last_failure, last_verdict, known.entries[e], true, tally);
      continue;
    }
    result.failed = result.new_finding = true;
    keep_minimal_failure(comm, o, *last_failure, last_verdict, result);
    break;
  }
  send_case(comm, nullptr);
}

// RapidCheck ran on rank 0 alone: every rank returns its verdict, so that every rank exits
// alike (a kill table on rank 1 would otherwise count each killed mutant as a survivor).
void share_verdict(mpi::MpiComm& comm, const CaseRunner& runner, Clock::time_point start,
                   CheckResult& result) {
  int failed = result.failed ? 1 : 0;
  comm.broadcast(&failed, sizeof failed, 0, "the verdict from rank 0");
  result.failed = failed != 0;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.calls = runner.calls_run();
  result.times = runner.times();
}

}  // namespace

CheckResult run_check(mpi::MpiComm& comm, const CheckOptions& given,
                      const GpuPlacement& placement) {
  given.limits.validate();
  MpiBootstrap bootstrap(comm);
  const std::unique_ptr<KernelUnderTest> made = given.kernel.make(bootstrap, given.mutant);
  KernelUnderTest& kernel = *made;
  require_mutant_instance(kernel, given.mutant);
  const KernelTraits traits = kernel.traits();
  CheckOptions o = given;
  o.limits = limits_reaching_deep_paths(given.limits, traits);
  const DrawSettings draw = draw_settings(o, comm.size(), placement);
  require_hidden_size_within(traits, o.limits.max_hidden, kernel);
  require_listed_hidden_size(traits, o, kernel);
  require_variant(o.variant, kernel.name(), traits);
  CaseRunner runner(comm, kernel, o.limits);
  CheckResult result;
  result.mutant = o.mutant;
  result.twoshot_percent = o.twoshot_percent;
  result.late_blocks = o.focus_late_blocks;
  result.held_rank = o.focus_held_rank;
  result.variant = o.variant;
  result.strict = o.strict;
  KnownFindingRun known(o.known ? entries_for(*o.known, o.kernel.name, o.kernel.release)
                                : std::vector<KnownFinding>{});
  CaseCounter cases(comm, o, kernel, runner, result);
  if (comm.rank() != 0) follow_rank_0(comm, cases);
  else if (!o.replay_file.empty()) replay_case(comm, o, runner, cases, known, result);
  else search_cases(comm, o, draw, traits, kernel.name(), cases, known, result);
  if (comm.rank() == 0) {
    if (result.minimal) result.minimal_notes = kernel.case_notes(*result.minimal);
    result.known = known.tallies;
    if (o.strict && known.absent() > 0) result.failed = true;
  }
  share_verdict(comm, runner, cases.start(), result);
  return result;
}

std::string keep_case_in_flight(int rank, int ranks, const CheckOptions& o, const GpuCase& c,
                                const std::string& error) {
  if (o.replay_out.empty()) return "";
  const auto dot = o.replay_out.rfind(".json");
  const std::string file =
      fmt::format("{}-in-flight-rank{}.json",
                  dot == std::string::npos ? o.replay_out : o.replay_out.substr(0, dot), rank);
  const std::string command = replay_command(ranks, o, file);
  try {
    CaseVerdict v;
    v.findings.push_back({"cuda", fmt::format("rank {}: {}", rank, error)});
    write_replay(file, c, v, o.kernel.name, o.mutant, command);
  } catch (const std::exception& e) {  // the CUDA error stands; the file is a convenience
    return fmt::format("; the case in flight could not be written: {}", e.what());
  }
  return fmt::format("; the case in flight: {} (replay: {})", file, command);
}

void require_variant(int variant, const std::string& kernel, const KernelTraits& traits) {
  const std::size_t variants = std::max<std::size_t>(1, traits.variants.size());
  if (variant >= static_cast<int>(variants))
    throw BadInput(fmt::format("--variant {}: {} has {} launch variant(s), numbered from 0",
                               variant, kernel, variants));
}

RunConfig run_config(const CheckOptions& o, int ranks, const std::string& mutants) {
  RunConfig c;
  c.binary_version = __DATE__ " " __TIME__;
  c.ranks = ranks;
  c.seed = o.seed;
  c.cases = o.cases;
  c.kernel = o.kernel.name;
  c.mutant = mutants;
  c.max_tokens = o.limits.max_tokens;
  c.max_hidden = o.limits.max_hidden;
  c.variant = o.variant;
  c.hidden_sizes = fmt::format("{}", fmt::join(o.hidden_sizes, ","));
  return c;
}

CheckJob run_check_job(mpi::MpiComm& comm, const CheckOptions& o) {
  o.limits.validate();
  require_rank_count(comm, o.kernel);
  agree_on_config(comm, run_config(o, comm.size(), std::string(o.mutant.id())));
  // Before a GPU is assigned: a variant the kernel lacks, a replay of another rank count need
  // no device to be refused.
  if (o.kernel.host_traits)
    require_variant(o.variant, o.kernel.name, o.kernel.host_traits(comm.size()));
  if (!o.replay_file.empty()) {
    const GpuCase c = read_replay_case(o.replay_file);
    if (c.ranks != comm.size())
      throw BadInput(
          fmt::format("--replay: the case needs {} ranks, the job has {}", c.ranks, comm.size()));
  }
  CheckJob job;
  job.placement = place_rank_on_gpu(comm, o.kernel.share_sms);
  if (comm.rank() == 0)
    fmt::print("fusioncheck gpu check: {}\n", describe(job.placement, comm.size()));
  job.result = run_check(comm, o, job.placement);
  return job;
}

}  // namespace fusioncheck::gpu
