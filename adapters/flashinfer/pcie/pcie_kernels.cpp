// FlashInfer's PCIe allreduce behind KernelUnderTest, and its protocol's checks
// (pcie_kernels.hpp; docs/protocols.md, "PCIe sentinel protocol", invariants P1-P6).
#include "pcie_kernels.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"

namespace fusioncheck::adapters {
namespace fi {
namespace {

namespace k = kernels;

constexpr std::int64_t kMinNumel = 64 << 10;  // the smallest workspace: elements per rank
constexpr int kPackElems = 8;                 // 16-bit elements per 16-byte pack

std::uint64_t hash_words(const std::int32_t* w, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<std::uint32_t>(w[i])) * 1099511628211ull;
  return h;
}

}  // namespace

FlashInferPcieKernels::FlashInferPcieKernels(k::Bootstrap& bootstrap, const PcieInstance& instance)
    : bootstrap_(bootstrap), instance_(instance), ranks_(bootstrap.size()),
      variants_(flashinfer_pcie_variants(bootstrap.size())) {}

std::string FlashInferPcieKernels::name() const {
  return "FlashInfer PCIe allreduce (pcie_ipc_all_reduce.cuh, " + std::string(kSource) + ")" +
         (gpu::MutantId(instance_.mutant).none() ? std::string()
                                                 : ", patched: " + std::string(instance_.mutant));
}

std::vector<gpu::MutantId> FlashInferPcieKernels::mutants() const {
  std::vector<gpu::MutantId> out;
  for (const gpu::MutantId& m : flashinfer_pcie_patches())
    if (m != protocol::Mutant::pcie_tp2_half_from_payload || ranks_ == 2) out.push_back(m);
  return out;
}

std::vector<std::pair<gpu::MutantId, std::string>> FlashInferPcieKernels::mutants_not_built()
    const {
  return listed_not_built(kPciePatchesNotBuilt);
}

// A copy of the copy-engine ring changes only its variants: the kill table draws its
// flag-kernel variant that asks for four pieces.
int FlashInferPcieKernels::mutant_variant(const gpu::MutantId& m) const {
  const auto in_catalogue = m.in_catalogue();
  const protocol::MutantInfo* info =
      in_catalogue ? protocol::find_mutant_info(*in_catalogue) : nullptr;
  if (info == nullptr || (info->layers & protocol::kInSimCeRing) == 0) return -1;
  for (std::size_t v = 0; v < variants_.size(); ++v)
    if (variants_[v].copy_engine && variants_[v].kernel_variant == 4 &&
        variants_[v].pieces_hint == 4)
      return static_cast<int>(v);
  return -1;
}

void FlashInferPcieKernels::prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) {
  if (fp32_lamport) throw k::InvalidLaunch("FlashInfer's PCIe allreduce has no fp32 staging");
  if (ranks_ != 2 && ranks_ != 4 && ranks_ != 8)
    throw k::InvalidLaunch("FlashInfer's PCIe allreduce runs on 2, 4 or 8 ranks, not " +
                           std::to_string(ranks_));
  const auto numel = static_cast<std::int64_t>(
      std::bit_ceil(std::max<std::uint64_t>(kMinNumel, max_elems_per_rank)));
  auto& slot = workspaces_[numel];
  if (!slot) slot = std::make_unique<PcieWorkspace>(bootstrap_, instance_, numel);  // collective
  current_ = slot.get();
}

void FlashInferPcieKernels::launch(const k::FusedParams& p, bool twoshot, cudaStream_t stream) {
  if (current_ == nullptr)
    throw k::InvalidLaunch("FlashInfer's PCIe allreduce: launch before prepare");
  if (const std::string why = flashinfer_pcie_refusal(p, twoshot); !why.empty())
    throw k::InvalidLaunch(why);
  if (p.ranks != ranks_ || p.rank != ws().rank())
    throw k::InvalidLaunch(
        "FlashInfer's PCIe allreduce: the call's ranks differ from the workspace's");
  const std::int64_t numel = static_cast<std::int64_t>(p.tokens) * p.hidden;
  if (numel > ws().max_numel())
    throw k::InvalidLaunch("tokens x hidden beyond the prepared workspace");
  const PcieVariant& v = variants_.at(static_cast<std::size_t>(p.variant));
  PcieCall c;
  c.nranks = p.ranks;
  c.rank = p.rank;
  c.bf16 = p.dtype == k::DType::bf16;
  c.input = p.input;
  c.output = p.allreduce_out;
  c.numel = numel;
  c.max_numel = ws().max_numel();
  c.max_blocks = kPcieMaxBlocks;
  c.blocks = v.blocks;
  c.threads = v.threads;
  c.variant = v.kernel_variant;
  c.pdl = p.use_pdl;
  c.slabs = ws().slabs();
  c.stream = stream;
  if (v.copy_engine && !ws().has_copy_engine())
    throw k::InvalidLaunch("this FlashInfer tree has no copy-engine ring (pcie_ipc_ce_ring.cuh)");
  const std::uint32_t call_index = calls_++;
  pause_before(p, call_index, stream, waiter_);
  const cudaError_t e = v.copy_engine ? ws().ce_api().launch(c, ws().ce_resources(), v.pieces_hint)
                                      : instance_.launch(c);
  if (e == cudaErrorInvalidValue)
    throw k::InvalidLaunch("FlashInfer's PCIe all_reduce refused " + v.info.name +
                           " (cudaErrorInvalidValue)");
  k::cuda_check(e, "FlashInfer PCIe all_reduce launch");
  PendingCall call;
  call.elems = static_cast<std::uint64_t>(numel);
  call.hidden = p.hidden;
  call.call_index = call_index;
  call.region = flashinfer_pcie_region(ranks_, v.kernel_variant);  // -1: the copy-engine ring
  if (call.region >= 0) {
    call.flag = static_cast<std::uint32_t>(ws().next_half[call.region]);
    ws().next_half[call.region] ^= 1;
  }
  waiter_.enqueued(call, stream);
}

void FlashInferPcieKernels::wait(cudaStream_t stream, const gpu::WaitBudget& budget) {
  waiter_.wait(
      stream, budget, ws().rank(),
      [this](const PendingCall& call, double seconds) { return record_hang(call, seconds); },
      [this] { release_stuck_call(); });
}

// Lets a stuck kernel finish: a value no sentinel test reads as unwritten (bf16 1.0, fp16 1.875;
// not -0, which a sentinel test without the sign bit still takes for +0) in every element of both
// scratch regions, and every barrier slot far past any generation; the runner then resets.
// A copy-engine ring call waits in one-thread kernels, each adding one to its slot's wait count
// before it spins: every flag slot is set far past the count read back, so one release also
// lets the waits queued behind the stuck one pass, and every binary flag is set to 1.
void FlashInferPcieKernels::release_stuck_call() {
  waiter_.fill(ws().region(1), 2 * ws().layout().scratch_bytes, 0x3F80u, 2);
  const PcieSignalLayout layout = ws().signal_layout();
  const int first = layout.phase_word(0, 0, 0);
  const int end = layout.phase_word(layout.phases, 0, 0);
  waiter_.fill(ws().slab() + 4ull * first, 4ull * (end - first), 0x3FFFFFFFu, 4);
  if (!ws().has_copy_engine()) return;
  const PcieLayout& l = ws().layout();
  const auto slots = static_cast<std::size_t>(l.ce_flag_slots);
  std::vector<std::int32_t> wait(slots);
  waiter_.read_back(wait.data(), ws().ce_area() + l.ce_flag_bytes + slots * 4, slots * 4,
                    "release: copy-engine wait counts");
  const std::vector<std::uint8_t> flags = flashinfer_pcie_ce_release_flags(wait, l.ce_flag_stride);
  waiter_.write(ws().ce_area(), flags.data(), flags.size(), "release: copy-engine flags");
  waiter_.fill(ws().binary_flags(), ws().binary_flag_bytes(), 1u, 4);
}

// The peer slot of the stuck call's half with the most unwritten (+0) packs, and its first.
k::HangRecord FlashInferPcieKernels::record_hang(const PendingCall& call, double seconds) {
  if (call.region < 0) return record_ce_hang(call, seconds);
  const int r = ws().rank();
  k::HangRecord hang = hang_base(r, call, seconds);
  hang.what = k::HangSite::host_bound_pcie;
  hang.flag = call.flag;
  const std::uint64_t rank_stride = static_cast<std::uint64_t>(ws().max_numel()) / kPackElems;
  const std::uint64_t packs = call.elems / kPackElems;
  // TP2 (2 ranks) places slot s at s x the call's packs inside a half of 2 x rank_stride packs.
  const std::uint64_t half = call.flag * (ranks_ == 2 ? 2 : ranks_) * rank_stride;
  std::uint64_t worst = 0;
  std::vector<std::uint8_t> data(packs * 16);  // one slot's packs of the call: small reads only
  for (int s = 0; s < ranks_; ++s) {
    if (s == r && ranks_ == 2) continue;  // TP2 never writes its own slot
    const std::uint64_t base =
        half + static_cast<std::uint64_t>(s) * (ranks_ == 2 ? packs : rank_stride);
    if ((base + packs) * 16 > ws().layout().scratch_bytes) continue;
    waiter_.read_back(data.data(), ws().region(call.region) + base * 16, data.size(),
                      "hang: a peer's staging slot");
    std::uint64_t unwritten = 0, first = packs;
    for (std::uint64_t i = 0; i < packs; ++i) {
      const std::uint8_t* pack = data.data() + i * 16;
      bool has_pos_zero = false;
      for (int e = 0; e < 16; e += 2) has_pos_zero |= pack[e] == 0 && pack[e + 1] == 0;
      if (has_pos_zero && unwritten++ == 0) first = i;
    }
    if (unwritten > worst) {
      worst = unwritten;
      hang.awaited_slot = static_cast<std::uint32_t>(s);
      hang.token =
          static_cast<std::uint32_t>(first * kPackElems / static_cast<std::uint64_t>(call.hidden));
    }
  }
  hang.counter = static_cast<std::uint32_t>(worst);
  return hang;
}

// The first flag slot whose count its waiter reached and its flag has not (the ring's slots
// are published by the previous rank, the handshake slot by the next).
k::HangRecord FlashInferPcieKernels::record_ce_hang(const PendingCall& call, double seconds) {
  k::HangRecord hang = hang_base(ws().rank(), call, seconds);
  hang.what = k::HangSite::host_bound_counter;
  const PcieLayout& l = ws().layout();
  const auto slots = static_cast<std::size_t>(l.ce_flag_slots);
  std::vector<std::int32_t> wait(slots);
  std::vector<std::uint8_t> flags(slots * static_cast<std::size_t>(l.ce_flag_stride));
  waiter_.read_back(wait.data(), ws().ce_area() + l.ce_flag_bytes + slots * 4, slots * 4,
                    "hang: copy-engine wait counts");
  waiter_.read_back(flags.data(), ws().ce_area(), flags.size(), "hang: copy-engine flags");
  for (std::size_t s = 0; s < slots; ++s) {
    std::int32_t flag = 0;
    std::memcpy(&flag, &flags[s * static_cast<std::size_t>(l.ce_flag_stride)], 4);
    if (flashinfer_pcie_ce_flag_reached(flag, wait[s])) continue;
    const int r = ws().rank();
    const bool handshake = static_cast<int>(s) == l.ce_handshake_slot;
    hang.block = static_cast<std::uint32_t>(s);
    hang.awaited_slot = static_cast<std::uint32_t>((r + (handshake ? 1 : ranks_ - 1)) % ranks_);
    hang.counter = static_cast<std::uint32_t>(wait[s]);
    hang.flag = static_cast<std::uint32_t>(flag);
    return hang;
  }
  return hang;  // a binary flag's wait, or a copy still running
}

std::vector<gpu::PollSiteTime> FlashInferPcieKernels::take_poll_profile() {
  if (instance_.profile == nullptr) return KernelUnderTest::take_poll_profile();  // refuses
  std::vector<PollSiteCycles> sites(static_cast<std::size_t>(kPollProfileBlocks) *
                                    kPollProfileSites);
  k::cuda_check(instance_.profile(sites.data()), "reading the PCIe kernel's poll profile");
  std::vector<gpu::PollSiteTime> out;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    if (sites[i].line == 0) continue;
    gpu::PollSiteTime t;
    t.block = static_cast<int>(i / kPollProfileSites);
    t.line = static_cast<int>(sites[i].line);
    t.polls = sites[i].polls;
    t.cycles = sites[i].cycles;
    out.push_back(t);
  }
  return out;
}

void FlashInferPcieKernels::reset() {
  reset_on_every_rank(bootstrap_, "FlashInfer PCIe", [this] {
    workspaces_.clear();
    current_ = nullptr;
  });
}

FlashInferPcieKernels::Signal FlashInferPcieKernels::read_signal() const {
  Signal s;
  const auto bytes = ws().read(0, ws().layout().signal_bytes);
  s.words.resize(bytes.size() / 4);
  std::memcpy(s.words.data(), bytes.data(), s.words.size() * 4);
  if (ws().has_copy_engine()) s.ce_wait = ws().read_ce().wait;
  return s;
}

void FlashInferPcieKernels::start_case() { state_ = read_signal(); }

std::vector<std::string> FlashInferPcieKernels::check_rank(const gpu::GpuCase& c, int first,
                                                           int count,
                                                           const gpu::CallEvidence& last) {
  (void)last;  // the PCIe protocol's state alone: no input evidence
  const PcieLayout& l = ws().layout();
  PcieStateAfterCalls s;
  s.layout = ws().signal_layout();
  s.before = state_.words;
  s.after = read_signal().words;
  for (int i = first; i < first + count; ++i) {
    s.variants.push_back(c.calls[static_cast<std::size_t>(i)].variant);
    s.numels.push_back(static_cast<std::int64_t>(c.calls[static_cast<std::size_t>(i)].tokens) *
                       c.hidden);
  }
  for (int region : {0, 1})
    if (flashinfer_pcie_region_sentinel_only(ranks_, region))
      s.regions[region] =
          ws().scan_region(l.signal_bytes + (region == 1 ? 0 : l.scratch_bytes), l.scratch_bytes);
  if (ws().has_copy_engine()) {
    PcieWorkspace::CeCounts ce = ws().read_ce();
    s.ce_handshake_slot = l.ce_handshake_slot;
    s.ce_wait_before = state_.ce_wait;
    s.ce_flags = std::move(ce.flags);
    s.ce_send = std::move(ce.send);
    s.ce_wait = std::move(ce.wait);
    s.ce_binary = std::move(ce.binary);
    state_.ce_wait = s.ce_wait;
  }
  s.guards_intact = ws().guards_intact();
  state_.words = s.after;
  return pcie_state_violations(s);
}

gpu::ProtocolWords FlashInferPcieKernels::words() const {
  gpu::ProtocolWords w;
  if (current_ == nullptr || state_.words.empty()) return w;
  const PcieLayout& l = ws().layout();
  const auto u = [](std::int32_t v) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(v));
  };
  w.words[0] = u(state_.words[l.block_state_word]);
  w.words[1] = u(state_.words[l.pack_state_word]);
  w.words[2] = u(state_.words[l.block_state_word + 1]);
  w.words[3] = u(state_.words[l.pack_state_word + 1]);
  const std::int32_t* generations = &state_.words[ws().signal_layout().flag_word(0)];
  w.words[4] = hash_words(generations, kPcieMaxBlocks);
  w.words[5] = u(*std::max_element(generations, generations + kPcieMaxBlocks));
  return w;
}

std::vector<std::string> FlashInferPcieKernels::check_across_ranks(
    const std::vector<gpu::ProtocolWords>& all) const {
  std::vector<std::string> out;
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r].words != all[0].words) {
      out.push_back(
          fmt::format("PCIe invariant P6: rank {}'s protocol state ({}) differs from "
                      "rank 0's ({})",
                      r, describe(all[r]), describe(all[0])));
      break;
    }
  return out;
}

std::string FlashInferPcieKernels::describe(const gpu::ProtocolWords& w) const {
  return fmt::format(
      "block region epoch {} arrivals {}, pack region epoch {} arrivals {}, "
      "barrier generations up to {} (hash {:#x})",
      w.words[0], w.words[2], w.words[1], w.words[3], w.words[5], w.words[4]);
}

}  // namespace fi

namespace {

// The copies as the kill table and the checks run them; the poll-profiled one only on request.
const fi::PcieInstance* find_pcie_instance(const gpu::MutantId& mutant,
                                           bool poll_profiled = false) {
  for (const fi::PcieInstance& i : fi::kPcieInstances)
    if (i.launch != nullptr && gpu::MutantId(i.mutant) == mutant &&
        (i.profile != nullptr) == poll_profiled)
      return &i;
  return nullptr;
}

}  // namespace

std::string flashinfer_pcie_unavailable_reason() {
  return find_pcie_instance(gpu::MutantId()) != nullptr
             ? ""
             : "this FlashInfer tree has no flashinfer/comm/pcie_ipc_all_reduce.cuh";
}

std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_pcie_patches_not_built() {
  return fi::listed_not_built(fi::kPciePatchesNotBuilt);
}

std::vector<gpu::MutantId> flashinfer_pcie_patches() {
  std::vector<gpu::MutantId> out;
  for (const fi::PcieInstance& i : fi::kPcieInstances)
    if (i.launch != nullptr && !gpu::MutantId(i.mutant).none() && i.profile == nullptr)
      out.emplace_back(i.mutant);
  return out;
}

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_pcie(kernels::Bootstrap& bootstrap,
                                                           const gpu::MutantId& patch) {
  if (const std::string why = flashinfer_pcie_unavailable_reason(); !why.empty())
    throw kernels::InvalidLaunch(why);
  const fi::PcieInstance* instance = find_pcie_instance(patch);
  if (instance == nullptr)
    throw kernels::InvalidLaunch("FlashInfer's PCIe allreduce has no patched copy for mutant " +
                                 patch.id());
  return std::make_unique<fi::FlashInferPcieKernels>(bootstrap, *instance);
}

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_pcie_poll_profiled(
    kernels::Bootstrap& bootstrap) {
  const fi::PcieInstance* instance = find_pcie_instance(gpu::MutantId(), true);
  if (instance == nullptr)
    throw kernels::InvalidLaunch(
        "this build has no poll-profiled copy of FlashInfer's PCIe allreduce (its header has no "
        "poll loop of a form the build rewrites)");
  return std::make_unique<fi::FlashInferPcieKernels>(bootstrap, *instance);
}

}  // namespace fusioncheck::adapters
