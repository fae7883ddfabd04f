// FlashInfer's allreduce fusion behind KernelUnderTest (flashinfer.hpp). The workspace is laid
// out as FlashInfer's Python lays it out (flashinfer/comm/trtllm_ar.py, 0.7.4; docs/flashinfer.md):
// a device pointer table of 3N+1 entries, [N two-shot data buffers][N barrier-flag buffers
// int[256][N]][N Lamport buffers of 3 x comm_size bytes][this rank's int ctrl[5]], with
// ctrl = {block counter, two-shot flag, Lamport flag, comm_size in bytes, clear size in
// elements}. We allocate it ourselves, with guard words around every buffer, and map the
// peers' buffers through CUDA IPC.
#include "flashinfer_kernels.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/validate.hpp"

namespace fusioncheck::adapters::fi {
namespace {

namespace k = kernels;

constexpr int kBarrierRows = 256;  // FlashInfer's details::kBarrierFlagCount
constexpr int kCtrlWords = 5;      // counter, two-shot flag, Lamport flag, comm_size, clear size
constexpr std::uint64_t kGuardBytes = 256;
constexpr std::uint64_t kMaxCommSize = 1ull << 30;  // clear_offset * comm_size is an int product

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

// FlashInfer's AllReduceFusionPattern for ours: the quantising ones with norm_out ("Out") or
// without it.
int fi_fusion_pattern(k::Pattern p, bool norm_out) {
  switch (p) {
    case k::Pattern::allreduce: return 0;                     // kAllReduce
    case k::Pattern::residual_rmsnorm: return 1;              // kARResidualRMSNorm
    case k::Pattern::fp8_static: return norm_out ? 4 : 2;     // kARResidualRMSNorm(Out)FP8Quant
    case k::Pattern::fp8_dynamic: return norm_out ? 11 : 10;  // ...(Out)DynamicFP8Quant
    case k::Pattern::nvfp4: return norm_out ? 5 : 3;          // ...(Out)FP4Quant
    case k::Pattern::group_fp8: return norm_out ? 9 : 8;      // ...(Out)PerTokenGroupFP8PackedQuant
    case k::Pattern::mxfp8: return norm_out ? 14 : 13;        // ...(Out)MXFP8Quant
  }
  return -1;
}

// Byte offsets of one rank's shared allocation: guard, two-shot data, guard, barrier flags,
// guard, the three Lamport buffers, guard.
struct SharedLayout {
  std::uint64_t twoshot = 0, barrier = 0, lamport = 0, total = 0;
  std::uint64_t guards[4] = {};
  SharedLayout(int ranks, std::uint64_t comm_size, std::uint64_t twoshot_bytes) {
    guards[0] = 0;
    twoshot = kGuardBytes;
    guards[1] = twoshot + align_up(twoshot_bytes, 256);
    barrier = guards[1] + kGuardBytes;
    guards[2] = barrier + align_up(static_cast<std::uint64_t>(kBarrierRows) * ranks * 4, 256);
    lamport = guards[2] + kGuardBytes;
    guards[3] = lamport + 3 * comm_size;
    total = guards[3] + kGuardBytes;
  }
};

FiWorkspace::FiWorkspace(k::Bootstrap& bootstrap, std::uint64_t comm_size,
                         std::uint64_t twoshot_bytes)
    : ranks_(bootstrap.size()), rank_(bootstrap.rank()), comm_size_(comm_size) {
  const SharedLayout layout(ranks_, comm_size, twoshot_bytes);
  lamport_offset_ = layout.lamport;
  barrier_offset_ = layout.barrier;
  for (int g = 0; g < 4; ++g) guard_offsets_[g] = layout.guards[g];
  FC_CUDA_CHECK(cudaMalloc(&shared_, layout.total));
  // Private: [guard u64][int ctrl[5], pad][guard u64], then the pointer table.
  FC_CUDA_CHECK(cudaMalloc(&private_, kPrivateBytes + (3 * ranks_ + 1) * sizeof(void*)));
  restore_initial_state();

  peers_ = std::make_unique<k::PeerMappings>(bootstrap, shared_);
  std::vector<void*> table;
  for (int r = 0; r < ranks_; ++r) table.push_back(peers_->of(r) + layout.twoshot);
  for (int r = 0; r < ranks_; ++r) table.push_back(peers_->of(r) + layout.barrier);
  for (int r = 0; r < ranks_; ++r) table.push_back(peers_->of(r) + layout.lamport);
  table.push_back(static_cast<std::uint8_t*>(private_) + 8);  // ctrl
  table_ = reinterpret_cast<void**>(static_cast<std::uint8_t*>(private_) + kPrivateBytes);
  FC_CUDA_CHECK(
      cudaMemcpy(table_, table.data(), table.size() * sizeof(void*), cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  bootstrap.barrier("FlashInfer workspace initialised");  // invariant 12: nobody pushes before this
}

void FiWorkspace::write_private_words() {
  std::uint8_t priv[kPrivateBytes] = {};
  const std::int32_t ctrl[kCtrlWords] = {0, 0, 0, static_cast<std::int32_t>(comm_size_), 0};
  std::memcpy(priv, &protocol::kGuardWord, 8);
  std::memcpy(priv + 8, ctrl, sizeof(ctrl));
  std::memcpy(priv + kPrivateBytes - 8, &protocol::kGuardWord, 8);
  FC_CUDA_CHECK(cudaMemcpy(private_, priv, kPrivateBytes, cudaMemcpyHostToDevice));
}

// Guards, zeroed two-shot data and barrier flags, every Lamport element -0 (16-bit), the
// control words: by small copies and a device fill, no host image of the allocation (hundreds
// of MB for the largest size classes). The peers' mappings are not protocol state.
void FiWorkspace::restore_initial_state() {
  FC_CUDA_CHECK(cudaDeviceSynchronize());  // nothing of ours still writes the buffers
  auto* base = static_cast<std::uint8_t*>(shared_);
  FC_CUDA_CHECK(cudaMemset(base, 0, lamport_offset_));  // guards 0-2, two-shot data, flags
  fill_lamport_sentinel();
  const std::vector<std::uint64_t> guard(kGuardBytes / 8, protocol::kGuardWord);
  for (std::uint64_t g : guard_offsets_)
    FC_CUDA_CHECK(cudaMemcpy(base + g, guard.data(), kGuardBytes, cudaMemcpyHostToDevice));
  write_private_words();
  FC_CUDA_CHECK(cudaDeviceSynchronize());
}

FiWorkspace::~FiWorkspace() {
  peers_.reset();  // close the peers' mappings before freeing (teardown must not throw)
  if (k::device_stuck()) return;  // freeing would wait for the stuck kernel: left to the exit
  if (shared_ != nullptr) (void)cudaFree(shared_);
  if (private_ != nullptr) (void)cudaFree(private_);
}

std::uint8_t* FiWorkspace::lamport() const {
  return static_cast<std::uint8_t*>(shared_) + lamport_offset_;
}
std::uint8_t* FiWorkspace::peer_lamport(int r) const { return peers_->of(r) + lamport_offset_; }

void FiWorkspace::fill_lamport_sentinel() {
  FC_CUDA_CHECK(cudaDeviceSynchronize());  // nothing of ours still writes them
  gpu::fill16_on_device(lamport(), 3 * comm_size_, protocol::kNegZero16, nullptr);
  FC_CUDA_CHECK(cudaDeviceSynchronize());
}
std::uint8_t* FiWorkspace::barrier_flags() const {
  return static_cast<std::uint8_t*>(shared_) + barrier_offset_;
}

k::LamportBuffersOnDevice FiWorkspace::lamport_buffers() const {
  k::LamportBuffersOnDevice b;
  b.own = lamport();
  b.comm_size = comm_size_;
  b.elem_bytes = 2;  // 16-bit Lamport buffers only (fusion_traits: no fp32 Lamport)
  for (int r = 0; r < ranks_; ++r)
    b.ranks[static_cast<std::size_t>(r)] = r == rank_ ? lamport() : peer_lamport(r);
  return b;
}

k::ControlState FiWorkspace::read_state(k::LamportCopy copy) const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  k::ControlState s;
  std::uint8_t priv[kPrivateBytes];
  FC_CUDA_CHECK(cudaMemcpy(priv, private_, kPrivateBytes, cudaMemcpyDeviceToHost));
  std::int32_t ctrl[kCtrlWords];
  std::memcpy(ctrl, priv + 8, sizeof(ctrl));
  std::memcpy(&s.control.guard_front, priv, 8);
  std::memcpy(&s.control.guard_back, priv + kPrivateBytes - 8, 8);
  s.control.arrival_counter = static_cast<std::uint32_t>(ctrl[0]);
  s.control.two_shot_counter = static_cast<std::uint32_t>(ctrl[0]);  // one counter for both kernels
  s.control.two_shot_flag = static_cast<std::uint32_t>(ctrl[1]);
  s.control.flag = static_cast<std::uint32_t>(ctrl[2]);
  s.control.comm_size = static_cast<std::uint64_t>(static_cast<std::uint32_t>(ctrl[3]));
  s.control.clear_size = static_cast<std::uint64_t>(static_cast<std::uint32_t>(ctrl[4]));
  s.barrier_flags.resize(static_cast<std::size_t>(kBarrierRows) * ranks_);
  FC_CUDA_CHECK(cudaMemcpy(s.barrier_flags.data(), barrier_flags(), s.barrier_flags.size() * 4,
                           cudaMemcpyDeviceToHost));
  if (copy == k::LamportCopy::with_buffers) {
    s.lamport.resize(3 * comm_size_);
    FC_CUDA_CHECK(
        cudaMemcpy(s.lamport.data(), lamport(), s.lamport.size(), cudaMemcpyDeviceToHost));
  }
  s.buffer_guards_intact = true;
  std::vector<std::uint8_t> guard(kGuardBytes);
  for (std::uint64_t g : guard_offsets_) {
    FC_CUDA_CHECK(cudaMemcpy(guard.data(), static_cast<std::uint8_t*>(shared_) + g, kGuardBytes,
                             cudaMemcpyDeviceToHost));
    for (std::uint64_t i = 0; i < kGuardBytes; i += 8)
      s.buffer_guards_intact &= std::memcmp(&guard[i], &protocol::kGuardWord, 8) == 0;
  }
  s.elem_bytes = 2;
  s.comm_size = comm_size_;
  s.ranks = ranks_;
  s.twoshot_blocks = kBarrierRows;
  s.twoshot_flag_steps = 2;  // two barrier rounds per two-shot call
  return s;
}

gpu::KernelTraits fusion_traits(const Instance& bf16, bool fast_math_variant) {
  gpu::KernelTraits t;
  t.fp32_lamport = false;                   // only with fp32 inputs
  t.unfused = false;                        // FlashInfer has no separate baseline on this workspace
  t.forced_cluster = false;                 // it picks the cluster size itself
  t.twoshot_more_tokens_than_ranks = true;  // as its Python API asserts
  t.outputs_visible_at_trigger = false;     // no fence before its trigger (docs/flashinfer.md)
  t.quant_without_norm_out = bf16.no_norm_out;  // patterns 2, 3 and 10
  t.block_scaled_fp8 = bf16.block_scaled_fp8;   // patterns 8, 9, 13 and 14
  // What the tree has, from its compile probes (an older release lacks these).
  t.weight_bias = bf16.weight_bias;
  if (!bf16.dynamic_fp8)
    t.patterns = {k::Pattern::allreduce, k::Pattern::residual_rmsnorm, k::Pattern::fp8_static,
                  k::Pattern::nvfp4};
  if (fast_math_variant) t.variants = FlashInferKernels::fast_math_variants();
  return t;
}

FlashInferKernels::FlashInferKernels(k::Bootstrap& bootstrap, const Instance& instance_bf16,
                                     const Instance* instance_f16, const gpu::MutantId& patch,
                                     const Instance* fast_bf16, const Instance* fast_f16)
    : bootstrap_(bootstrap), bf16_(instance_bf16), f16_(instance_f16), patch_(patch) {
  if (fast_bf16 != nullptr && (fast_f16 != nullptr) == (instance_f16 != nullptr)) {
    fast_bf16_ = fast_bf16;
    fast_f16_ = fast_f16;
  }
}

std::vector<gpu::KernelVariant> FlashInferKernels::fast_math_variants() {
  gpu::KernelVariant ieee;
  ieee.name = "nvcc defaults (IEEE division, no flush to zero)";
  ieee.neg_zero_sentinel = true;
  gpu::KernelVariant fast = ieee;
  fast.name = std::string("FlashInfer's JIT flags (") + kJitFlags + ")";
  fast.fast_math = true;
  return {ieee, fast};
}

FlashInferKernels::~FlashInferKernels() {
  if (k::device_stuck()) return;  // freeing would wait for the stuck kernel: left to the exit
  for (auto& [value, ptr] : scales_) (void)cudaFree(ptr);
}

std::string FlashInferKernels::name() const {
  const std::string source =
      bf16_.release[0] != '\0' ? "flashinfer-python " + std::string(bf16_.release) : kSource;
  return "FlashInfer allreduce fusion (" + source + ")" +
         (patch_.none() ? std::string() : ", patched: " + patch_.id());
}

std::vector<gpu::MutantId> FlashInferKernels::mutants() const {
  std::vector<gpu::MutantId> out;
  if (bf16_.release[0] != '\0') return out;  // other releases are not patched
  for (const Instance& i : kInstances)
    if (!gpu::MutantId(i.mutant).none() &&
        std::find(out.begin(), out.end(), gpu::MutantId(i.mutant)) == out.end())
      out.emplace_back(i.mutant);
  return out;
}

std::vector<std::pair<gpu::MutantId, std::string>> FlashInferKernels::mutants_not_built() const {
  if (bf16_.release[0] != '\0') return {};  // other releases are not patched
  return listed_not_built(kPatchesNotBuilt);
}

std::uint64_t lamport_comm_size(int ranks, std::uint64_t max_elems_per_rank, bool fp32_lamport) {
  if (fp32_lamport)
    throw k::InvalidLaunch(
        "FlashInfer uses fp32 Lamport elements only with fp32 inputs (use_fp32_lamport == "
        "(dtype == float32))");
  // As FlashInfer sizes it: one Lamport buffer holds every rank's slot of the largest call.
  const std::uint64_t comm_size =
      std::max<std::uint64_t>(64u << 10, std::bit_ceil(ranks * max_elems_per_rank * 2));
  if (comm_size >= kMaxCommSize)
    throw k::InvalidLaunch(
        "FlashInfer's Lamport buffer must stay below 1 GiB (its clear_offset * comm_size is an int "
        "product); this run needs " +
        std::to_string(comm_size) + " bytes");
  return comm_size;
}

void FlashInferKernels::prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) {
  const std::uint64_t comm_size =
      lamport_comm_size(bootstrap_.size(), max_elems_per_rank, fp32_lamport);
  // Workspaces are kept by size class; the two-shot buffer (this rank's input, then the
  // reduced rows: 2 x size elements) gets the class's size too, which holds N >= 2 of them.
  auto& slot = workspaces_[comm_size];
  if (!slot) slot = std::make_unique<FiWorkspace>(bootstrap_, comm_size, comm_size);
  current_ = slot.get();
  // The scales the suite uses, on the device before any stream capture (gpu_case.hpp).
  (void)scale_on_device(1.0f / gpu::kFp8InvScale, nullptr);
  (void)scale_on_device(gpu::kNvfp4GlobalScale, nullptr);
}

float* FlashInferKernels::scale_on_device(float value, cudaStream_t stream) {
  if (auto it = scales_.find(value); it != scales_.end()) return it->second;
  if (HostBoundedWait::capturing(stream))
    throw k::InvalidLaunch(
        "a new quantisation scale inside a CUDA graph capture (FlashInfer reads it from device "
        "memory; the adapter places it there outside a capture)");
  float* ptr = nullptr;
  FC_CUDA_CHECK(cudaMalloc(&ptr, sizeof(float)));
  FC_CUDA_CHECK(cudaMemcpy(ptr, &value, sizeof(float), cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(cudaDeviceSynchronize());  // the copy's DMA may land after cudaMemcpy returns
  scales_[value] = ptr;
  return ptr;
}

void FlashInferKernels::launch(const k::FusedParams& p, bool twoshot, cudaStream_t stream) {
  if (current_ == nullptr) throw k::InvalidLaunch("FlashInfer adapter: launch before prepare");
  if (p.dtype != k::DType::bf16 && p.dtype != k::DType::f16)
    throw k::InvalidLaunch("FlashInfer adapter: inputs are bf16 or f16");
  const bool fast = p.variant == 1 && fast_bf16_ != nullptr;
  if (p.variant != 0 && !fast)
    throw k::InvalidLaunch("FlashInfer adapter: launch variant " + std::to_string(p.variant) +
                           " is not built here (" +
                           (fast_bf16_ != nullptr ? std::string("0: nvcc defaults, 1: fast math")
                                                  : "only 0: " + std::string(kFastMathRefused)) +
                           ")");
  const Instance* instance =
      p.dtype == k::DType::bf16 ? (fast ? fast_bf16_ : &bf16_) : (fast ? fast_f16_ : f16_);
  if (instance == nullptr)
    throw k::InvalidLaunch("the patched FlashInfer copies are built for bf16 only");
  if (p.ranks != current_->ranks() || p.rank != current_->rank())
    throw k::InvalidLaunch("FlashInfer adapter: the call's ranks differ from the workspace's");
  if (!instance->has_ranks(p.ranks))
    throw k::InvalidLaunch("this FlashInfer instance is built for other rank counts than " +
                           std::to_string(p.ranks));
  if (p.cluster != k::ClusterMode::automatic)
    throw k::InvalidLaunch("FlashInfer chooses its cluster size itself (no forced cluster path)");
  if (cc_major_ == 0) {  // once: no device query on the timed launch path (gpu bench)
    int device = 0;
    FC_CUDA_CHECK(cudaGetDevice(&device));
    FC_CUDA_CHECK(cudaDeviceGetAttribute(&cc_major_, cudaDevAttrComputeCapabilityMajor, device));
  }
  if (p.pattern == k::Pattern::nvfp4 && cc_major_ < 10)
    throw k::InvalidLaunch(
        "pattern nvfp4 needs sm_100 or newer (FlashInfer's conversion writes zeros below it)");
  const std::uint64_t elems = static_cast<std::uint64_t>(p.tokens) * p.hidden;
  if (!protocol::fits_lamport_buffer(p.ranks, elems, 2, current_->comm_size()))
    throw k::InvalidLaunch("tokens x hidden beyond the FlashInfer workspace (" +
                           std::to_string(current_->comm_size()) + " bytes per Lamport buffer)");
  if (twoshot && 2 * elems * 2 > current_->comm_size())
    throw k::InvalidLaunch("tokens x hidden beyond the FlashInfer two-shot buffer");
  if (twoshot && p.tokens <= p.ranks)
    throw k::InvalidLaunch(
        "FlashInfer's two-shot needs more tokens than ranks (its Python API asserts "
        "token_num > world_size)");

  FiCall c;
  c.nranks = p.ranks;
  c.rank = p.rank;
  c.tokens = p.tokens;
  c.hidden = p.hidden;
  c.bf16 = p.dtype == k::DType::bf16;
  if (!p.write_norm_out && !k::pattern_quantises(p.pattern))
    throw k::InvalidLaunch("FlashInfer's patterns without norm_out are quantising ones only, not " +
                           std::string(k::pattern_name(p.pattern)));
  c.pattern = fi_fusion_pattern(p.pattern, p.write_norm_out);
  c.sf_layout = p.nvfp4_layout == k::Nvfp4Layout::linear ? 2 : 0;  // LINEAR : SWIZZLED_128x4
  if (k::pattern_block_scaled_fp8(p.pattern) && !instance->block_scaled_fp8)
    throw k::InvalidLaunch("pattern " + std::string(k::pattern_name(p.pattern)) +
                           " is not built into this FlashInfer instance (main tree only, where "
                           "its compile probe finds patterns 8, 9, 13 and 14)");
  if (p.pattern == k::Pattern::group_fp8) {
    // FlashInfer's launcher takes tma_aligned_mn unchecked: one below tokens would overlap the
    // packs (the Python API sizes it); refused here instead.
    if (p.tma_aligned_mn < p.tokens)
      throw k::InvalidLaunch("group_fp8: tma_aligned_mn " + std::to_string(p.tma_aligned_mn) +
                             " is below tokens " + std::to_string(p.tokens));
    c.group_size = p.group_size;
    c.tma_aligned_mn = p.tma_aligned_mn;
  }
  c.workspace = current_->table();
  c.input = p.input;
  c.residual_in = p.residual_in;
  c.gamma = p.gamma;
  c.allreduce_out = p.allreduce_out;
  c.residual_out = p.residual_out;
  c.norm_out = p.norm_out;
  c.quant_out = p.quant_out;
  c.scale_out = p.scale_out;
  if (p.pattern == k::Pattern::fp8_static)
    c.scale_factor = scale_on_device(1.0f / p.fp8_inv_scale, stream);
  if (p.pattern == k::Pattern::nvfp4)
    c.scale_factor = scale_on_device(p.nvfp4_global_scale, stream);
  c.eps = p.eps;
  c.weight_bias = p.weight_bias;
  c.oneshot = !twoshot;
  c.trigger_at_end = p.trigger == k::Trigger::at_end;
  c.pdl = p.use_pdl;
  c.fp32_acc = p.fp32_accumulation;
  c.stream = stream;

  const std::uint32_t call_index = calls_++;
  pause_before(p, call_index, stream, waiter_);
  char message[512] = {};
  const cudaError_t e = instance->launch(c, message, sizeof(message));
  if (e == cudaErrorNotSupported)
    throw k::InvalidLaunch("FlashInfer instance has no kernel for pattern " +
                           std::string(k::pattern_name(p.pattern)) + " with " +
                           std::to_string(p.ranks) + " ranks");
  throw_launch_error(e, message, "FlashInfer allreduce_fusion launch");
  PendingCall call;
  call.twoshot = twoshot;
  call.elems = elems;
  call.hidden = p.hidden;
  call.call_index = call_index;
  waiter_.enqueued(call, stream);
}

void FlashInferKernels::wait(cudaStream_t stream, const gpu::WaitBudget& budget) {
  waiter_.wait(
      stream, budget, current_->rank(),
      [this](const PendingCall& call, double seconds) { return record_hang(call, seconds); },
      [this] { release_current_call(); });
}

// What the stuck kernel awaited, read from its buffers beside it: the first sentinel left in
// the call's slots, or the first barrier flag that still holds the previous value.
k::HangRecord lamport_hang_record(const FiWorkspace& ws, HostBoundedWait& waiter,
                                  const PendingCall& call, double seconds) {
  std::int32_t ctrl[kCtrlWords] = {};
  waiter.read_back(ctrl, ws.ctrl(), sizeof(ctrl), "hang: ctrl");
  k::HangRecord hang = hang_base(ws.rank(), call, seconds);
  hang.counter = static_cast<std::uint32_t>(ctrl[0]);
  hang.what = k::HangSite::host_bound_lamport;
  hang.flag = static_cast<std::uint32_t>(ctrl[2]);
  std::vector<std::uint16_t> data(static_cast<std::size_t>(ws.ranks()) * call.elems);
  const std::uint8_t* buffer =
      ws.lamport() + static_cast<std::uint64_t>(ctrl[2] % 3) * ws.comm_size();
  waiter.read_back(data.data(), buffer, data.size() * 2, "hang: data");
  if (const std::size_t index = first_sentinel(data); index < data.size()) {
    hang.awaited_slot = static_cast<std::uint32_t>(index / call.elems);
    hang.token =
        static_cast<std::uint32_t>((index % call.elems) / static_cast<std::uint64_t>(call.hidden));
  }
  return hang;
}

// A value that is no sentinel (bf16 1.0, fp16 1.875) in every element of this rank's Lamport
// buffers and of its peers' (mapped here): a kernel that polls a peer's buffer (FlashInfer's MoE
// finalize kernel) is released only there, and that peer may have finished its calls and never
// release anything. A flag value (3) that no barrier waits for. From the second release on,
// the block counter (ctrl word 0) too: a kernel ends with its block 0 waiting until the counter
// equals its grid's size, and two calls in flight on one workspace (calls from two streams)
// count each other's blocks past that value. The launchers' grids are at most the SM count.
void release_lamport(FiWorkspace& ws, HostBoundedWait& waiter) {
  waiter.fill(ws.lamport(), 3 * ws.comm_size(), 0x3F80u, 2);
  for (int r = 0; r < ws.ranks(); ++r)
    if (r != ws.rank()) waiter.fill(ws.peer_lamport(r), 3 * ws.comm_size(), 0x3F80u, 2);
  waiter.fill(ws.barrier_flags(), static_cast<std::uint64_t>(kBarrierRows) * ws.ranks() * 4, 3u, 4);
  if (waiter.release_attempt() > 0)
    waiter.sweep(static_cast<std::int32_t*>(ws.ctrl()), 1, waiter.sm_count(),
                 "release: block counter");
}

k::HangRecord FlashInferKernels::record_hang(const PendingCall& call, double seconds) {
  if (!call.twoshot) return lamport_hang_record(*current_, waiter_, call, seconds);
  std::int32_t ctrl[kCtrlWords] = {};
  waiter_.read_back(ctrl, current_->ctrl(), sizeof(ctrl), "hang: ctrl");
  k::HangRecord hang = hang_base(current_->rank(), call, seconds);
  hang.counter = static_cast<std::uint32_t>(ctrl[0]);
  const int n = current_->ranks();
  hang.what = k::HangSite::host_bound_twoshot;
  hang.flag = static_cast<std::uint32_t>(ctrl[1]);
  std::vector<std::int32_t> flags(static_cast<std::size_t>(kBarrierRows) * n);
  waiter_.read_back(flags.data(), current_->barrier_flags(), flags.size() * 4,
                    "hang: barrier flags");
  const std::int32_t previous = ctrl[1];  // the flag the call started from
  const auto it = std::find(flags.begin(), flags.end(), previous);
  if (it != flags.end()) {
    const auto index = static_cast<std::uint32_t>(it - flags.begin());
    hang.block = index / static_cast<std::uint32_t>(n);
    hang.awaited_slot = index % static_cast<std::uint32_t>(n);
  }
  return hang;
}

void FlashInferKernels::release_current_call() { release_lamport(*current_, waiter_); }

k::LamportScan FlashInferKernels::scan_lamport(const k::LamportScanRequest& request) {
  if (!scanner_) scanner_ = std::make_unique<k::DeviceLamportScanner>();
  return scanner_->scan(current_->lamport_buffers(), request);
}

void FlashInferKernels::reset() {
  // Only the failing case's workspace: the others hold what their last (passing) calls left,
  // a state their next calls start from as they would in any run.
  reset_on_every_rank(bootstrap_, "FlashInfer workspace", [this] {
    if (current_ != nullptr) current_->restore_initial_state();
  });
}

}  // namespace fusioncheck::adapters::fi
