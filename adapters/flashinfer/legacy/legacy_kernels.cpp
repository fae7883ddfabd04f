// FlashInfer's older Lamport kernel behind KernelUnderTest (legacy_kernels.hpp). Its state, as
// kernels::ControlState for the invariants (docs/flashinfer.md):
//   flag        = the host-held barrier_flag of the next call, mod 3: the buffer it pushes into
//                 (ping = flag % 3; it clears (flag + 2) % 3, the previous call's);
//   clear_size  = N x the tokens x hidden the buffers are kept for: the next call clears its
//                 own layout, which is the previous call's (the adapter re-initialises the
//                 buffers, all ranks idle, when the shape changes);
//   counters and two-shot state: none (0).
// After a call the data buffer holds every peer's input in its slot; this rank's own slot in
// its own buffers is never written and stays -0, as does everything else.
#include "legacy_kernels.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::adapters::fi {
namespace {

namespace k = kernels;

// Each Lamport buffer holds N slots of the largest call: at most 16 tokens x the widest row.
constexpr std::uint64_t kMaxElems = 16ull * gpu::CaseLimits::kMaxHidden;

}  // namespace

std::string FlashInferLegacyKernels::name() const {
  return "FlashInfer's older Lamport kernel (trtllm_allreduce.cuh, " + std::string(kSource) + ")";
}

void FlashInferLegacyKernels::prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) {
  if (fp32_lamport)
    throw k::InvalidLaunch("FlashInfer's older Lamport kernel has 16-bit Lamport elements only");
  const std::uint64_t n = static_cast<std::uint64_t>(bootstrap_.size());
  const std::uint64_t bytes = std::bit_ceil(
      std::max<std::uint64_t>(64u << 10, n * std::min(max_elems_per_rank, kMaxElems) * 2));
  Slot& slot = workspaces_[bytes];
  if (!slot.buffers)
    slot.buffers = std::make_unique<FiWorkspace>(bootstrap_, bytes, 0);  // collective
  current_ = &slot;
}

// Buffers clean for calls of `elems` per rank: a changed shape would leave data that the
// current layout's clear does not reach, read as valid two calls later (the upstream test
// re-initialises too). Collective; every rank reaches it at the same call.
void FlashInferLegacyKernels::clean_for(std::uint64_t elems) {
  if (elems == current_->layout_elems) return;
  if (current_->layout_elems != 0) {  // a fresh workspace is clean
    ws().fill_lamport_sentinel();
    bootstrap_.barrier("FlashInfer older Lamport: buffers re-initialised for a new shape");
  }
  current_->layout_elems = elems;
}

void FlashInferLegacyKernels::launch(const k::FusedParams& p, bool twoshot, cudaStream_t stream) {
  if (current_ == nullptr)
    throw k::InvalidLaunch("FlashInfer's older Lamport kernel: launch before prepare");
  if (cc_major_ == 0) {
    int device = 0;
    FC_CUDA_CHECK(cudaGetDevice(&device));
    FC_CUDA_CHECK(cudaDeviceGetAttribute(&cc_major_, cudaDevAttrComputeCapabilityMajor, device));
  }
  if (const std::string why = flashinfer_legacy_refusal(p, twoshot, cc_major_); !why.empty())
    throw k::InvalidLaunch(why);
  if (p.ranks != ws().ranks() || p.rank != ws().rank())
    throw k::InvalidLaunch(
        "FlashInfer's older Lamport kernel: the call's ranks differ from the workspace's");
  if (HostBoundedWait::capturing(stream))
    throw k::InvalidLaunch(
        "FlashInfer's older Lamport kernel in a CUDA graph: its flag is a kernel parameter, so a "
        "replay reuses the captured flags");
  const std::uint64_t elems =
      static_cast<std::uint64_t>(p.tokens) * static_cast<std::uint64_t>(p.hidden);
  if (elems != current_->layout_elems && !waiter_.idle())
    throw k::InvalidLaunch(
        "FlashInfer's older Lamport kernel: tokens x hidden changed from " +
        std::to_string(current_->layout_elems) + " to " + std::to_string(elems) +
        " without a host sync (it clears by the current call's layout: the buffers must be "
        "re-initialised with every rank idle)");
  if (static_cast<std::uint64_t>(p.ranks) * elems * 2 > ws().comm_size())
    throw k::InvalidLaunch("tokens x hidden beyond the prepared Lamport buffers");
  clean_for(elems);

  LegacyCall c;
  c.nranks = p.ranks;
  c.rank = p.rank;
  c.tokens = p.tokens;
  c.hidden = p.hidden;
  c.bf16 = p.dtype == k::DType::bf16;
  for (int b = 0; b < 3; ++b)
    for (int r = 0; r < p.ranks; ++r) c.lamport[b][r] = ws().peer_lamport(r) + b * ws().comm_size();
  c.flag = current_->flag;
  c.input = p.input;
  c.residual_in = p.residual_in;
  c.gamma = p.gamma;
  c.residual_out = p.residual_out;
  c.norm_out = p.norm_out;
  c.eps = p.eps;
  c.pdl = p.use_pdl;
  c.stream = stream;
  const std::uint32_t call_index = calls_++;
  pause_before(p, call_index, stream, waiter_);
  char message[512] = {};
  const cudaError_t e = fc_fi_legacy_launch(c, message, sizeof(message));
  if (e == cudaErrorInvalidValue && message[0] != '\0')
    throw k::InvalidLaunch("FlashInfer: " + check_text(message));
  k::cuda_check(e, "FlashInfer older Lamport launch");
  ++current_->flag;  // +1 per call on every rank, as its callers keep it
  PendingCall call;
  call.elems = elems;
  call.hidden = p.hidden;
  call.call_index = call_index;
  call.flag = c.flag;
  waiter_.enqueued(call, stream);
}

k::ControlState FlashInferLegacyKernels::read_state(k::LamportCopy copy) {
  k::ControlState s = ws().read_state(copy);  // guards and buffers; its ctrl words are unused here
  s.control.arrival_counter = 0;
  s.control.two_shot_counter = 0;
  s.control.two_shot_flag = 0;
  s.control.flag = current_->flag % protocol::kLamportBuffers;
  s.control.clear_size = static_cast<std::uint64_t>(ws().ranks()) * current_->layout_elems;
  return s;
}

// Invariants 4-6 as for every kernel, except this rank's own slot of the data buffer: the
// kernel keeps its own input in registers and never writes it there, so it must still be -0
// (counted with the elements past N x size that must be -0).
k::LamportScan FlashInferLegacyKernels::scan_lamport(const k::LamportScanRequest& request) {
  const k::ControlState s = read_state(k::LamportCopy::with_buffers);
  k::LamportScan scan = k::scan_lamport_on_host(s, request);
  const auto r = static_cast<std::size_t>(ws().rank());
  if (!scan.slots_fit || r >= scan.slots.size()) return scan;
  scan.slots[r] = k::LamportSlotScan{};
  k::LamportBufferScan& data = scan.buffers[static_cast<std::size_t>(request.data_buffer)];
  const std::uint64_t per_buffer = s.comm_size / 2;
  const std::uint64_t first = r * scan.slot_elems;
  k::LamportBufferScan own;
  for (std::uint64_t i = first; i < first + scan.slot_elems; ++i) {
    std::uint16_t v;
    std::memcpy(&v, &s.lamport[(request.data_buffer * per_buffer + i) * 2], 2);
    if (v == protocol::kNegZero16) continue;
    if (own.not_sentinel++ == 0) {
      own.first_index = i;
      own.first_value = v;
    }
  }
  if (own.not_sentinel > 0) {  // the own slot lies before N x size: its offender comes first
    own.not_sentinel += data.not_sentinel;
    data = own;
  }
  return scan;
}

void FlashInferLegacyKernels::wait(cudaStream_t stream, const gpu::WaitBudget& budget) {
  waiter_.wait(
      stream, budget, ws().rank(),
      [this](const PendingCall& call, double seconds) { return record_hang(call, seconds); },
      // Lets the stuck kernel finish: a value that is no sentinel (bf16 1.0, fp16 1.875) in
      // every element of this rank's buffers; the runner resets the workspace afterwards.
      [this] { waiter_.fill(ws().lamport(), 3 * ws().comm_size(), 0x3F80u, 2); });
}

// The first peer slot of the call's data buffer that still holds -0 (its own slot always does).
k::HangRecord FlashInferLegacyKernels::record_hang(const PendingCall& call, double seconds) {
  const int r = ws().rank();
  k::HangRecord hang = hang_base(r, call, seconds);
  hang.what = k::HangSite::host_bound_lamport;
  hang.flag = call.flag % protocol::kLamportBuffers;
  hang.counter = call.flag;  // no counter: the host-held flag of the stuck call
  std::vector<std::uint16_t> data(static_cast<std::size_t>(ws().ranks()) * call.elems);
  waiter_.read_back(data.data(), ws().lamport() + hang.flag * ws().comm_size(), data.size() * 2,
                    "hang: data");
  const std::size_t own = static_cast<std::size_t>(r) * call.elems;
  if (const std::size_t index = first_sentinel(data, own, own + call.elems); index < data.size()) {
    hang.awaited_slot = static_cast<std::uint32_t>(index / call.elems);
    hang.token =
        static_cast<std::uint32_t>((index % call.elems) / static_cast<std::uint64_t>(call.hidden));
  }
  return hang;
}

void FlashInferLegacyKernels::reset() {
  reset_on_every_rank(bootstrap_, "FlashInfer older Lamport", [this] {
    workspaces_.clear();
    current_ = nullptr;
  });
}

}  // namespace fusioncheck::adapters::fi
