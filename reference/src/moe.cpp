#include "fusioncheck/reference/moe.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace fusioncheck::reference {
namespace {

namespace el = elements;

// The generators' streams of one rank's MoE parts.
enum class Part : int { expert_rows = 0, token_rows = 1, scales = 2, routing = 3 };
int moe_stream(int rank, Part part) { return kMoeStreamBase + rank * 8 + static_cast<int>(part); }

constexpr std::uint64_t kDrop = 5, kPadding = 6;  // purposes of the routing draws
// Loops over this many elements and more run on several threads (OpenMP, where built with it):
// every element is computed alone, so the result does not depend on the split.
constexpr std::int64_t kParallel = 1 << 14;

// An exact term: m * 2^e with the value drawn at `value_index` of its stream and the exponent of
// the token's element `element` (shared with every rank's input of that element).
float exact_term(std::uint64_t stream_pre, std::uint64_t common_pre, std::uint64_t value_index,
                 std::uint64_t element, std::int64_t max_m) {
  const std::uint64_t h = el::element_hash(stream_pre, value_index);
  if (el::purpose_draw(h, el::kNegZero) % 64 == 0) return -0.0f;
  const auto e =
      static_cast<int>(el::purpose_draw(el::element_hash(common_pre, element), el::kExponent) % 10);
  const auto modulus = static_cast<std::uint64_t>(2 * max_m + 1);
  return el::exact_value(
      static_cast<std::int64_t>(el::purpose_draw(h, el::kValue) % modulus) - max_m, e);
}

// A scale: 1 or 2 for exact inputs, else in (0, 1] with 24 random bits.
float scale_value(std::uint64_t stream_pre, std::uint64_t index, bool exact) {
  const std::uint64_t d = el::purpose_draw(el::element_hash(stream_pre, index), el::kValue);
  if (exact) return static_cast<float>(1 + d % 2);
  return static_cast<float>(((d >> 8) & 0xffffffu) + 1) * 0x1p-24f;
}

struct Draws {
  const MoeConfig& moe;
  DType dtype;
  int tokens, hidden, rank;
  bool exact;
  std::int64_t max_m;
  SpecialsSpec specials;
  std::uint64_t common_pre;
  std::uint64_t pre(Part part) const {
    return el::stream_prefix(specials.seed, specials.call_index, moe_stream(rank, part));
  }
  // Element `value_index` of a stream, for the token element `element`, as T bits.
  std::uint16_t value(std::uint64_t stream_pre, std::uint64_t value_index,
                      std::uint64_t element) const {
    const float v = exact ? exact_term(stream_pre, common_pre, value_index, element, max_m)
                          : el::random_element(specials, dtype, stream_pre, value_index);
    return el::float_to_bits16(dtype, v);
  }
};

std::uint16_t nan_bits(DType t) { return t == DType::f16 ? 0x7e00u : 0x7fc0u; }

void make_reduction(const Draws& d, MoeInputs& in) {
  const auto elems = static_cast<std::size_t>(d.tokens) * d.hidden;
  const auto experts = static_cast<std::size_t>(d.moe.experts);
  in.expert_rows = Tensor(d.dtype, experts * elems);
  auto rows = in.expert_rows.bits16();
  const std::uint64_t rows_pre = d.pre(Part::expert_rows);
  const auto count = static_cast<std::int64_t>(experts * elems);
#pragma omp parallel for schedule(static) if (count >= kParallel)
  for (std::int64_t k = 0; k < count; ++k) {
    const auto u = static_cast<std::size_t>(k);
    rows[u] = d.value(rows_pre, u, u % elems);
  }
  const std::uint64_t scales_pre = d.pre(Part::scales);
  in.reduction_scales.resize(experts * static_cast<std::size_t>(d.tokens));
  for (std::size_t i = 0; i < in.reduction_scales.size(); ++i)
    in.reduction_scales[i] = scale_value(scales_pre, i, d.exact);
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

void make_finalize(const Draws& d, MoeInputs& in) {
  make_routing(d, in);
  const auto hidden = static_cast<std::size_t>(d.hidden);
  const auto top_k = static_cast<std::size_t>(d.moe.experts);
  std::vector<int> token_of(static_cast<std::size_t>(in.rows), -1);
  for (std::size_t i = 0; i < in.permuted_index.size(); ++i)
    if (in.permuted_index[i] >= 0)
      token_of[static_cast<std::size_t>(in.permuted_index[i])] = static_cast<int>(i / top_k);
  in.expert_rows = Tensor(d.dtype, static_cast<std::size_t>(in.rows) * hidden);
  auto rows = in.expert_rows.bits16();
  const std::uint64_t rows_pre = d.pre(Part::expert_rows);
  const auto count = static_cast<std::int64_t>(token_of.size() * hidden);
#pragma omp parallel for schedule(static) if (count >= kParallel)
  for (std::int64_t k = 0; k < count; ++k) {
    const auto u = static_cast<std::size_t>(k);
    const std::size_t p = u / hidden, j = u % hidden;
    rows[u] = token_of[p] < 0
                  ? nan_bits(d.dtype)
                  : d.value(rows_pre, u, static_cast<std::size_t>(token_of[p]) * hidden + j);
  }
  if (d.moe.expert_scales) {
    in.topk_scales = Tensor(d.dtype, static_cast<std::size_t>(d.tokens) * top_k);
    const std::uint64_t scales_pre = d.pre(Part::scales);
    for (std::size_t i = 0; i < in.topk_scales.size(); ++i)
      in.topk_scales.bits16()[i] =
          el::float_to_bits16(d.dtype, scale_value(scales_pre, i, d.exact));
  }
}

// T(float(a) + float(b)) on bits.
std::uint16_t add_t(DType t, std::uint16_t a, std::uint16_t b) {
  return static_cast<std::uint16_t>(float_to_bits(t, bits_to_float(t, a) + bits_to_float(t, b)));
}
std::uint16_t scaled_t(DType t, std::uint16_t x, float scale) {
  return static_cast<std::uint16_t>(float_to_bits(t, bits_to_float(t, x) * scale));
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

MoeInputs make_moe_inputs(const MoeConfig& moe, DType dtype, int tokens, int hidden,
                          const ExactSpec& spec, const SpecialsSpec& specials, bool exact,
                          int rank) {
  validate(moe, dtype);
  // Each rank's reduced value within the exact bound: (4E + 1) terms of at most max_m.
  const std::int64_t bound = el::exact_max_m(dtype, spec.ranks) / (4 * moe.experts + 1);
  SpecialsSpec s = specials;
  s.seed = spec.seed;
  s.call_index = spec.call_index;
  const Draws d{moe,
                dtype,
                tokens,
                hidden,
                rank,
                exact,
                std::max<std::int64_t>(1, bound),
                s,
                el::stream_prefix(spec.seed, spec.call_index, el::kCommonStream)};
  MoeInputs in;
  if (moe.kind == MoeKind::reduction) make_reduction(d, in);
  else make_finalize(d, in);
  const bool token_rows = moe.kind == MoeKind::reduction || moe.shared_expert;
  if (token_rows) {
    const auto elems = static_cast<std::size_t>(tokens) * hidden;
    in.token_rows = Tensor(dtype, elems);
    const std::uint64_t pre = d.pre(Part::token_rows);
    auto out = in.token_rows.bits16();
    const auto count = static_cast<std::int64_t>(elems);
#pragma omp parallel for schedule(static) if (count >= kParallel)
    for (std::int64_t k = 0; k < count; ++k)
      out[static_cast<std::size_t>(k)] =
          d.value(pre, static_cast<std::size_t>(k), static_cast<std::size_t>(k));
  }
  return in;
}

Tensor moe_combine(const MoeConfig& moe, DType dtype, int tokens, int hidden, const MoeInputs& in) {
  validate(moe, dtype);
  const auto h = static_cast<std::size_t>(hidden);
  const auto elems = static_cast<std::size_t>(tokens) * h;
  const auto experts = static_cast<std::size_t>(moe.experts);
  Tensor out(dtype, elems);  // +0
  auto acc = out.bits16();
  const auto rows = in.expert_rows.bits16();
  const auto count = static_cast<std::int64_t>(elems);
  if (moe.kind == MoeKind::reduction) {
#pragma omp parallel for schedule(static) if (count >= kParallel)
    for (std::int64_t k = 0; k < count; ++k) {  // each element in the kernel's expert order
      const auto i = static_cast<std::size_t>(k);
      for (std::size_t e = 0; e < experts; ++e) {
        const float s = in.reduction_scales[e * static_cast<std::size_t>(tokens) + i / h];
        acc[i] = add_t(dtype, acc[i], scaled_t(dtype, rows[e * elems + i], s));
      }
      acc[i] = add_t(dtype, acc[i], in.token_rows.bits16()[i]);
    }
  } else {
#pragma omp parallel for schedule(static) if (count >= kParallel)
    for (std::int64_t k = 0; k < count; ++k) {
      const auto i = static_cast<std::size_t>(k);
      const std::size_t t = i / h, j = i % h;
      for (std::size_t k = 0; k < experts; ++k) {
        const std::int32_t p = in.permuted_index[t * experts + k];
        if (p == -1) continue;
        const std::uint16_t x = rows[static_cast<std::size_t>(p) * h + j];
        acc[i] =
            moe.expert_scales
                ? add_t(dtype, acc[i],
                        scaled_t(dtype, x,
                                 bits_to_float(dtype, in.topk_scales.bits16()[t * experts + k])))
                : add_t(dtype, acc[i], x);
      }
      if (moe.routed_scaling != 1.0f) acc[i] = scaled_t(dtype, acc[i], moe.routed_scaling);
      if (moe.shared_expert) acc[i] = add_t(dtype, acc[i], in.token_rows.bits16()[i]);
    }
  }
  for (std::uint16_t& bits : acc) bits = static_cast<std::uint16_t>(canonicalize(dtype, bits));
  return out;
}

}  // namespace fusioncheck::reference
