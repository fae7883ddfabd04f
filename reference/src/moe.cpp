#include "fusioncheck/reference/moe.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace fusioncheck::reference {
namespace {

namespace el = elements;
namespace me = moe_elements;
using me::Part;

constexpr std::uint64_t kDrop = 5, kPadding = 6;  // purposes of the routing draws
// Loops over this many elements and more run on several threads (OpenMP, where built with it):
// every element is computed alone, so the result does not depend on the split.
constexpr std::int64_t kParallel = 1 << 14;

struct Draws {
  const MoeConfig& moe;
  int tokens, hidden, rank;
  me::Draws element;
  ExactSpec spec;
  std::uint64_t pre(Part part) const { return moe_stream_prefix(spec, rank, part); }
};

void make_reduction(const Draws& d, bool rows_too, MoeInputs& in) {
  const auto elems = static_cast<std::size_t>(d.tokens) * d.hidden;
  const auto experts = static_cast<std::size_t>(d.moe.experts);
  if (rows_too) {
    in.expert_rows = Tensor(d.element.dtype, experts * elems);
    auto rows = in.expert_rows.bits16();
    const std::uint64_t rows_pre = d.pre(Part::expert_rows);
    const auto count = static_cast<std::int64_t>(experts * elems);
#pragma omp parallel for schedule(static) if (count >= kParallel)
    for (std::int64_t k = 0; k < count; ++k) {
      const auto u = static_cast<std::size_t>(k);
      rows[u] = d.element.value(rows_pre, u, u % elems);
    }
  }
  const std::uint64_t scales_pre = d.pre(Part::scales);
  in.reduction_scales.resize(experts * static_cast<std::size_t>(d.tokens));
  for (std::size_t i = 0; i < in.reduction_scales.size(); ++i)
    in.reduction_scales[i] = me::scale_value(scales_pre, i, d.element.exact);
}

// The permuted rows of a finalize call: a seeded permutation of [0, rows) whose first
// tokens x top_k entries are the (token, k) pairs' rows, about one in eight dropped (-1), and up
// to kMaxMoePaddedRows rows that no pair references.
void make_routing(const Draws& d, MoeInputs& in) {
  const std::uint64_t pre = d.pre(Part::routing);
  const std::size_t pairs = static_cast<std::size_t>(d.tokens) * d.moe.experts;
  const auto padding = static_cast<std::size_t>(
      el::purpose_draw(el::element_hash(pre, 0), kPadding) % (kMaxMoePaddedRows + 1));
  in.rows = static_cast<int>(pairs + padding);
  std::vector<std::int32_t> order(static_cast<std::size_t>(in.rows));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int32_t>(i);
  for (std::size_t i = order.size(); i > 1; --i) {  // Fisher-Yates
    const std::uint64_t r = el::purpose_draw(el::element_hash(pre, i), el::kValue) % i;
    std::swap(order[i - 1], order[r]);
  }
  in.permuted_index.assign(pairs, -1);
  for (std::size_t i = 0; i < pairs; ++i)
    if (el::purpose_draw(el::element_hash(pre, i), kDrop) % 8 != 0) in.permuted_index[i] = order[i];
}

void make_finalize(const Draws& d, bool rows_too, MoeInputs& in) {
  make_routing(d, in);
  const auto hidden = static_cast<std::size_t>(d.hidden);
  const auto top_k = static_cast<std::size_t>(d.moe.experts);
  if (rows_too) {
    const std::vector<int> token_of = moe_row_tokens(d.moe, in);
    in.expert_rows = Tensor(d.element.dtype, static_cast<std::size_t>(in.rows) * hidden);
    auto rows = in.expert_rows.bits16();
    const std::uint64_t rows_pre = d.pre(Part::expert_rows);
    const auto count = static_cast<std::int64_t>(token_of.size() * hidden);
#pragma omp parallel for schedule(static) if (count >= kParallel)
    for (std::int64_t k = 0; k < count; ++k) {
      const auto u = static_cast<std::size_t>(k);
      rows[u] = me::permuted_row_element(d.element, rows_pre, token_of.data(), hidden, u);
    }
  }
  if (d.moe.expert_scales) {
    in.topk_scales = Tensor(d.element.dtype, static_cast<std::size_t>(d.tokens) * top_k);
    const std::uint64_t scales_pre = d.pre(Part::scales);
    for (std::size_t i = 0; i < in.topk_scales.size(); ++i)
      in.topk_scales.bits16()[i] =
          el::float_to_bits16(d.element.dtype, me::scale_value(scales_pre, i, d.element.exact));
  }
}

}  // namespace

void validate(const MoeConfig& moe, DType dtype) {
  if (dtype == DType::f32)
    throw std::invalid_argument("MoE inputs: fp32 is not one of the kernel's element types");
  if (moe.experts < 1 || moe.experts > kMaxMoeExperts)
    throw std::invalid_argument("MoE inputs: " + std::to_string(moe.experts) +
                                " experts, not in [1, " + std::to_string(kMaxMoeExperts) + "]");
  if (!std::isfinite(moe.routed_scaling) || moe.routed_scaling <= 0.0f)
    throw std::invalid_argument("MoE inputs: routed scaling " + std::to_string(moe.routed_scaling) +
                                " is not finite and positive");
}

me::Draws moe_draws(const MoeConfig& moe, DType dtype, const ExactSpec& spec,
                    const SpecialsSpec& specials, bool exact) {
  validate(moe, dtype);
  // Each rank's reduced value within the exact bound: (4E + 1) terms of at most max_m.
  const std::int64_t bound = el::exact_max_m(dtype, spec.ranks) / (4 * moe.experts + 1);
  me::Draws d;
  d.dtype = dtype;
  d.exact = exact;
  d.max_m = std::max<std::int64_t>(1, bound);
  d.specials = specials;
  d.specials.seed = spec.seed;
  d.specials.call_index = spec.call_index;
  d.common_pre = el::stream_prefix(spec.seed, spec.call_index, el::kCommonStream);
  return d;
}

std::uint64_t moe_stream_prefix(const ExactSpec& spec, int rank, me::Part part) {
  return el::stream_prefix(spec.seed, spec.call_index, me::part_stream(rank, part));
}

std::vector<int> moe_row_tokens(const MoeConfig& moe, const MoeInputs& in) {
  const auto top_k = static_cast<std::size_t>(moe.experts);
  std::vector<int> token_of(static_cast<std::size_t>(in.rows), -1);
  for (std::size_t i = 0; i < in.permuted_index.size(); ++i)
    if (in.permuted_index[i] >= 0)
      token_of[static_cast<std::size_t>(in.permuted_index[i])] = static_cast<int>(i / top_k);
  return token_of;
}

MoeInputs make_moe_inputs(const MoeConfig& moe, DType dtype, int tokens, int hidden,
                          const ExactSpec& spec, const SpecialsSpec& specials, bool exact, int rank,
                          MoeParts parts) {
  const Draws d{moe, tokens, hidden, rank, moe_draws(moe, dtype, spec, specials, exact), spec};
  const bool rows_too = parts == MoeParts::all;
  MoeInputs in;
  if (moe.kind == MoeKind::reduction) make_reduction(d, rows_too, in);
  else make_finalize(d, rows_too, in);
  const bool token_rows = moe.kind == MoeKind::reduction || moe.shared_expert;
  if (token_rows && rows_too) {
    const auto elems = static_cast<std::size_t>(tokens) * hidden;
    in.token_rows = Tensor(dtype, elems);
    const std::uint64_t pre = d.pre(Part::token_rows);
    auto out = in.token_rows.bits16();
    const auto count = static_cast<std::int64_t>(elems);
#pragma omp parallel for schedule(static) if (count >= kParallel)
    for (std::int64_t k = 0; k < count; ++k)
      out[static_cast<std::size_t>(k)] =
          d.element.value(pre, static_cast<std::size_t>(k), static_cast<std::size_t>(k));
  }
  return in;
}

Tensor moe_combine(const MoeConfig& moe, DType dtype, int tokens, int hidden, const MoeInputs& in) {
  validate(moe, dtype);
  const auto h = static_cast<std::size_t>(hidden);
  const auto elems = static_cast<std::size_t>(tokens) * h;
  Tensor out(dtype, elems);
  auto acc = out.bits16();
  const auto count = static_cast<std::int64_t>(elems);
  if (moe.kind == MoeKind::reduction) {
    const me::ReductionView v{dtype,
                              moe.experts,
                              static_cast<std::size_t>(tokens),
                              h,
                              in.expert_rows.bits16().data(),
                              in.reduction_scales.data(),
                              in.token_rows.bits16().data()};
#pragma omp parallel for schedule(static) if (count >= kParallel)
    for (std::int64_t k = 0; k < count; ++k)
      acc[static_cast<std::size_t>(k)] = me::reduce_element(v, static_cast<std::size_t>(k));
  } else {
    const me::FinalizeView v{dtype,
                             moe.experts,
                             h,
                             in.expert_rows.bits16().data(),
                             in.permuted_index.data(),
                             moe.expert_scales ? in.topk_scales.bits16().data() : nullptr,
                             moe.routed_scaling,
                             moe.shared_expert ? in.token_rows.bits16().data() : nullptr};
#pragma omp parallel for schedule(static) if (count >= kParallel)
    for (std::int64_t k = 0; k < count; ++k)
      acc[static_cast<std::size_t>(k)] = me::finalize_element(v, static_cast<std::size_t>(k));
  }
  return out;
}

}  // namespace fusioncheck::reference
