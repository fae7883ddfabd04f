// Launch validation and names; plain C++ so the CPU tests can exercise it without a GPU.
#include "fusioncheck/kernels/validate.hpp"

#include <cmath>
#include <cstdint>
#include <string>

namespace fusioncheck::kernels {
namespace {

[[noreturn]] void refuse(const std::string& what) { throw InvalidLaunch(what); }

void require_pointer(const void* p, const char* name, const FusedParams& params) {
  if (p == nullptr)
    refuse(std::string(name) + " is null but pattern " + std::string(pattern_name(params.pattern)) +
           " needs it");
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
    refuse(std::string(name) + " is not 16-byte aligned (the kernels move 16-byte vectors)");
}

void validate_common(const FusedParams& p, const LaunchLimits& limits) {
  if (!protocol::is_supported_rank_count(p.ranks))
    refuse("ranks=" + std::to_string(p.ranks) +
           " is not supported: instances exist for 2, 4, 8 and 16");
  if (p.ranks != limits.workspace_ranks)
    refuse("ranks=" + std::to_string(p.ranks) + " but the workspace was built for " +
           std::to_string(limits.workspace_ranks));
  if (p.rank < 0 || p.rank >= p.ranks)
    refuse("rank=" + std::to_string(p.rank) + " is outside [0, " + std::to_string(p.ranks) + ")");
  if (p.dtype != DType::f16 && p.dtype != DType::bf16)
    refuse("dtype=" + std::string(dtype_name(p.dtype)) +
           ": inputs are f16 or bf16 (f32 only as the Lamport element)");
  if (p.tokens < 1) refuse("tokens=" + std::to_string(p.tokens) + " must be >= 1");
  if (p.hold_ns > kMaxInjectedDelayNs)
    refuse("hold_ns=" + std::to_string(p.hold_ns) + " exceeds " +
           std::to_string(kMaxInjectedDelayNs));
  if (p.hidden < kHiddenMultiple || p.hidden % kHiddenMultiple != 0)
    refuse("hidden=" + std::to_string(p.hidden) + " must be a positive multiple of " +
           std::to_string(kHiddenMultiple) + " (the 16-byte vector width)");
  if (pattern_block_scaled_fp8(p.pattern))
    refuse("pattern " + std::string(pattern_name(p.pattern)) +
           " is not implemented by these kernels (FlashInfer's allreduce fusion runs it)");
  if (p.pattern == Pattern::nvfp4 && p.hidden % kNvfp4BlockSize != 0)
    refuse("hidden=" + std::to_string(p.hidden) + " must be a multiple of 16 for nvfp4");
  if (static_cast<std::uint64_t>(p.tokens) * static_cast<std::uint64_t>(p.hidden) >= (1ull << 40))
    refuse("tokens * hidden is too large");
  if (p.pattern == Pattern::nvfp4 && limits.compute_capability != 0 &&
      limits.compute_capability < 100)
    refuse(
        "pattern nvfp4 needs sm_100 or sm_120 (FP4 conversion instructions); this device is sm_" +
        std::to_string(limits.compute_capability));
  if (!(p.eps >= 0.0f) || !std::isfinite(p.eps)) refuse("eps must be finite and >= 0");
  if (!std::isfinite(p.weight_bias)) refuse("weight_bias must be finite");
  if (p.pattern == Pattern::fp8_static &&
      !(std::isfinite(p.fp8_inv_scale) && p.fp8_inv_scale > 0.0f))
    refuse("fp8_inv_scale must be finite and > 0");
  if (p.pattern == Pattern::nvfp4 &&
      !(std::isfinite(p.nvfp4_global_scale) && p.nvfp4_global_scale > 0.0f))
    refuse("nvfp4_global_scale must be finite and > 0");
  if (p.spin_budget_cycles == 0) refuse("spin_budget_cycles must be > 0");
  if (p.max_blocks < 0) refuse("max_blocks must be >= 0");
  if (p.delay_max_ns > kMaxInjectedDelayNs)
    refuse("delay_max_ns=" + std::to_string(p.delay_max_ns) + " exceeds " +
           std::to_string(kMaxInjectedDelayNs) + " (delays must stay far below the spin budget)");

  if (!p.write_norm_out) refuse("every pattern of these kernels writes norm_out");
  require_pointer(p.input, "input", p);
  if (p.pattern == Pattern::allreduce) {
    require_pointer(p.allreduce_out, "allreduce_out", p);
    return;
  }
  if (p.allreduce_out != nullptr) require_pointer(p.allreduce_out, "allreduce_out", p);
  require_pointer(p.residual_in, "residual_in", p);
  require_pointer(p.gamma, "gamma", p);
  require_pointer(p.residual_out, "residual_out", p);
  require_pointer(p.norm_out, "norm_out", p);
  if (p.pattern == Pattern::fp8_static || p.pattern == Pattern::fp8_dynamic ||
      p.pattern == Pattern::nvfp4)
    require_pointer(p.quant_out, "quant_out", p);
  if (p.pattern == Pattern::fp8_dynamic || p.pattern == Pattern::nvfp4)
    if (p.scale_out == nullptr)
      refuse(std::string("scale_out is null but pattern ") + std::string(pattern_name(p.pattern)) +
             " needs it");
}

}  // namespace

void validate_oneshot(const FusedParams& p, const LaunchLimits& limits) {
  validate_common(p, limits);
  if (p.fp32_lamport != limits.fp32_lamport)
    refuse(std::string("fp32_lamport=") + (p.fp32_lamport ? "true" : "false") +
           " but the workspace's Lamport buffers hold " +
           (limits.fp32_lamport ? "fp32" : "16-bit") +
           " elements (their sentinel width must match, invariant 6)");
  const int elem_bytes = p.fp32_lamport ? 4 : dtype_bytes(p.dtype);
  const auto elems = static_cast<std::uint64_t>(p.tokens) * static_cast<std::uint64_t>(p.hidden);
  if (!protocol::fits_lamport_buffer(p.ranks, elems, elem_bytes, limits.comm_size))
    refuse("tokens=" + std::to_string(p.tokens) + " x hidden=" + std::to_string(p.hidden) +
           " x ranks=" + std::to_string(p.ranks) + " x " + std::to_string(elem_bytes) +
           " B exceeds the Lamport buffer (" + std::to_string(limits.comm_size) + " B)");
}

std::uint64_t twoshot_chunk_elems(int ranks, std::uint64_t elems) {
  const std::uint64_t vectors = elems / kHiddenMultiple;
  return (vectors + ranks - 1) / ranks * kHiddenMultiple;
}

// Two halves: the reduce-scatter slots (N chunks) in the first, the gathered rows (elems)
// in the second, at a fixed offset (see the two-shot kernel); N * chunk >= elems.
std::uint64_t twoshot_required_bytes(int ranks, std::uint64_t elems, DType dtype) {
  return 2 * static_cast<std::uint64_t>(ranks) * twoshot_chunk_elems(ranks, elems) *
         static_cast<std::uint64_t>(dtype_bytes(dtype));
}

void validate_twoshot(const FusedParams& p, const LaunchLimits& limits) {
  validate_common(p, limits);
  const auto elems = static_cast<std::uint64_t>(p.tokens) * static_cast<std::uint64_t>(p.hidden);
  const std::uint64_t need = twoshot_required_bytes(p.ranks, elems, p.dtype);
  if (need > limits.twoshot_bytes)
    refuse("two-shot needs " + std::to_string(need) + " B of data buffer for tokens=" +
           std::to_string(p.tokens) + " x hidden=" + std::to_string(p.hidden) +
           "; the workspace has " + std::to_string(limits.twoshot_bytes));
}

std::string describe(const HangRecord& r) {
  if (r.what == HangSite::host_bound_pcie)
    return "kernel hang: rank " + std::to_string(r.rank) + " call " + std::to_string(r.call_index) +
           ": still running when the host's bound expired (the kernel's polls have none), after " +
           std::to_string(r.cycles_waited) + " cycles; its staging half " + std::to_string(r.flag) +
           " still held +0 (not yet written) in the slot of peer " +
           std::to_string(r.awaited_slot) + " at token " + std::to_string(r.token) + ", " +
           std::to_string(r.counter) + " of that slot's 16-byte packs unwritten";
  if (r.what == HangSite::host_bound_counter)
    return "kernel hang: rank " + std::to_string(r.rank) + " call " + std::to_string(r.call_index) +
           ": still running when the host's bound expired (the kernel's polls have none), after " +
           std::to_string(r.cycles_waited) + " cycles; block " + std::to_string(r.block) +
           " awaited barrier count " + std::to_string(r.counter) + " from peer " +
           std::to_string(r.awaited_slot) + ", whose counter held " + std::to_string(r.flag);
  if (r.what == HangSite::host_bound_lamport || r.what == HangSite::host_bound_twoshot)
    return "kernel hang: rank " + std::to_string(r.rank) + " call " + std::to_string(r.call_index) +
           ": still running when the host's bound expired (the kernel's polls have none), after " +
           std::to_string(r.cycles_waited) + " cycles; " +
           (r.what == HangSite::host_bound_lamport
                ? "its Lamport data buffer still held the sentinel in the slot of peer " +
                      std::to_string(r.awaited_slot) + " at token " + std::to_string(r.token)
                : "the barrier flag of peer " + std::to_string(r.awaited_slot) + " for block " +
                      std::to_string(r.block) + " still held the previous value") +
           ", flag " + std::to_string(r.flag) + ", counter " + std::to_string(r.counter);
  const char* site =
      r.what == HangSite::lamport_poll      ? "polling the Lamport slot of peer"
      : r.what == HangSite::arrival_counter ? "waiting for block arrivals (counter)"
      : r.what == HangSite::twoshot_barrier ? "waiting for the two-shot barrier flag of peer"
      : r.what == HangSite::cluster_exchange
          ? "waiting for the partial sums of the other blocks of its cluster (counter: blocks a row)"
          : "unknown wait";
  std::string s = "kernel hang: rank " + std::to_string(r.rank) + " block " +
                  std::to_string(r.block) + " call " + std::to_string(r.call_index) + " token " +
                  std::to_string(r.token) + ", " + site;
  if (r.what != HangSite::arrival_counter && r.what != HangSite::cluster_exchange)
    s += " " + std::to_string(r.awaited_slot);
  s += ", flag " + std::to_string(r.flag) + ", counter/awaited " + std::to_string(r.counter) +
       ", after " + std::to_string(r.cycles_waited) + " cycles";
  return s;
}

std::string peer_access_problem(
    int my_rank, int my_device, const std::vector<GpuUuid>& gpu_of_rank,
    const std::function<std::optional<int>(const GpuUuid&)>& local_ordinal,
    const std::function<bool(int)>& can_access) {
  const GpuUuid& mine = gpu_of_rank.at(static_cast<std::size_t>(my_rank));
  for (std::size_t r = 0; r < gpu_of_rank.size(); ++r) {
    if (gpu_of_rank[r] == mine) continue;  // the same GPU: no peer access needed
    const std::optional<int> ordinal = local_ordinal(gpu_of_rank[r]);
    if (!ordinal)
      return "rank " + std::to_string(r) + "'s GPU is not visible to rank " +
             std::to_string(my_rank) +
             ": the ranks map each other's buffers (CUDA IPC), so every GPU of the job must be visible to every "
             "rank of a node (check CUDA_VISIBLE_DEVICES; ranks on other nodes cannot take part)";
    if (!can_access(*ordinal))
      return "GPU " + std::to_string(my_device) + " (rank " + std::to_string(my_rank) +
             ") has no peer access to GPU " + std::to_string(*ordinal) + " (rank " +
             std::to_string(r) +
             "): the Lamport kernels write into peers' memory and need P2P over NVLink or PCIe "
             "(see nvidia-smi topo -p2p w)";
  }
  return "";
}

}  // namespace fusioncheck::kernels
