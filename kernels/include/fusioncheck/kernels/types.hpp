#pragma once
// Parameters and results of the fused allreduce kernels (host view, no CUDA headers).
//
// Error model of this layer: every host function throws.
//   * InvalidLaunch (a std::invalid_argument): the caller asked for something unsupported
//     (rank count, shape, size beyond the workspace, pattern on this architecture). One
//     line, says what and why. Nothing was enqueued.
//   * CudaError (a std::runtime_error): a CUDA/NCCL call failed; names the call.
//   * KernelHang (a std::runtime_error): a kernel's bounded wait expired; carries the
//     HangRecord. Raised by check_hang(), never by a launch (launches are asynchronous).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fusioncheck/protocol/protocol.hpp"

namespace fusioncheck::kernels {

struct InvalidLaunch : std::invalid_argument {
  explicit InvalidLaunch(const std::string& what) : std::invalid_argument(what) {}
};
struct CudaError : std::runtime_error {
  explicit CudaError(const std::string& what) : std::runtime_error(what) {}
};
// A kernel's own launcher chose a launch the GPU cannot run (too many threads for its
// registers, say): a finding of the case, where InvalidLaunch is a documented refusal.
struct LaunchFailed : std::runtime_error {
  explicit LaunchFailed(const std::string& what) : std::runtime_error(what) {}
};
// The CUDA errors that say a launch's configuration cannot run on this GPU (not sticky).
inline bool is_launch_configuration_error(int cuda_error) {
  return cuda_error == 701 /* cudaErrorLaunchOutOfResources */ ||
         cuda_error == 9 /* cudaErrorInvalidConfiguration */;
}

// The shared vocabulary (protocol/vocabulary.hpp). The kernels take f16 or bf16 inputs;
// f32 only as the Lamport buffer element (FusedParams::fp32_lamport).
using protocol::DType;
using protocol::dtype_bytes;
using protocol::dtype_name;
using protocol::kNvfp4BlockSize;
using protocol::Nvfp4Layout;
using protocol::Pattern;
using protocol::pattern_name;
using protocol::pattern_block_scaled_fp8;
using protocol::pattern_quantises;
enum class Trigger : std::uint8_t { early, at_end };  // PDL launch_dependents position
enum class ClusterMode : std::uint8_t { automatic, force_cluster, force_no_cluster };
// Elements per 16-byte vector of the Lamport buffer; hidden must be a multiple of 8.
inline constexpr int kHiddenMultiple = 8;
inline constexpr std::uint32_t kMaxInjectedDelayNs = 10'000'000;  // 10 ms
// Where a held rank pauses inside a call (the held-rank schedule, GpuCase::hold): before it
// pushes, after its push and before its loads, before it advances the flag.
enum class HoldPoint : std::uint8_t { before_push = 1, before_poll = 2, before_flag = 3 };
constexpr const char* hold_point_name(HoldPoint point) {
  switch (point) {
    case HoldPoint::before_push: return "before_push";
    case HoldPoint::before_poll: return "before_poll";
    case HoldPoint::before_flag: return "before_flag";
  }
  return "?";
}
inline constexpr HoldPoint kHoldPoints[] = {HoldPoint::before_push, HoldPoint::before_poll,
                                            HoldPoint::before_flag};

// FlashInfer's MoE allreduce fusion (trtllm_moe_allreduce_fusion.cuh): the expert outputs a
// call reduces to the rank's allreduce input first (reference/moe.hpp). experts == 0: not a MoE
// call. Device pointers, element type FusedParams::dtype unless noted.
struct MoeParams {
  int experts = 0;                          // reduction: active experts; finalize: top_k
  bool finalize = false;                    // moefinalize (permuted rows) instead of moereduction
  float routed_scaling = 1.0f;              // finalize
  const void* expert_rows = nullptr;        // [experts][tokens][hidden] or [rows][hidden]
  const float* reduction_scales = nullptr;  // reduction: fp32 [experts][tokens]
  const void* token_rows = nullptr;         // reduction: fc2; finalize: shared expert or null
  const std::int32_t* permuted_index = nullptr;  // finalize: [tokens][top_k], -1: not routed here
  const void* topk_scales = nullptr;             // finalize: [tokens][top_k], or null
  bool write_allreduce_out = false;  // reduction: the reduced sum into FusedParams::allreduce_out
};

struct FusedParams {
  int ranks = 2;
  int rank = 0;
  int tokens = 1;
  int hidden = 8;
  DType dtype = DType::bf16;
  bool fp32_lamport = false;      // Lamport buffer elements are fp32 (workspace must agree)
  bool fp32_accumulation = true;  // false: round to T after every rank's addition
  Pattern pattern = Pattern::residual_rmsnorm;
  // false: a quantising pattern that leaves norm_out unwritten (a kernel that has such
  // patterns; ours refuse it). norm_out may still point to a buffer, which must stay as it was.
  bool write_norm_out = true;
  float eps = 1e-6f;
  float weight_bias = 0.0f;
  float fp8_inv_scale = 1.0f;                             // fp8_static
  float nvfp4_global_scale = 1.0f;                        // nvfp4
  Nvfp4Layout nvfp4_layout = Nvfp4Layout::swizzled128x4;  // the scales of nvfp4 and mxfp8
  int group_size = 128;    // group_fp8: elements per scale group of a token
  int tma_aligned_mn = 0;  // group_fp8: padded token count of the scale storage (>= tokens)
  bool use_pdl = true;
  // The call is launched right behind a PDL producer (launch_pdl_producer) that writes its
  // inputs: an adapter enqueues nothing in between (a pause kernel there would be the call's
  // PDL primary instead).
  bool follows_pdl_producer = false;
  Trigger trigger = Trigger::at_end;
  ClusterMode cluster = ClusterMode::automatic;
  std::uint64_t spin_budget_cycles = 1ull << 31;  // per kernel, from its start (~1 s)
  int max_blocks = 0;  // 0: SM count / ranks sharing the device (co-residency)
  int variant = 0;     // the kernel's launch variant (an adapter's own numbering; ours: 0)
  // Seeded injected delays (stress): with delay_seed != 0, about half of the ranks pause
  // each block for up to delay_max_ns before the push, before the poll and before the flag
  // update, differently per (seed, rank, block, point, call). 0 = none (the default).
  std::uint32_t delay_seed = 0;
  std::uint32_t delay_max_ns = 0;
  // The held rank's call (GpuCase::hold): every block pauses hold_ns at hold_point, besides
  // the seeded delays. 0 ns: not held.
  HoldPoint hold_point = HoldPoint::before_push;
  std::uint32_t hold_ns = 0;

  // Device pointers, element type `dtype` unless noted; nullptr where the pattern has none.
  const void* input = nullptr;        // [tokens x hidden]
  const void* residual_in = nullptr;  // [tokens x hidden]
  const void* gamma = nullptr;        // [hidden]
  void* allreduce_out = nullptr;      // [tokens x hidden]; required for Pattern::allreduce
  void* residual_out = nullptr;       // [tokens x hidden]
  void* norm_out = nullptr;           // [tokens x hidden]
  void* quant_out = nullptr;          // uint8: e4m3 [tokens x hidden] or e2m1 [tokens x hidden/2]
  // fp8_dynamic: float [tokens]; nvfp4: uint8 e4m3 scales; mxfp8: uint8 ue8m0 scales;
  // group_fp8: ue8m0 exponents packed 4 per word (reference/quant.hpp)
  void* scale_out = nullptr;
  MoeParams moe;  // a MoE call's expert inputs (input unused then)
};

// Written by a kernel whose bounded wait expired, into host-mapped memory; first writer wins.
enum class HangSite : std::uint32_t {
  none = 0,
  lamport_poll = 1,     // awaiting a peer's push into my data buffer
  arrival_counter = 2,  // block 0 awaiting the other blocks' arrival
  twoshot_barrier = 3,  // awaiting a peer's barrier flag
  // A kernel whose polls have no bound of their own (another project's) was still running
  // when the host's bound on the call expired; what it awaited is read from its buffers:
  host_bound_lamport = 4,  // its data buffer still held the sentinel in the slot of a peer
  host_bound_twoshot = 5,  // a barrier flag of a peer still held the previous value
  cluster_exchange = 6,    // awaiting the partial sums of the other blocks of the row's cluster
  // A kernel of FlashInfer's PCIe allreduce was still running at the host's bound: its staging
  // half still held +0 ("not yet written") in the slot of a peer.
  host_bound_pcie = 7,
  // A kernel of vLLM's custom allreduce was still running at the host's bound: a barrier lane of
  // a block (block, awaited_slot: its peer) awaited a count (counter) its counter held not
  // (flag: the value it held).
  host_bound_counter = 8,
};
struct HangRecord {
  std::uint32_t valid;  // 0 none, 1 written
  std::uint32_t rank;
  std::uint32_t block;
  std::uint32_t token;
  std::uint32_t awaited_slot;  // the peer rank whose data or flag was awaited
  std::uint32_t flag;          // Lamport flag (or two-shot flag) the block read
  std::uint32_t counter;       // arrival counter / awaited flag value at expiry
  std::uint32_t call_index;    // the host's count of calls on this workspace
  HangSite what;
  std::uint32_t detail;  // a protocol's own count for its diagnosis (describe_hang)
  std::uint64_t cycles_waited;
};
static_assert(sizeof(HangRecord) == 48);

std::string describe(const HangRecord& record);

struct KernelHang : std::runtime_error {
  KernelHang(const HangRecord& r) : std::runtime_error(describe(r)), record(r) {}
  HangRecord record;
};

// Blocks of a one-shot call the wait profile records (later blocks are not recorded).
inline constexpr int kMaxWaitProfileBlocks = 1024;

// The points of a one-shot call at which the wait profile reads thread 0's clock: the end
// of step 1 (grid-dependency wait), of step 2's reads and arrival, of step 2's barrier, of
// step 3 (pushes issued), step 4 (clear issued), steps 5-6 (polls and epilogue of the
// block's rows), step 7 (after the block's barrier; block 0 also updates the state) and
// step 8 (fence and barrier before an at-end trigger). docs/design.md numbers the steps.
inline constexpr int kWaitProfileSteps = 8;
inline constexpr const char* kWaitProfileStepNames[kWaitProfileSteps] = {
    "grid-dependency wait", "state read", "barrier", "push", "clear",
    "poll + epilogue",      "update",     "fence"};

// Per block of a one-shot call, from the wait-profile instance.
struct WaitProfileEntry {
  std::uint64_t poll_cycles;                               // spent spinning on pushes
  std::uint64_t work_cycles;                               // everything else
  std::uint64_t poll_cycles_by_peer[protocol::kMaxRanks];  // where it spun
  std::uint64_t step_end_cycles[kWaitProfileSteps];        // thread 0, from the kernel's start
};

}  // namespace fusioncheck::kernels
