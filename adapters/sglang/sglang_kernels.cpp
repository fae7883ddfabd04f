// SGLang's push allreduce behind KernelUnderTest (sglang_kernels.hpp), and its protocol's checks
// (docs/protocols.md, "SGLang push protocol", S1-S2).
#include "sglang_kernels.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>

#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::adapters::sg {

namespace k = kernels;

namespace {

constexpr std::uint64_t kMinBytes = 128u << 10;       // the smallest plane's slot
constexpr std::uint64_t kSlotAlign = 128;             // as SGLang's Python aligns its push size
constexpr std::uint32_t kNegZeroWords = 0x80008000u;  // -0 in both halves of a 32-bit word

}  // namespace

SglangPushKernels::SglangPushKernels(k::Bootstrap& bootstrap, const PushApi& api,
                                     const gpu::MutantId& patch)
    : bootstrap_(bootstrap), api_(api), patch_(patch), ranks_(bootstrap.size()) {}

std::string SglangPushKernels::name() const {
  return "SGLang's push allreduce (custom_all_reduce.cuh, " + sglang_source() + ")" +
         (patch_.none() ? std::string() : ", patched: " + patch_.id());
}

void SglangPushKernels::prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) {
  if (fp32_lamport) throw k::InvalidLaunch("SGLang's push allreduce has no fp32 Lamport buffers");
  if (sm_count_ == 0) {  // here, not in the constructor: the rank has picked its GPU by now
    int device = 0;
    FC_CUDA_CHECK(cudaGetDevice(&device));
    // Under an MPS share, the share: the wheel sizes its grid from what the context reports.
    FC_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
  }
  if (ranks_ != 2 && ranks_ != 4 && ranks_ != 6 && ranks_ != 8)
    throw k::InvalidLaunch("SGLang's push allreduce runs on 2, 4, 6 or 8 ranks here, not " +
                           std::to_string(ranks_));
  // A slot holds a one-shot call's input, or a two-shot call's two chunks (at most 32 bytes
  // more), 16-bit elements.
  const std::uint64_t bytes = std::bit_ceil(std::max(kMinBytes, max_elems_per_rank * 2));
  slot_bytes_ = (bytes + 2 * kSglangVecBytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  if (2 * static_cast<std::uint64_t>(ranks_) * slot_bytes_ > 0xffffffffull)
    throw k::InvalidLaunch(
        "SGLang's push plane beyond its 32-bit offsets: fewer elements per call");
  auto& slot = planes_[slot_bytes_];  // collective, on first use of a size
  if (!slot) slot = std::make_unique<PushPlane>(bootstrap_, slot_bytes_, sm_count_);
}

void SglangPushKernels::begin_case(const gpu::GpuCase& c) {
  (void)c;
  auto found = planes_.find(slot_bytes_);
  if (found == planes_.end()) throw k::InvalidLaunch("SGLang push adapter: a case before prepare");
  current_ = found->second.get();
  launched_.clear();
  extent_ = 0;  // this case's plane may be smaller than the last one's
}

void SglangPushKernels::launch(const k::FusedParams& p, bool twoshot, cudaStream_t stream) {
  if (current_ == nullptr) throw k::InvalidLaunch("SGLang push adapter: launch before a case");
  if (const std::string why = sglang_push_refusal(p, twoshot); !why.empty())
    throw k::InvalidLaunch(why);
  if (p.ranks != ranks_ || p.rank != bootstrap_.rank())
    throw k::InvalidLaunch("SGLang push adapter: the call's ranks differ from the workspace's");
  const auto numel = static_cast<std::uint64_t>(p.tokens) * static_cast<std::uint64_t>(p.hidden);
  const std::uint64_t vecs = numel * 2 / kSglangVecBytes;
  const bool two_shot = p.variant == 1;
  const std::uint64_t use = sglang_push_slot_use(vecs, two_shot, ranks_);
  if (use > plane().slot_bytes())
    throw k::InvalidLaunch("tokens x hidden beyond the prepared push plane");
  const std::uint32_t call_index = calls_++;
  gpu::pause_before(p, call_index, stream, waiter_);
  PushLaunch l;
  l.two_shot = two_shot;
  l.bf16 = p.dtype == k::DType::bf16;
  l.pdl = p.use_pdl;
  l.input = p.input;
  l.output = p.allreduce_out;
  l.num_vecs = static_cast<std::uint32_t>(vecs);
  l.rank = static_cast<std::uint32_t>(p.rank);
  l.ranks = ranks_;
  for (int r = 0; r < ranks_; ++r) l.workspaces[r] = plane().of(r);
  l.counter = plane().counters();
  l.slot_bytes = static_cast<std::uint32_t>(plane().slot_bytes());
  l.blocks = plane().blocks();
  l.threads = sglang_push_block_size(vecs, sm_count_, two_shot, ranks_, l.blocks);
  l.stream = stream;
  char error[kPushErrorBytes] = {};
  const int e = api_.launch(l, error, sizeof(error));
  if (e < 0) throw k::InvalidLaunch(std::string("SGLang's push allreduce refused: ") + error);
  if (e > 0) {
    if (k::is_launch_configuration_error(static_cast<cudaError_t>(e))) {
      (void)cudaGetLastError();  // not sticky: the context stays usable
      throw k::LaunchFailed(std::string("SGLang's push launch this GPU cannot run: ") + error);
    }
    k::cuda_check(static_cast<cudaError_t>(e), "SGLang push allreduce launch");
  }
  launched_.push_back({p.input, numel, use});
  extent_ = std::max(extent_, use);
  gpu::PendingCall call;
  call.elems = numel;
  call.hidden = p.hidden;
  call.call_index = call_index;
  call.flag = static_cast<std::uint32_t>(use);  // the stuck call's slot extent, for its record
  call.twoshot = two_shot;  // its own slot unused: not an awaited one in its record
  waiter_.enqueued(call, stream);
}

void SglangPushKernels::wait(cudaStream_t stream, const gpu::WaitBudget& budget) {
  waiter_.wait(
      stream, budget, bootstrap_.rank(),
      [this](const gpu::PendingCall& call, double seconds) { return record_hang(call, seconds); },
      [this] { release_stuck_call(); });
}

// The first vector of the stuck call that one slot still awaits while another slot holds its
// data (a vector every slot holds +0 of was consumed and re-armed, or not pushed by anyone).
k::HangRecord SglangPushKernels::record_hang(const gpu::PendingCall& call, double seconds) {
  k::HangRecord hang = gpu::hang_base(bootstrap_.rank(), call, seconds);
  // The kernels layer names no site of this protocol: describe_hang below says what it awaited.
  hang.what = k::HangSite::none;
  hang.awaited_slot = static_cast<std::uint32_t>(ranks_);  // none found
  const std::uint64_t used = std::min<std::uint64_t>(call.flag, plane().slot_bytes());
  std::vector<std::uint32_t> counters(static_cast<std::size_t>(plane().blocks()));
  waiter_.read_back(counters.data(), plane().counters(), counters.size() * 4, "hang: counters");
  const std::uint32_t phase = counters.empty() ? 0 : counters[0] & 1u;
  hang.flag = phase;
  // Blocks whose phase differs from block 0's: each block flips its own counter, so a number
  // here means the rank's blocks disagree on the slots they use.
  hang.block = static_cast<std::uint32_t>(std::count_if(
      counters.begin(), counters.end(), [&](std::uint32_t c) { return (c & 1u) != phase; }));
  std::vector<std::uint8_t> slots(static_cast<std::size_t>(ranks_) * used);
  const int unused_slot = call.twoshot ? bootstrap_.rank() : -1;
  for (std::uint32_t p : {phase, phase ^ 1u}) {
    for (int src = 0; src < ranks_; ++src)
      waiter_.read_back(slots.data() + static_cast<std::size_t>(src) * used,
                        plane().mine() + (p * ranks_ + src) * plane().slot_bytes(), used,
                        "hang: slots");
    const PushSlotScan scan = scan_push_slots(slots.data(), ranks_, used, unused_slot);
    if (p != phase) {  // the other phase: counted only
      hang.detail = static_cast<std::uint32_t>(scan.vectors);
      continue;
    }
    if (scan.first_awaited >= 0) {
      hang.awaited_slot = static_cast<std::uint32_t>(scan.first_awaited);
      hang.token = static_cast<std::uint32_t>(scan.first_vector);
    }
    hang.counter = static_cast<std::uint32_t>(scan.vectors);
  }
  return hang;
}

// Every slot word of both phases -0: each poll sees its vector pushed and the call ends (on
// garbage: the case has failed already); calls queued behind it find the same.
void SglangPushKernels::release_stuck_call() {
  waiter_.fill(plane().mine(), 2 * static_cast<std::uint64_t>(ranks_) * plane().slot_bytes(),
               kNegZeroWords, 4);
}

void SglangPushKernels::reset() {
  gpu::reset_on_every_rank(bootstrap_, "SGLang push allreduce", [this] {
    planes_.clear();
    current_ = nullptr;
    launched_.clear();
    extent_ = 0;
  });
}

void SglangPushKernels::start_case() { counters_ = plane().read_counters(); }

std::vector<std::string> SglangPushKernels::check_rank(const gpu::GpuCase& c, int first, int count,
                                                       const gpu::CallEvidence& last) {
  (void)c;
  SglangStateAfterCalls s;
  s.ranks = ranks_;
  const std::vector<std::uint32_t> after = plane().read_counters();
  // S1 over this group: each counter flipped once per call from where the group found it.
  s.calls = static_cast<std::uint64_t>(count);
  s.counters.resize(after.size());
  for (std::size_t b = 0; b < after.size() && b < counters_.size(); ++b)
    s.counters[b] = after[b] ^ counters_[b];
  s.used = extent_;
  s.slots = plane().read_slots(extent_);
  const auto end = static_cast<std::size_t>(first + count);
  if (end <= launched_.size() && count > 0 && last.own_input_on_gpu != nullptr) {
    const Launched& l = launched_[end - 1];
    if (last.own_input_elems == l.numel) {
      std::vector<std::uint8_t> input(l.numel * 2), generated(l.numel * 2);
      FC_CUDA_CHECK(cudaMemcpy(input.data(), l.input, input.size(), cudaMemcpyDeviceToHost));
      FC_CUDA_CHECK(cudaMemcpy(generated.data(), last.own_input_on_gpu, generated.size(),
                               cudaMemcpyDeviceToHost));
      s.input_untouched = input == generated;
    }
  }
  s.guards_intact = plane().guards_intact();
  counters_ = after;
  return sglang_state_violations(s);
}

// words: [0] the phase every counter holds (2: they differ), [1] counters at phase 1, [2] blocks.
gpu::ProtocolWords SglangPushKernels::words() const {
  gpu::ProtocolWords w;
  if (counters_.empty()) return w;
  const bool uniform = std::all_of(counters_.begin(), counters_.end(),
                                   [&](std::uint32_t v) { return v == counters_.front(); });
  w.words[0] = uniform ? counters_.front() : 2;
  w.words[1] = static_cast<std::uint64_t>(std::count(counters_.begin(), counters_.end(), 1u));
  w.words[2] = counters_.size();
  return w;
}

std::vector<std::string> SglangPushKernels::check_across_ranks(
    const std::vector<gpu::ProtocolWords>& all) const {
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r].words[0] != all[0].words[0] || all[r].words[1] != all[0].words[1])
      return {fmt::format(
          "SGLang invariant S1: rank {}'s phase counters ({}) differ from rank 0's ({}): every "
          "rank flips each counter once per call",
          r, describe(all[r]), describe(all[0]))};
  return {};
}

std::string SglangPushKernels::describe_hang(const k::HangRecord& r) const {
  return sglang_push_hang_text(r, ranks_);
}

std::string SglangPushKernels::describe(const gpu::ProtocolWords& w) const {
  return fmt::format("phase counters: {} of {} blocks at phase 1{}", w.words[1], w.words[2],
                     w.words[0] == 2 ? " (not uniform)" : "");
}

}  // namespace fusioncheck::adapters::sg
