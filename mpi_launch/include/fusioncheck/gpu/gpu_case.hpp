#pragma once
// A GPU test case as a value: every rank runs the same case, which travels as JSON from
// rank 0 (RapidCheck generates and shrinks there) and is written to a replay file on a
// failure. A case is a short sequence of calls on one workspace; each call's inputs are a
// pure function of (case seed, call index, rank), so every rank's input for every call is
// distinguishable and every rank can compute the reference of every call.
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusioncheck/gpu/mutant_id.hpp"
#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::gpu {

// How the calls of a case are issued.
enum class IssueMode : std::uint8_t {
  checked_each_call,  // sync + invariants after every call
  back_to_back,       // all calls enqueued without a host sync, checked at the end
  graph_replay,       // captured once in a CUDA graph, replayed with fresh inputs
  // Even calls on one stream, odd calls on a second, nothing ordering the two (two users of
  // one communicator, as sglang#31117 reports for SGLang's push kernel), checked at the end.
  two_streams,
};
// Their names in replay files and ledgers, by IssueMode value.
inline constexpr const char* kIssueModeNames[] = {"checked-each-call", "back-to-back",
                                                  "graph-replay", "two-streams"};

struct CallSpec {
  bool twoshot = false;
  // The unfused baseline instead of a fused kernel: the one-shot allreduce-only call, then
  // the separate residual + RMSNorm (+ quantisation) kernel; not pattern allreduce, not twoshot.
  bool unfused = false;
  kernels::Pattern pattern = kernels::Pattern::residual_rmsnorm;
  int tokens = 1;
  bool exact_values = true;  // false: random values with +-0, subnormals and outliers
  bool use_pdl = true;
  kernels::Trigger trigger = kernels::Trigger::at_end;
  kernels::ClusterMode cluster = kernels::ClusterMode::automatic;
  // A PDL consumer (a next layer) launched right behind the call reads the call's output
  // before its own grid-dependency wait, trusting an at-end trigger; its copy must equal
  // the output. Only with use_pdl and an at-end trigger (an early trigger promises nothing).
  bool pdl_consumer = false;
  // A PDL producer (the GEMM or previous layer that writes the call's inputs) launched right
  // before the call: it triggers its dependents at once, waits producer_delay_ns, then
  // writes allreduce_in, residual_in and gamma over poison (NaN). The call is launched with
  // PDL behind it; a kernel that reads an input before its grid-dependency wait reads poison.
  // Only with use_pdl, not for the unfused baseline.
  bool pdl_producer = false;
  std::uint32_t producer_delay_ns = 0;
  // Which of the kernel's launch variants runs the call (KernelTraits::variants; 0 for a
  // kernel with one).
  int variant = 0;
  // The kernel writes norm_out. false: a quantising pattern without it (FlashInfer's 2, 3 and
  // 10 beside 4, 5 and 11), whose norm_out must stay as the canary left it. Not with
  // pdl_consumer (the consumer copies norm_out) or the unfused baseline.
  bool norm_out = true;
  // Block-scaled FP8 (KernelTraits::block_scaled_fp8): the layout of mxfp8's scales; the
  // group of group_fp8 (a divisor of hidden, >= 16) and the padded token count of its packed
  // scales (0: tokens rounded up to 4, DeepGEMM's TMA alignment; else in [tokens, tokens + 128]).
  kernels::Nvfp4Layout scale_layout = kernels::Nvfp4Layout::swizzled128x4;
  int group_size = 128;
  int tma_aligned_mn = 0;
  // A MoE call (KernelTraits::moe; its launch variant says which of the two kernels,
  // KernelVariant::moe_finalize): the active experts (reduction) or top_k (finalize) whose
  // outputs each rank reduces to its allreduce input first (reference/moe.hpp); 0 for other
  // kernels. The finalize kernel's options: per (token, k) scales, a shared expert output, the
  // routed scaling. The reduction kernel's: its sum written to allreduce_out as well.
  int moe_experts = 0;
  bool moe_expert_scales = true;
  bool moe_shared_expert = false;
  float moe_routed_scaling = 1.0f;
  bool moe_allreduce_out = false;
};

// The held-rank schedule: one rank paused between two protocol steps of one call (every block
// of it, at `point`, for `ns`), while its peers run ahead; with graph replays, in every replay.
// A rank pauses before its push through a pause kernel ahead of the call on its stream where
// the kernel has no hold of its own there (KernelTraits::holds_in_kernel).
struct RankHold {
  int rank = -1;  // -1: no rank is held
  int call = 0;   // index into GpuCase::calls
  kernels::HoldPoint point = kernels::HoldPoint::before_push;
  std::uint32_t ns = 0;
  bool active() const { return rank >= 0; }
};
// The holds a case draws, in ns: long beside a call (tens of microseconds), short beside the
// spin budget (about 1 s).
inline constexpr std::uint32_t kHoldNs[] = {20'000, 200'000, 2'000'000};

struct GpuCase {
  std::uint64_t seed = 1;
  int ranks = 2;
  int hidden = 1024;
  kernels::DType dtype = kernels::DType::bf16;
  bool fp32_lamport = false;
  bool fp32_accumulation = true;
  float weight_bias = 0.0f;
  IssueMode mode = IssueMode::checked_each_call;
  std::uint32_t delay_seed = 0;  // seeded injected delays in the kernels; 0 = none
  std::uint32_t delay_max_ns = 0;
  // Rank inputs may hold -0 (exact and random values alike); false for a kernel whose
  // precondition excludes it (KernelTraits::neg_zero_inputs).
  bool neg_zero_inputs = true;
  RankHold hold;
  std::vector<CallSpec> calls;
};

nlohmann::json to_json(const GpuCase& c);
// Strict: every field of its JSON type, integers within their C++ type's range, no unknown
// field; a field that older files lack takes its documented default. Throws BadInput naming
// the field.
GpuCase case_from_json(const nlohmann::json& j);
// A replay file is one case (written by a failing run): at most this many bytes.
inline constexpr std::uintmax_t kMaxReplayFileBytes = 1 << 20;
// The JSON document of a replay file, size-checked before it is read, with nothing after it;
// throws BadInput naming the path.
nlohmann::json read_replay_json(const std::string& path);
// The case of a replay file (read_replay_json, then case_from_json): a check that needs no
// MPI and no GPU, for a driver to run before it starts any work.
GpuCase read_replay_case(const std::string& path);
std::string describe(const GpuCase& c);  // one line
std::string describe(const CallSpec& call);
std::string describe(const RankHold& hold);  // "rank 1 before its push in call 2, 20000 ns ..."
// Labelled lines a person can read: the case's fields, then a table of its calls; every
// line starts with `indent`.
std::string describe_block(const GpuCase& c, const std::string& indent = "  ");
// How RapidCheck prints a generated case (found by argument-dependent lookup).
void showValue(const GpuCase& c, std::ostream& os);
// Why a case cannot run as written (a replay file edited by hand, say); "" if it can.
std::string case_problem(const GpuCase& c);
// How much longer than its kernels alone a case's calls may run because of the pauses it
// draws, for the host's hang bound (WaitBudget::case_pauses): a hold and an in-kernel delay
// counted kPauseVisitsPerWait times (a block meets them at every poll or sync site it passes,
// once per token it loops over: up to about 64 times in one FlashInfer MoE call at the
// largest default sizes), every pause before a call and every PDL producer's delay once.
inline constexpr int kPauseVisitsPerWait = 128;
std::chrono::nanoseconds seeded_pause_allowance(const GpuCase& c);
// Why a case is outside what a kernel supports (KernelTraits), naming the first reason;
// "" if it is inside. Generated and smoke cases are inside; a replay file may be outside on
// purpose (e.g. -0 inputs for a kernel that hangs on them).
struct KernelTraits;
// A variant whose calls must hold a multiple of elements (KernelVariant::elems_multiple): the
// call's tokens rounded down to the nearest count that does (up, where that is none), within
// max_tokens.
void fit_tokens_to_variant(CallSpec& call, int hidden, int max_tokens, const KernelTraits& traits);
std::string outside_traits(const GpuCase& c, const KernelTraits& traits);
// Whether the largest call of this hidden size (max_tokens rows, fitted to the variant) reaches
// the variant's deeper path (KernelVariant::deep_from_elems).
bool reaches_deep_path(int variant, int hidden, int max_tokens, const KernelTraits& traits);
inline constexpr int kMaxCallsPerCase = 16;
inline constexpr int kMaxVariant = 255;  // CallSpec::variant
// The quantisation scales of every case (powers of two, or exact in e4m3: a kernel that
// takes the reciprocal gets the same value).
inline constexpr float kFp8InvScale = 2.0f;                        // code = e4m3(norm * 2)
inline constexpr float kNvfp4GlobalScale = 448.0f * 6.0f / 64.0f;  // NVFP4 global scale

// Hidden sizes of released models, drawn by default beside random multiples of 16 (Llama 3.2
// 1B and 3B, Qwen3 4B, gpt-oss, Qwen2.5 7B, Llama 3 8B, Qwen3 32B, DeepSeek-V3, Llama 3 70B,
// Mistral Large 2, Llama 3.1 405B): several are not multiples of 256 (2880, 3584).
inline constexpr int kModelHiddenSizes[] = {2048, 2560, 2880, 3072,  3584, 4096,
                                            5120, 7168, 8192, 12288, 16384};

// The shapes a run may draw and its buffers hold: the one definition of the size limits,
// checked once (validate), then used by case generation, buffer sizing and replay files.
struct CaseLimits {
  static constexpr int kMaxTokens = 65536;                          // largest --max-tokens
  static constexpr int kMaxHidden = 65536;                          // largest --max-hidden
  static constexpr std::int64_t kMaxElems = std::int64_t{1} << 26;  // largest --max-elems
  int max_tokens = 2048;
  int max_hidden = 8192;
  std::int64_t max_elems = 1 << 20;  // tokens x hidden of one call (reference and read-back time)
  bool max_elems_chosen = false;     // given on the command line: no kernel raises it
  int max_calls = 4;

  void validate() const;  // throws BadInput naming the option
  // Elements one call's buffers hold: tokens x hidden, at most max_elems.
  std::int64_t elems_per_call() const;
  // The largest token count of one call with this hidden size (at least 1).
  int max_tokens_for(int hidden) const;
  // Why the case does not fit these limits (calls, shapes); "" if it fits.
  std::string does_not_fit(const GpuCase& c) const;
  // Bytes a call's scale_out holds: enough for the scales of every pattern of any call
  // within these limits (scale_out_bytes), and a tail that must stay as the canary left it.
  std::size_t scale_out_capacity() const;
  // Elements a MoE call's expert rows hold: reference::moe_rows_capacity at the largest call.
  std::size_t moe_rows_capacity() const;
};
// The limits with max_elems raised, unless chosen, to the deepest path of the kernel's variants
// that max_tokens x max_hidden allows (at most kMaxElems): the copy-engine ring cuts a chunk into
// pieces from shards of 2^19 elements, calls past the default limit at 4 and 8 ranks.
CaseLimits limits_reaching_deep_paths(CaseLimits limits, const KernelTraits& traits);
inline constexpr std::size_t kScaleCanaryTail = 256;
// The bytes of a call's scale_out that its pattern writes (0 without one): per token floats
// (fp8_dynamic), the NVFP4 or MXFP8 storage in its layout, the packed group FP8 storage.
std::size_t scale_out_bytes(const CallSpec& call, int hidden);
// The padded token count of a group_fp8 call's scale storage, as the kernel is given it.
int group_fp8_tma_aligned_mn(const CallSpec& call);

// focus_late_blocks cases: the delay spread of every case, and the fewest tokens per call.
constexpr std::uint32_t kLateBlocksDelayNs = 200'000;
constexpr int kLateBlocksMinTokens = 32;

// What `gpu check` draws cases from, beside the kernel's traits.
struct DrawSettings {
  int ranks = 2;
  CaseLimits limits;
  MutantId mutant;
  bool nvfp4_supported = false;  // sm_100 or newer
  bool delays = true;
  bool pdl_producer = true;  // CheckOptions::pdl_producer
  int twoshot_percent = 25;
  int variant = -1;               // CheckOptions::variant
  std::vector<int> hidden_sizes;  // CheckOptions::hidden_sizes
  bool focus_twoshot = false;
  bool focus_late_blocks = false;  // CheckOptions::focus_late_blocks
  bool focus_held_rank = false;    // CheckOptions::focus_held_rank
  int two_streams_percent = 0;     // CheckOptions::two_streams_percent
};
// One case, inside the traits (gpu_check.cpp). RapidCheck generators: call it inside a
// property (or rc::gen::exec), so that the case shrinks as a whole. `traits.hidden_sizes`
// must hold a size within limits.max_hidden when it is not empty (checked by run_check).
GpuCase draw_case(const DrawSettings& settings, const KernelTraits& traits);

// The run configuration every rank must agree on before the first case, as named fields:
// a mismatch names the fields that differ.
struct RunConfig {
  std::string binary_version;
  std::string kernel;
  int ranks = 0;
  std::uint64_t seed = 0;
  int cases = 0;
  std::string mutant;
  int max_tokens = 0;
  int max_hidden = 0;
  int variant = -1;
  std::string hidden_sizes;  // CheckOptions::hidden_sizes, comma-separated
};
std::vector<std::pair<std::string, std::string>> named_fields(const RunConfig& config);

}  // namespace fusioncheck::gpu
