#include "moe_kernels.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "fusioncheck/adapters/flashinfer.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"

#include <fmt/format.h>

namespace fusioncheck::adapters::fi {
namespace {

namespace k = kernels;

}  // namespace

FlashInferMoeKernels::FlashInferMoeKernels(k::Bootstrap& bootstrap, Instances instances,
                                           const gpu::MutantId& patch)
    : bootstrap_(bootstrap), instances_(instances), patch_(patch) {}

FlashInferMoeKernels::~FlashInferMoeKernels() {
  if (plan_stream_ != nullptr) (void)cudaStreamDestroy(plan_stream_);
}

std::string FlashInferMoeKernels::name() const {
  return "FlashInfer MoE allreduce fusion (" + std::string(kSource) + ")" +
         (patch_.none() ? std::string() : ", patched: " + patch_.id());
}

gpu::KernelTraits FlashInferMoeKernels::traits() const { return flashinfer_moe_traits(); }

gpu::KernelTraits flashinfer_moe_traits() {
  gpu::KernelTraits t;
  t.moe = true;
  t.fp32_lamport = false;       // only with fp32 inputs
  t.unfused = false;            // no separate baseline on this workspace
  t.forced_cluster = false;     // it picks the cluster size itself
  t.twoshot = false;            // one-shot only (more than 128 tokens: a warning, still one-shot)
  t.fp32_accumulation = false;  // vec_add: every rank's addition rounded to T
  t.early_trigger = false;      // it triggers its dependents at its end
  t.outputs_visible_at_trigger = false;  // no fence before the trigger
  // NormOut is always compiled in (rms_gamma is required); NVFP4 on sm_100 and newer.
  t.patterns = {k::Pattern::residual_rmsnorm, k::Pattern::nvfp4};
  // Its API takes norm_out as optional (the header's "residual_out + quant_out" pattern), so the
  // draw leaves it out of NVFP4 calls too; the kernel still stores norm_out (dispatched from
  // rms_gamma): docs/flashinfer.md, the null norm_out finding.
  t.quant_without_norm_out = true;
  gpu::KernelVariant reduction;
  reduction.name = "moereduction_allreduce_fusion (expert outputs x scales + token input)";
  reduction.neg_zero_sentinel = true;
  gpu::KernelVariant finalize = reduction;
  finalize.name = "moefinalize_allreduce_fusion (permuted rows, top-k, shared expert)";
  finalize.moe_finalize = true;
  t.variants = {reduction, finalize};
  // A rank held before its polls: every block of it waits at the poll sites of the bf16 copy
  // with hooks (hold_at_polls), a plan set ahead of the call; any other hold is before its push.
  for (const MoeInstance& i : kMoeInstances)
    if (i.launch != nullptr && i.bf16 && i.poll_site_count > 0) {
      t.in_kernel_holds = {k::HoldPoint::before_poll};
      t.in_kernel_hold_dtypes = {k::DType::bf16};
    }
  return t;
}

std::vector<gpu::MutantId> FlashInferMoeKernels::mutants() const {
  std::vector<gpu::MutantId> out;
  for (const MoeInstance& i : kMoeInstances)
    if (i.launch != nullptr && !gpu::MutantId(i.mutant).none() &&
        std::find(out.begin(), out.end(), gpu::MutantId(i.mutant)) == out.end())
      out.emplace_back(i.mutant);
  return out;
}

std::vector<std::pair<gpu::MutantId, std::string>> FlashInferMoeKernels::mutants_not_built() const {
  return adapters::flashinfer_moe_patches_not_built();
}

void FlashInferMoeKernels::prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) {
  const std::uint64_t comm_size =
      lamport_comm_size(bootstrap_.size(), max_elems_per_rank, fp32_lamport);
  auto& slot = workspaces_[comm_size];
  // The two-shot data buffers of the fusion kernel's table are unused here: the smallest.
  if (!slot) slot = std::make_unique<FiWorkspace>(bootstrap_, comm_size, 256);
  current_ = slot.get();
}

void FlashInferMoeKernels::launch(const k::FusedParams& p, bool twoshot, cudaStream_t stream) {
  if (current_ == nullptr) throw k::InvalidLaunch("FlashInfer MoE adapter: launch before prepare");
  if (p.moe.experts <= 0)
    throw k::InvalidLaunch("FlashInfer's MoE kernels take MoE calls only (experts and their rows)");
  if (twoshot) throw k::InvalidLaunch("FlashInfer's MoE kernels are one-shot only");
  if (p.dtype != k::DType::bf16 && p.dtype != k::DType::f16)
    throw k::InvalidLaunch("FlashInfer MoE adapter: inputs are bf16 or f16");
  if (p.variant < 0 || p.variant > 1)
    throw k::InvalidLaunch("FlashInfer MoE adapter: launch variant " + std::to_string(p.variant) +
                           " (0: reduction, 1: finalize)");
  if (p.moe.finalize != (p.variant == 1))
    throw k::InvalidLaunch("FlashInfer MoE adapter: the call's inputs are for the other kernel");
  if (p.ranks != current_->ranks() || p.rank != current_->rank())
    throw k::InvalidLaunch("FlashInfer MoE adapter: the call's ranks differ from the workspace's");
  if (p.cluster != k::ClusterMode::automatic)
    throw k::InvalidLaunch("FlashInfer chooses its cluster size itself (no forced cluster path)");
  if (p.trigger != k::Trigger::at_end)
    throw k::InvalidLaunch("FlashInfer's MoE kernels trigger their dependents at their end only");
  if (cc_major_ == 0) {
    int device = 0;
    FC_CUDA_CHECK(cudaGetDevice(&device));
    FC_CUDA_CHECK(cudaDeviceGetAttribute(&cc_major_, cudaDevAttrComputeCapabilityMajor, device));
  }
  if (p.pattern == k::Pattern::nvfp4 && cc_major_ < 10)
    throw k::InvalidLaunch(
        "pattern nvfp4 needs sm_100 or newer (FlashInfer's conversion writes zeros below it)");
  if (p.pattern != k::Pattern::residual_rmsnorm && p.pattern != k::Pattern::nvfp4)
    throw k::InvalidLaunch("FlashInfer's MoE kernels have residual + RMSNorm (+ NVFP4) only, not " +
                           std::string(k::pattern_name(p.pattern)));
  const std::uint64_t elems = static_cast<std::uint64_t>(p.tokens) * p.hidden;
  if (!protocol::fits_lamport_buffer(p.ranks, elems, 2, current_->comm_size()))
    throw k::InvalidLaunch("tokens x hidden beyond the FlashInfer workspace (" +
                           std::to_string(current_->comm_size()) + " bytes per Lamport buffer)");

  FiMoeCall c;
  c.nranks = p.ranks;
  c.rank = p.rank;
  c.tokens = p.tokens;
  c.hidden = p.hidden;
  c.bf16 = p.dtype == k::DType::bf16;
  c.finalize = p.moe.finalize;
  c.workspace = current_->table();
  c.experts = p.moe.experts;
  c.expert_rows = p.moe.expert_rows;
  c.reduction_scales = p.moe.reduction_scales;
  c.token_rows = p.moe.token_rows;
  c.permuted_index = p.moe.permuted_index;
  c.topk_scales = p.moe.topk_scales;
  c.routed_scaling = p.moe.routed_scaling;
  c.residual_in = p.residual_in;
  c.gamma = p.gamma;
  c.allreduce_out = p.moe.write_allreduce_out ? p.allreduce_out : nullptr;
  c.residual_out = p.residual_out;
  c.norm_out = p.write_norm_out ? p.norm_out : nullptr;
  c.quant_out = p.quant_out;
  c.scale_out = p.scale_out;
  c.scale_factor = p.nvfp4_global_scale;
  c.sf_layout = p.nvfp4_layout == k::Nvfp4Layout::linear ? 2 : 0;  // LINEAR : SWIZZLED_128x4
  c.eps = p.eps;
  c.weight_bias = p.weight_bias;
  c.pdl = p.use_pdl;
  c.stream = stream;

  const MoeInstance& instance = instance_for(p);
  const std::uint32_t call_index = calls_++;
  pause_before(p, call_index, stream, waiter_);
  const bool held = p.hold_point == k::HoldPoint::before_poll && p.hold_ns > 0;
  if (held) hold_at_polls(instance, p.hold_ns, stream);
  char message[512] = {};
  const cudaError_t e = instance.launch(c, message, sizeof(message));
  if (held) hold_at_polls(instance, 0, stream);
  if (e == cudaErrorNotSupported && message[0] == '\0')
    throw k::InvalidLaunch("FlashInfer MoE instance has no kernel for this element type");
  throw_launch_error(e, message, "FlashInfer MoE allreduce fusion launch");
  PendingCall call;
  call.elems = elems;
  call.hidden = p.hidden;
  call.call_index = call_index;
  waiter_.enqueued(call, stream);
}

const MoeInstance& FlashInferMoeKernels::instance_for(const k::FusedParams& p) const {
  const bool bf16 = p.dtype == k::DType::bf16;
  const bool held = p.hold_point == k::HoldPoint::before_poll && p.hold_ns > 0;
  const MoeInstance* instance = bf16 ? instances_.bf16 : instances_.f16;
  if (bf16 && (p.delay_seed != 0 || held) && instances_.sync_bf16 != nullptr)
    instance = instances_.sync_bf16;
  if (instance == nullptr)
    throw k::InvalidLaunch("the patched FlashInfer MoE copies are built for bf16 only");
  if (held && instance->poll_site_count == 0)
    throw k::InvalidLaunch(
        "a rank held before its polls needs a copy of the MoE header with hooks (bf16)");
  return *instance;
}

// A rank held before its polls in one call: every block of it waits `ns` at each poll site of
// the instance (plans 1..), set on the call's stream before the call and cleared after it.
void FlashInferMoeKernels::hold_at_polls(const MoeInstance& instance, std::uint32_t ns,
                                         cudaStream_t stream) {
  if (instance.poll_site_count + 1 > kSyncDelayPlans)
    throw k::InvalidLaunch("the MoE copy has more poll sites than the hook has plans");
  for (int i = 0; i < instance.poll_site_count; ++i)
    throw_launch_error(
        instance.set_sync_delay(1 + i, ns > 0 ? instance.poll_sites[i] : 0, -1, ns, stream), "",
        "FlashInfer MoE held-rank plan");
}

void FlashInferMoeKernels::begin_case(const gpu::GpuCase& c) {
  if (current_ == nullptr) throw k::InvalidLaunch("FlashInfer MoE adapter: a case before prepare");
  // Every instance with hooks gets this rank's plan for the case (none without delays), on a
  // stream of its own, done before the first call is enqueued.
  for (const MoeInstance* instance : {instances_.bf16, instances_.sync_bf16}) {
    if (instance == nullptr || instance->sync_site_count == 0) continue;
    const gpu::SyncDelay delay =
        gpu::sync_delay_for(c.delay_seed, current_->rank(), c.delay_max_ns, instance->sync_sites,
                            instance->sync_site_count);
    auto [known, inserted] = sync_delays_.try_emplace(instance, delay);
    if (!inserted && known->second == delay) continue;
    if (plan_stream_ == nullptr)
      FC_CUDA_CHECK(cudaStreamCreateWithFlags(&plan_stream_, cudaStreamNonBlocking));
    throw_launch_error(instance->set_sync_delay(0, delay.line, delay.block, delay.ns, plan_stream_),
                       "", "FlashInfer MoE sync-delay plan");
    FC_CUDA_CHECK(cudaStreamSynchronize(plan_stream_));
    known->second = delay;
  }
}

std::vector<std::string> FlashInferMoeKernels::case_notes(const gpu::GpuCase& c) const {
  return flashinfer_moe_case_notes(c, patch_);
}

void FlashInferMoeKernels::wait(cudaStream_t stream, const gpu::WaitBudget& budget) {
  waiter_.wait(
      stream, budget, current_->rank(),
      [this](const PendingCall& call, double seconds) {
        return lamport_hang_record(*current_, waiter_, call, seconds);
      },
      [this] { release_lamport(*current_, waiter_); });
}

k::LamportScan FlashInferMoeKernels::scan_lamport(const k::LamportScanRequest& request) {
  if (!scanner_) scanner_ = std::make_unique<k::DeviceLamportScanner>();
  return scanner_->scan(current_->lamport_buffers(), request);
}

void FlashInferMoeKernels::reset() {
  // Only the failing case's workspace: the others hold what their last (passing) calls left,
  // a state their next calls start from as they would in any run.
  reset_on_every_rank(bootstrap_, "FlashInfer MoE workspace", [this] {
    if (current_ != nullptr) current_->restore_initial_state();
  });
}

}  // namespace fusioncheck::adapters::fi

namespace fusioncheck::adapters {
namespace {

// The original's plain and sync-delay instances share mutant none; a patched copy has one.
const fi::MoeInstance* find_moe_instance(const gpu::MutantId& mutant, bool bf16,
                                         bool sync = false) {
  for (const fi::MoeInstance& i : fi::kMoeInstances)
    if (i.launch != nullptr && gpu::MutantId(i.mutant) == mutant && i.bf16 == bf16 &&
        (!mutant.none() || (i.sync_site_count > 0) == sync))
      return &i;
  return nullptr;
}

}  // namespace

std::string flashinfer_moe_unavailable_reason() {
  return find_moe_instance(gpu::MutantId(), true) != nullptr
             ? ""
             : "this FlashInfer tree has no flashinfer/comm/trtllm_moe_allreduce_fusion.cuh";
}

std::vector<gpu::MutantId> flashinfer_moe_patches() {
  std::vector<gpu::MutantId> out;
  for (const fi::MoeInstance& i : fi::kMoeInstances)
    if (i.launch != nullptr && !gpu::MutantId(i.mutant).none()) out.emplace_back(i.mutant);
  return out;
}

std::vector<std::string> flashinfer_moe_case_notes(const gpu::GpuCase& c,
                                                   const gpu::MutantId& patch) {
  const bool bf16 = c.dtype == kernels::DType::bf16;
  const fi::MoeInstance* instance = find_moe_instance(patch, bf16);
  if (bf16 && c.delay_seed != 0 && patch.none())
    if (const fi::MoeInstance* hooked = find_moe_instance(patch, true, true)) instance = hooked;
  if (instance == nullptr) return {};
  return fi::sync_delay_notes(c, instance->sync_sites, instance->sync_site_count,
                              "trtllm_moe_allreduce_fusion.cuh");
}

std::vector<std::pair<gpu::MutantId, std::string>> flashinfer_moe_patches_not_built() {
  return fi::listed_not_built(fi::kMoePatchesNotBuilt);
}

std::unique_ptr<gpu::KernelUnderTest> make_flashinfer_moe(kernels::Bootstrap& bootstrap,
                                                          const gpu::MutantId& patch) {
  if (const std::string why = flashinfer_moe_unavailable_reason(); !why.empty())
    throw kernels::InvalidLaunch(why);
  const fi::MoeInstance* bf16 = find_moe_instance(patch, true);
  if (bf16 == nullptr)
    throw kernels::InvalidLaunch(
        "FlashInfer's MoE allreduce fusion has no patched copy for mutant " + patch.id());
  fi::FlashInferMoeKernels::Instances instances;
  instances.bf16 = bf16;
  instances.f16 = find_moe_instance(patch, false);
  if (patch.none()) {
    instances.sync_bf16 = find_moe_instance(patch, true, true);
  }
  return std::make_unique<fi::FlashInferMoeKernels>(bootstrap, instances, patch);
}

}  // namespace fusioncheck::adapters
