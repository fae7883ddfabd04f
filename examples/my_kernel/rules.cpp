#include "rules.hpp"

#include <algorithm>
#include <bit>

#include "device_api.hpp"
#include "steps.hpp"

namespace my_kernel {
namespace {

namespace fk = fusioncheck::kernels;

}  // namespace

fusioncheck::gpu::KernelTraits traits() {
  fusioncheck::gpu::KernelTraits t;
  t.fp32_lamport = false;    // 16-bit Lamport elements only
  t.unfused = false;         // no separate baseline
  t.forced_cluster = false;  // no cluster path: a row is one block
  t.twoshot = false;         // one-shot only
  t.patterns = {fk::Pattern::allreduce, fk::Pattern::residual_rmsnorm};
  return t;
}

std::vector<fp::Mutant> mutants() { return {std::begin(kMutants), std::end(kMutants)}; }

std::string refusal(const fk::FusedParams& p, bool twoshot, fp::Mutant mutant,
                    std::uint64_t comm_size) {
  const std::string me = "the example kernel (examples/my_kernel)";
  if (twoshot) return me + " is one-shot only";
  if (p.ranks < fp::kMinRanks || p.ranks > fp::kMaxRanks)
    return me + " runs 2 to 16 ranks, not " + std::to_string(p.ranks);
  if (p.dtype != fk::DType::bf16 && p.dtype != fk::DType::f16)
    return me + ": inputs are bf16 or f16";
  if (p.fp32_lamport) return me + " has 16-bit Lamport elements only";
  if (p.pattern != fk::Pattern::allreduce && p.pattern != fk::Pattern::residual_rmsnorm)
    return me + " runs allreduce and residual_rmsnorm only, not pattern " +
           std::string(fk::pattern_name(p.pattern));
  if (p.cluster != fk::ClusterMode::automatic)
    return me + " has no cluster path to force on or off";
  if (p.tokens < 1) return me + ": tokens must be positive";
  // Rows of 16-byte vectors in pairs: hidden / 8 vectors, slots 32-byte aligned.
  if (p.hidden < 16 || p.hidden % 16 != 0) return me + ": hidden must be a positive multiple of 16";
  if (mutant != fp::Mutant::none && p.dtype != fk::DType::bf16)
    return me + ": its mutants are built for bf16 only";
  const std::uint64_t elems =
      static_cast<std::uint64_t>(p.tokens) * static_cast<std::uint64_t>(p.hidden);
  if (comm_size != 0 && !fp::fits_lamport_buffer(p.ranks, elems, 2, comm_size))
    return me + ": tokens x hidden beyond the prepared Lamport buffers (" +
           std::to_string(comm_size) + " bytes)";
  return "";
}

std::uint64_t comm_size_for(int ranks, std::uint64_t max_elems) {
  const std::uint64_t need =
      static_cast<std::uint64_t>(ranks) * std::max<std::uint64_t>(max_elems, 1) * 2;
  return std::max<std::uint64_t>(64u << 10, std::bit_ceil(need));
}

int grid_blocks(int tokens, int sm_count, int ranks_on_device, int max_blocks) {
  int share = std::max(1, sm_count / std::max(1, ranks_on_device));
  if (max_blocks > 0) share = std::min(share, max_blocks);
  return std::max(1, std::min(tokens, share));
}

int block_threads(int hidden) {
  const int vectors = std::max(1, hidden / 8);
  return std::min(kMaxThreads, (vectors + 31) / 32 * 32);
}

}  // namespace my_kernel
