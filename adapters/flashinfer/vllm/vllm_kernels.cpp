// FlashInfer's copy of vLLM's custom allreduce behind KernelUnderTest, and its protocol's checks
// (vllm_kernels.hpp; docs/protocols.md, "vLLM barrier protocol", invariants V1-V4).
#include "vllm_kernels.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "fi_call.hpp"  // kSyncDelayPlans
#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::adapters {
namespace fi {
namespace {

namespace k = kernels;

constexpr std::uint64_t kMinBytes = 128u << 10;  // the smallest workspace, per rank

// The copy as the checks run it, or its sync-delay copy (the header as shipped has no hooks; a
// patched copy has them already).
const VllmInstance* find_vllm_instance(const gpu::MutantId& mutant, bool hooked) {
  for (const VllmInstance& i : kVllmInstances)
    if (i.api != nullptr && gpu::MutantId(i.mutant) == mutant &&
        (!mutant.none() || (i.sync_site_count > 0) == hooked))
      return &i;
  return nullptr;
}

std::uint64_t hash_counts(const std::vector<std::uint32_t>& w, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n && i < w.size(); ++i) h = (h ^ w[i]) * 1099511628211ull;
  return h;
}

}  // namespace

FlashInferVllmKernels::FlashInferVllmKernels(k::Bootstrap& bootstrap, const gpu::MutantId& patch)
    : bootstrap_(bootstrap), patch_(patch), ranks_(bootstrap.size()) {
  plain_ = find_vllm_instance(patch, false);
  hooked_ = find_vllm_instance(patch, true);
  if (plain_ == nullptr)
    throw k::InvalidLaunch("FlashInfer's copy of vLLM's custom allreduce has no copy for mutant " +
                           patch.id());
  for (const VllmInstance* i : {plain_, hooked_})
    if (i != nullptr) i->api(&apis_[i]);
}

std::string FlashInferVllmKernels::name() const {
  return "FlashInfer's copy of vLLM's custom allreduce (vllm_custom_all_reduce.cuh, " +
         flashinfer_source() + ")" + (patch_.none() ? std::string() : ", patched: " + patch_.id());
}

void FlashInferVllmKernels::prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) {
  if (fp32_lamport)
    throw k::InvalidLaunch("FlashInfer's copy of vLLM's allreduce has no Lamport buffers");
  if (ranks_ != 2 && ranks_ != 4 && ranks_ != 6 && ranks_ != 8)
    throw k::InvalidLaunch(
        "FlashInfer's copy of vLLM's custom allreduce runs on 2, 4, 6 or 8 "
        "ranks, not " +
        std::to_string(ranks_));
  max_bytes_ = std::bit_ceil(std::max<std::uint64_t>(kMinBytes, max_elems_per_rank * 2));
  for (const VllmInstance* i : {plain_, hooked_}) {  // collective, on first use of a size
    if (i == nullptr) continue;
    auto& slot = workspaces_[{max_bytes_, i}];
    if (!slot) slot = std::make_unique<VllmWorkspace>(bootstrap_, apis_.at(i), max_bytes_);
  }
}

const VllmInstance& FlashInferVllmKernels::instance_for(const gpu::GpuCase& c) const {
  const bool held_inside = c.hold.active() && c.hold.point == k::HoldPoint::before_poll;
  return (c.delay_seed != 0 || held_inside) && hooked_ != nullptr ? *hooked_ : *plain_;
}

void FlashInferVllmKernels::begin_case(const gpu::GpuCase& c) {
  case_instance_ = &instance_for(c);
  auto found = workspaces_.find({max_bytes_, case_instance_});
  if (found == workspaces_.end())
    throw k::InvalidLaunch("FlashInfer vLLM adapter: a case before prepare");
  current_ = found->second.get();
  launched_.clear();
  if (case_instance_->sync_site_count == 0) return;
  // This rank's plan for the case (none without delays), on a stream of its own, done before
  // the first call is enqueued.
  const gpu::SyncDelay delay =
      gpu::sync_delay_for(c.delay_seed, ws().rank(), c.delay_max_ns, case_instance_->sync_sites,
                          case_instance_->sync_site_count);
  auto [known, inserted] = sync_delays_.try_emplace(case_instance_, delay);
  if (!inserted && known->second == delay) return;
  if (plan_stream_ == nullptr)
    FC_CUDA_CHECK(cudaStreamCreateWithFlags(&plan_stream_, cudaStreamNonBlocking));
  k::cuda_check(static_cast<cudaError_t>(
                    apis_.at(case_instance_)
                        .set_sync_delay(0, delay.line, delay.block, delay.ns, plan_stream_)),
                "vLLM sync-delay plan");
  FC_CUDA_CHECK(cudaStreamSynchronize(plan_stream_));
  known->second = delay;
}

std::vector<std::string> FlashInferVllmKernels::case_notes(const gpu::GpuCase& c) const {
  const VllmInstance& instance = instance_for(c);
  return sync_delay_notes(c, instance.sync_sites, instance.sync_site_count,
                          "vllm_custom_all_reduce.cuh");
}

void FlashInferVllmKernels::launch(const k::FusedParams& p, bool twoshot, cudaStream_t stream) {
  if (current_ == nullptr) throw k::InvalidLaunch("FlashInfer vLLM adapter: launch before a case");
  if (const std::string why = flashinfer_vllm_refusal(p, twoshot); !why.empty())
    throw k::InvalidLaunch(why);
  if (p.ranks != ranks_ || p.rank != ws().rank())
    throw k::InvalidLaunch("FlashInfer vLLM adapter: the call's ranks differ from the workspace's");
  const auto numel = static_cast<std::uint64_t>(p.tokens) * static_cast<std::uint64_t>(p.hidden);
  if (numel * 2 > ws().max_bytes())
    throw k::InvalidLaunch("tokens x hidden beyond the prepared workspace");
  const VllmVariant v = flashinfer_vllm_variants(ranks_).at(static_cast<std::size_t>(p.variant));
  const std::uint32_t call_index = calls_++;
  pause_before(p, call_index, stream, waiter_);
  // Eager, the input is copied into the registered buffer first (FlashInfer's binding with a
  // reg_buffer; vLLM's eager path); captured, the kernel reads the caller's input, registered
  // after the capture.
  const bool captured = HostBoundedWait::capturing(stream);
  void* registered = captured ? const_cast<void*>(p.input) : ws().registered();
  if (!captured)
    FC_CUDA_CHECK(
        cudaMemcpyAsync(registered, p.input, numel * 2, cudaMemcpyDeviceToDevice, stream));
  VllmCall c;
  c.stage = static_cast<VllmStage>(v.stage);
  c.bf16 = p.dtype == k::DType::bf16;
  c.input = registered;
  c.output = p.allreduce_out;
  c.numel = static_cast<int>(numel);
  c.block_limit = v.block_limit;
  c.threads = kVllmThreads;
  c.stream = stream;
  char error[kVllmErrorBytes] = {};
  const bool held = p.hold_point == k::HoldPoint::before_poll && p.hold_ns > 0;
  if (held) hold_at_barriers(p.hold_ns, stream);
  const int e = apis_.at(case_instance_).launch(ws().handle(), c, error, sizeof(error));
  if (held) hold_at_barriers(0, stream);
  if (e < 0) throw k::InvalidLaunch(std::string("FlashInfer's vLLM allreduce refused: ") + error);
  throw_launch_error(static_cast<cudaError_t>(e), "", "FlashInfer vLLM allreduce launch");
  launched_.push_back({c.stage_launched, c.blocks_launched, registered, p.allreduce_out, numel});
  PendingCall call;
  call.elems = numel;
  call.hidden = p.hidden;
  call.call_index = call_index;
  waiter_.enqueued(call, stream);
}

// A rank held after its start barrier in one call: every block of it waits `ns` at each barrier
// hook of the case's copy (plans 1..), set on the call's stream before the call and cleared
// after it (0).
void FlashInferVllmKernels::hold_at_barriers(std::uint32_t ns, cudaStream_t stream) {
  const VllmInstance& instance = *case_instance_;
  if (instance.sync_site_count == 0)
    throw k::InvalidLaunch("a rank held inside vLLM's kernel needs its copy with barrier hooks");
  if (instance.sync_site_count + 1 > kSyncDelayPlans)
    throw k::InvalidLaunch("the vLLM copy has more barrier hooks than the hook has plans");
  for (int i = 0; i < instance.sync_site_count; ++i)
    throw_launch_error(static_cast<cudaError_t>(apis_.at(&instance).set_sync_delay(
                           1 + i, ns > 0 ? instance.sync_sites[i] : 0, -1, ns, stream)),
                       "", "FlashInfer vLLM held-rank plan");
}

// vLLM's registration after a capture: each rank's captured inputs as IPC handles and offsets
// from their allocations' bases, gathered, opened and written into the rank data the captured
// kernels point to.
void FlashInferVllmKernels::after_capture() {
  const VllmApi& api = apis_.at(case_instance_);
  const int count = api.graph_buffer_count(ws().handle());
  std::vector<int> counts(static_cast<std::size_t>(ranks_));
  bootstrap_.all_gather(&count, counts.data(), sizeof(int), "vLLM graph buffer counts");
  if (std::any_of(counts.begin(), counts.end(), [&](int n) { return n != count; }))
    throw k::InvalidLaunch(
        "vLLM graph registration: the ranks captured different numbers of calls");
  if (count == 0) return;
  char error[kVllmErrorBytes] = {};
  std::vector<char> handles(count * kIpcHandleBytes);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(count));
  const int meta =
      api.graph_meta(ws().handle(), handles.data(), offsets.data(), error, sizeof(error));
  std::vector<int> metas(static_cast<std::size_t>(ranks_));
  bootstrap_.all_gather(&meta, metas.data(), sizeof(int), "vLLM graph buffer handles made");
  if (meta != 0) throw k::LaunchFailed(std::string("vLLM get_graph_buffer_ipc_meta: ") + error);
  if (std::any_of(metas.begin(), metas.end(), [](int m) { return m != 0; }))
    throw k::LaunchFailed("vLLM get_graph_buffer_ipc_meta failed on another rank");
  std::vector<char> all_handles(handles.size() * ranks_);
  std::vector<std::int64_t> all_offsets(offsets.size() * ranks_);
  bootstrap_.all_gather(handles.data(), all_handles.data(), handles.size(), "vLLM graph handles");
  bootstrap_.all_gather(offsets.data(), all_offsets.data(), offsets.size() * sizeof(std::int64_t),
                        "vLLM graph offsets");
  if (api.register_graph(ws().handle(), all_handles.data(), all_offsets.data(), count, error,
                         sizeof(error)) != 0)
    throw k::LaunchFailed(std::string("vLLM register_graph_buffers: ") + error);
  land_rank_data();
}

void FlashInferVllmKernels::wait(cudaStream_t stream, const gpu::WaitBudget& budget) {
  waiter_.wait(
      stream, budget, ws().rank(),
      [this](const PendingCall& call, double seconds) { return record_hang(call, seconds); },
      [this] { release_stuck_call(); });
}

// The first barrier lane whose awaited count its counter does not hold.
k::HangRecord FlashInferVllmKernels::record_hang(const PendingCall& call, double seconds) {
  k::HangRecord hang = hang_base(ws().rank(), call, seconds);
  hang.what = k::HangSite::host_bound_counter;
  const VllmLayout& l = ws().layout();
  const std::size_t lanes = static_cast<std::size_t>(l.max_blocks) * kVllmCounterLanes;
  std::vector<std::uint32_t> self(lanes), peer(2 * lanes);
  waiter_.read_back(self.data(), ws().signal() + l.self_counter_offset, lanes * 4, "hang: counts");
  waiter_.read_back(peer.data(), ws().signal() + l.peer_counter_offset, 2 * lanes * 4,
                    "hang: peer counters");
  for (int b = 0; b < l.max_blocks; ++b)
    for (int p = 0; p < ranks_; ++p) {
      const std::uint32_t count = self[static_cast<std::size_t>(b) * kVllmCounterLanes + p];
      const std::uint32_t held =
          peer[(count % 2) * lanes + static_cast<std::size_t>(b) * kVllmCounterLanes + p];
      if (count == 0 || held == count) continue;
      hang.block = static_cast<std::uint32_t>(b);
      hang.awaited_slot = static_cast<std::uint32_t>(p);
      hang.counter = count;
      hang.flag = held;
      return hang;
    }
  return hang;
}

// Every lane's counters (both sets) given the count it is at: a stuck barrier passes, and the
// wait releases again until the call ends (a lane that moves on waits at its next barrier).
void FlashInferVllmKernels::release_stuck_call() {
  const VllmLayout& l = ws().layout();
  const std::size_t lanes = static_cast<std::size_t>(l.max_blocks) * kVllmCounterLanes;
  std::vector<std::uint32_t> self(lanes), peer(2 * lanes);
  waiter_.read_back(self.data(), ws().signal() + l.self_counter_offset, lanes * 4,
                    "release: counts");
  for (std::size_t i = 0; i < lanes; ++i) peer[i] = peer[lanes + i] = self[i];
  waiter_.write(ws().signal() + l.peer_counter_offset, peer.data(), peer.size() * 4,
                "release: peer counters");
}

void FlashInferVllmKernels::reset() {
  reset_on_every_rank(bootstrap_, "FlashInfer vLLM allreduce", [this] {
    workspaces_.clear();
    current_ = nullptr;
    launched_.clear();
  });
}

FlashInferVllmKernels::Counts FlashInferVllmKernels::read_counts() const {
  const VllmLayout& l = ws().layout();
  const std::size_t lanes = static_cast<std::size_t>(l.max_blocks) * kVllmCounterLanes;
  return {ws().read_words(l.self_counter_offset, lanes),
          ws().read_words(l.peer_counter_offset, 2 * lanes)};
}

void FlashInferVllmKernels::start_case() { counts_ = read_counts(); }

std::vector<std::string> FlashInferVllmKernels::check_rank(const gpu::GpuCase& c, int first,
                                                           int count,
                                                           const gpu::CallEvidence& last) {
  (void)c;
  VllmStateAfterCalls s;
  s.ranks = ranks_;
  s.rank = ws().rank();
  s.max_blocks = ws().layout().max_blocks;
  s.self_before = counts_.self;
  const Counts after = read_counts();
  s.self_after = after.self;
  s.peer_after = after.peer;
  const auto end = static_cast<std::size_t>(first + count);
  if (end <= launched_.size() && count > 0) {
    for (std::size_t i = static_cast<std::size_t>(first); i < end; ++i)
      s.grids.push_back(launched_[i].blocks);
    const Launched& l = launched_[end - 1];
    s.last_stage = l.stage;
    s.last_packs = l.numel * 2 / 16;
    if (l.stage == 2) {
      const std::uint64_t part = s.last_packs / static_cast<std::uint64_t>(ranks_);
      const std::uint64_t mine = s.rank == ranks_ - 1 ? s.last_packs - s.rank * part : part;
      s.tmp = ws().read(ws().tmp(), mine * 16);
      s.output = ws().read(l.output, l.numel * 2);
    }
    if (last.own_input_on_gpu != nullptr && last.own_input_elems == l.numel) {
      s.registered = ws().read(l.registered, l.numel * 2);
      s.input = ws().read(last.own_input_on_gpu, l.numel * 2);
    }
  }
  s.guards_intact = ws().guards_intact();
  counts_ = after;
  return vllm_state_violations(s);
}

gpu::ProtocolWords FlashInferVllmKernels::words() const {
  gpu::ProtocolWords w;
  if (counts_.self.empty()) return w;
  std::vector<std::uint32_t> counts;  // lanes of real peers only
  for (std::size_t b = 0; b * kVllmCounterLanes < counts_.self.size(); ++b)
    for (int p = 0; p < ranks_; ++p) counts.push_back(counts_.self[b * kVllmCounterLanes + p]);
  w.words[0] = hash_counts(counts, counts.size());
  w.words[1] = *std::max_element(counts.begin(), counts.end());
  w.words[2] = counts.front();
  w.words[3] = static_cast<std::uint64_t>(
      std::count_if(counts.begin(), counts.end(), [](std::uint32_t v) { return v != 0; }));
  return w;
}

std::vector<std::string> FlashInferVllmKernels::check_across_ranks(
    const std::vector<gpu::ProtocolWords>& all) const {
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r].words != all[0].words)
      return {
          fmt::format("vLLM invariant V1: rank {}'s barrier counts ({}) differ from rank 0's ({})",
                      r, describe(all[r]), describe(all[0]))};
  return {};
}

std::string FlashInferVllmKernels::describe(const gpu::ProtocolWords& w) const {
  return fmt::format("barrier counts: block 0 at {}, at most {}, {} lanes counted (hash {:#x})",
                     w.words[2], w.words[1], w.words[3], w.words[0]);
}

}  // namespace fi

std::string flashinfer_vllm_unavailable_reason() {
  return fi::find_vllm_instance(gpu::MutantId(), false) != nullptr
             ? ""
             : "this FlashInfer tree has no flashinfer/comm/vllm_custom_all_reduce.cuh";
}

std::vector<gpu::MutantId> flashinfer_vllm_patches() {
  std::vector<gpu::MutantId> out;
  for (const fi::VllmInstance& i : fi::kVllmInstances)
    if (i.api != nullptr && !gpu::MutantId(i.mutant).none()) out.emplace_back(i.mutant);
  return out;
}

std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_vllm_patches_not_built() {
  return fi::listed_not_built(fi::kVllmPatchesNotBuilt);
}

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_vllm(kernels::Bootstrap& bootstrap,
                                                           const gpu::MutantId& patch) {
  if (const std::string why = flashinfer_vllm_unavailable_reason(); !why.empty())
    throw kernels::InvalidLaunch(why);
  return std::make_unique<fi::FlashInferVllmKernels>(bootstrap, patch);
}

}  // namespace fusioncheck::adapters
