#include "fusioncheck/gpu/moe_inputs.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "fusioncheck/gpu/device_inputs.hpp"

namespace fusioncheck::gpu {
namespace {

namespace ref = reference;

std::size_t align16(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

}  // namespace

ref::MoeConfig moe_config(const CallSpec& call, const KernelTraits& traits) {
  ref::MoeConfig moe;
  const bool finalize = !traits.variants.empty() &&
                        traits.variants.at(static_cast<std::size_t>(call.variant)).moe_finalize;
  moe.kind = finalize ? ref::MoeKind::finalize : ref::MoeKind::reduction;
  moe.experts = call.moe_experts;
  moe.expert_scales = call.moe_expert_scales;
  moe.shared_expert = call.moe_shared_expert;
  moe.routed_scaling = call.moe_routed_scaling;
  return moe;
}

MoeBuffers::MoeBuffers(const CaseLimits& limits) {
  const auto tokens = static_cast<std::size_t>(limits.max_tokens);
  const auto pairs = static_cast<std::size_t>(ref::kMaxMoeExperts) * tokens;
  const auto elems = static_cast<std::size_t>(limits.elems_per_call());
  auto make = [](Part& part, std::size_t bytes) {
    part.live = DeviceBuffer(align16(bytes));
    part.staged = DeviceBuffer(align16(bytes));
  };
  make(rows_, limits.moe_rows_capacity() * 2);
  make(scales_, pairs * 4);
  make(token_rows_, elems * 2);
  make(index_, pairs * 4);
  make(topk_scales_, pairs * 2);
  row_tokens_ =
      DeviceBuffer(align16((pairs + static_cast<std::size_t>(ref::kMaxMoePaddedRows)) * 4));
  reduction_ = DeviceBuffer(align16(elems * 2));
}

// `bound`: the most bytes a call of this spec holds in the part (its finalize rows vary with
// the draw). The PDL producer copies that many, so that a graph captured for one replay copies
// everything the next replay's inputs hold. Returns where the call's inputs go: the staged
// buffer (the call's own one filled with poison) or the call's own.
void* MoeBuffers::place(Part& part, std::size_t bytes, std::size_t bound, bool staged,
                        cudaStream_t stream) {
  part.bytes = align16(bound);
  if (bytes > bound || part.bytes > part.live.bytes())
    throw std::logic_error("a MoE input beyond its buffer (CaseLimits::moe_rows_capacity)");
  if (bytes == 0) return nullptr;
  if (staged) part.live.fill(0xFF, stream, part.bytes);  // NaN, and -1 in the routing rows
  return (staged ? part.staged : part.live).get();
}

void MoeBuffers::upload(Part& part, const void* host, std::size_t bytes, std::size_t bound,
                        bool staged, cudaStream_t stream) {
  if (void* dst = place(part, bytes, bound, staged, stream))
    cuda_check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream), "MoE upload");
}

void MoeBuffers::prepare(const GpuCase& c, const CallSpec& call, std::uint64_t call_index,
                         const KernelTraits& traits, mpi::MpiComm& comm, bool staged,
                         ref::FusedInputs& inputs, cudaStream_t stream) {
  const ref::MoeConfig moe = moe_config(call, traits);
  const ref::ExactSpec exact{c.seed, call_index, c.ranks, c.neg_zero_inputs};
  ref::SpecialsSpec specials;
  specials.with_neg_zero = c.neg_zero_inputs;
  if (inputs.rank_inputs.size() != static_cast<std::size_t>(c.ranks) || comm.size() != c.ranks)
    throw std::logic_error("MoE inputs: every rank's input is replaced, so all must be there");
  const int rank = comm.rank();
  // The scales and the routing from the host; the expert and token rows made on the GPU, which
  // reduces them to the rank's allreduce input there too (device_inputs.hpp).
  const ref::MoeInputs in =
      ref::make_moe_inputs(moe, c.dtype, call.tokens, c.hidden, exact, specials, call.exact_values,
                           rank, ref::MoeParts::small_only);
  const auto tokens = static_cast<std::size_t>(call.tokens);
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const auto experts = static_cast<std::size_t>(moe.experts);
  const bool finalize = moe.kind == ref::MoeKind::finalize;
  const bool token_rows = !finalize || moe.shared_expert;
  const std::size_t rows = finalize ? static_cast<std::size_t>(in.rows) : experts * tokens;
  const std::size_t rows_bound =
      finalize ? tokens * experts + static_cast<std::size_t>(ref::kMaxMoePaddedRows) : rows;
  upload(scales_, in.reduction_scales.data(), in.reduction_scales.size() * 4,
         finalize ? 0 : experts * tokens * 4, staged, stream);
  upload(index_, in.permuted_index.data(), in.permuted_index.size() * 4,
         finalize ? tokens * experts * 4 : 0, staged, stream);
  upload(topk_scales_, in.topk_scales.data(), in.topk_scales.bytes(),
         finalize && moe.expert_scales ? tokens * experts * 2 : 0, staged, stream);
  MoeOnDevice g;
  g.moe = moe;
  g.draws = ref::moe_draws(moe, c.dtype, exact, specials, call.exact_values);
  g.rows_pre = ref::moe_stream_prefix(exact, rank, ref::moe_elements::Part::expert_rows);
  g.token_rows_pre = ref::moe_stream_prefix(exact, rank, ref::moe_elements::Part::token_rows);
  g.tokens = call.tokens;
  g.hidden = c.hidden;
  g.rows = in.rows;
  g.expert_rows = static_cast<std::uint16_t*>(
      place(rows_, rows * hidden * 2, rows_bound * hidden * 2, staged, stream));
  g.token_rows =
      static_cast<std::uint16_t*>(place(token_rows_, token_rows ? tokens * hidden * 2 : 0,
                                        token_rows ? tokens * hidden * 2 : 0, staged, stream));
  g.reduction = static_cast<std::uint16_t*>(reduction_.get());
  g.reduction_scales = static_cast<const float*>((staged ? scales_.staged : scales_.live).get());
  g.permuted_index = static_cast<const std::int32_t*>((staged ? index_.staged : index_.live).get());
  g.topk_scales =
      static_cast<const std::uint16_t*>((staged ? topk_scales_.staged : topk_scales_.live).get());
  if (finalize) {
    const std::vector<int> row_tokens = ref::moe_row_tokens(moe, in);
    row_tokens_.upload(row_tokens.data(), row_tokens.size() * sizeof(int), stream);
    g.row_tokens = static_cast<const int*>(row_tokens_.get());
  }
  generate_moe_on_device(g, stream);
  // Each rank reduces its own expert outputs; the reductions travel (an eighth of the expert
  // rows' bytes and more), so no rank generates its peers' experts.
  ref::Tensor own(c.dtype, tokens * hidden);
  cuda_check(
      cudaMemcpyAsync(own.data(), reduction_.get(), own.bytes(), cudaMemcpyDeviceToHost, stream),
      "the MoE reduction's download");
  cuda_check(cudaStreamSynchronize(stream), "the MoE inputs' generation");
  std::vector<std::uint8_t> all(own.bytes() * static_cast<std::size_t>(c.ranks));
  comm.all_gather(own.data(), all.data(), own.bytes(), "every rank's MoE reduction");
  for (int r = 0; r < c.ranks; ++r) {
    ref::Tensor& dst = inputs.rank_inputs[static_cast<std::size_t>(r)];
    dst = ref::Tensor(c.dtype, own.size());
    std::memcpy(dst.data(), all.data() + own.bytes() * static_cast<std::size_t>(r), own.bytes());
  }
}

kernels::MoeParams MoeBuffers::params(const CallSpec& call, const KernelTraits& traits) const {
  const ref::MoeConfig moe = moe_config(call, traits);
  kernels::MoeParams p;
  p.experts = call.moe_experts;
  p.finalize = moe.kind == ref::MoeKind::finalize;
  p.routed_scaling = moe.routed_scaling;
  p.expert_rows = rows_.live.get();
  if (p.finalize) {
    p.permuted_index = static_cast<const std::int32_t*>(index_.live.get());
    p.topk_scales = moe.expert_scales ? topk_scales_.live.get() : nullptr;
    p.token_rows = moe.shared_expert ? token_rows_.live.get() : nullptr;
  } else {
    p.reduction_scales = static_cast<const float*>(scales_.live.get());
    p.token_rows = token_rows_.live.get();
    p.write_allreduce_out = call.moe_allreduce_out;
  }
  return p;
}

void MoeBuffers::add_producer_copies(kernels::PdlProducerCopies& copies) const {
  for (const Part* part : {&rows_, &scales_, &token_rows_, &index_, &topk_scales_}) {
    if (part->bytes == 0) continue;
    if (copies.count == kernels::PdlProducerCopies::kMax)
      throw std::logic_error("the PDL producer has no room for the MoE inputs");
    copies.copy[copies.count++] = {part->staged.get(), part->live.get(), part->bytes};
  }
}

}  // namespace fusioncheck::gpu
