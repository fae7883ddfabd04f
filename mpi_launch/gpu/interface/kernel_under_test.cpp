#include "fusioncheck/gpu/kernel_under_test.hpp"

#include <algorithm>
#include <bit>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/lamport_checks.hpp"
#include "fusioncheck/kernels/baseline.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/validate.hpp"

namespace fusioncheck::gpu {

void KernelUnderTest::wait(cudaStream_t stream, const WaitBudget& budget) {
  (void)budget;  // our kernels' polls end on their own budget
  kernels::cuda_check(cudaStreamSynchronize(stream), "kernel");
}

ProtocolChecks& KernelUnderTest::protocol_checks(int rank) {
  if (!lamport_checks_) lamport_checks_ = std::make_unique<LamportChecks>(*this, rank);
  return *lamport_checks_;
}

protocol::Mutant our_mutant(const MutantId& mutant) {
  if (mutant.none()) return protocol::Mutant::none;
  const auto m = mutant.in_catalogue();
  const protocol::MutantInfo* info = m ? protocol::find_mutant_info(*m) : nullptr;
  if (info == nullptr || (info->layers & protocol::kInKernel) == 0)
    throw BadInput("--mutant " + mutant.id() + ": our kernels have no instance of this mutant");
  return *m;
}

std::vector<FamilyMutant> our_mutants() {
  std::vector<FamilyMutant> out;
  for (const protocol::MutantInfo& info : protocol::kMutantCatalogue)
    if ((info.layers & protocol::kInKernel) != 0) out.push_back(catalogue_entry(info.mutant));
  return out;
}

std::vector<MutantId> OurKernels::mutants() const {
  std::vector<MutantId> all;
  for (auto m : kernels::oneshot_mutants_compiled()) all.emplace_back(m);
  for (auto m : kernels::twoshot_mutants_compiled())
    if (std::find(all.begin(), all.end(), MutantId(m)) == all.end()) all.emplace_back(m);
  return all;
}

bool OurKernels::mutant_in_twoshot_only(const MutantId& m) const {
  const auto in = [&m](const auto& compiled) {
    return std::any_of(compiled.begin(), compiled.end(),
                       [&m](protocol::Mutant c) { return MutantId(c) == m; });
  };
  return in(kernels::twoshot_mutants_compiled()) && !in(kernels::oneshot_mutants_compiled());
}

std::string OurKernels::name() const {
  return mutant_ == protocol::Mutant::none
             ? std::string("fusioncheck kernels")
             : "fusioncheck kernels, mutant " + std::string(protocol::mutant_id(mutant_));
}

void OurKernels::prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) {
  // Room for the Lamport slots of every rank and for the two-shot data buffer.
  const std::uint64_t need = std::max<std::uint64_t>(
      static_cast<std::uint64_t>(bootstrap_.size()) * max_elems_per_rank * (fp32_lamport ? 4 : 2),
      kernels::twoshot_required_bytes(bootstrap_.size(), max_elems_per_rank, kernels::DType::bf16));
  const std::uint64_t comm_size = std::max<std::uint64_t>(64u << 10, std::bit_ceil(need));
  auto& slot = workspaces_[{comm_size, fp32_lamport}];
  if (!slot) {
    kernels::WorkspaceConfig config;
    config.ranks = bootstrap_.size();
    config.comm_size = comm_size;
    config.fp32_lamport = fp32_lamport;
    slot = std::make_unique<kernels::Workspace>(kernels::Workspace::create_ipc(bootstrap_, config));
  }
  current_ = slot.get();
}

kernels::LamportScan OurKernels::scan_lamport(const kernels::LamportScanRequest& request) {
  if (!scanner_) scanner_ = std::make_unique<kernels::DeviceLamportScanner>();
  return scanner_->scan(*current_, request);
}

void OurKernels::reset() {
  if (kernels::device_stuck() || cudaDeviceSynchronize() != cudaSuccess)
    throw kernels::CudaError("cudaDeviceSynchronize before reset");
  bootstrap_.barrier("workspace reset: all ranks idle");
  workspaces_.clear();
  current_ = nullptr;
  bootstrap_.barrier("workspace reset: all ranks released");
}

void OurKernels::launch(const kernels::FusedParams& params, bool twoshot, cudaStream_t stream) {
  // A mutant of one path leaves the other path correct (alternation still runs it).
  if (twoshot)
    kernels::launch_twoshot(params, *current_, stream,
                            mutant_in_twoshot_ ? mutant_ : protocol::Mutant::none);
  else
    kernels::launch_oneshot(params, *current_, stream,
                            mutant_in_oneshot_ ? mutant_ : protocol::Mutant::none);
}

// Ranks of one job share this workspace; NCCL is not used here (the property suite runs
// ranks that share a GPU too), so the baseline's allreduce is our one-shot allreduce-only.
void OurKernels::launch_unfused(const kernels::FusedParams& params, void* allreduced,
                                cudaStream_t stream) {
  kernels::launch_unfused_baseline(params, *current_, allreduced, stream, nullptr);
}

}  // namespace fusioncheck::gpu
