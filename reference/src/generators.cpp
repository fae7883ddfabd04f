#include "fusioncheck/reference/generators.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "fusioncheck/reference/remainder.hpp"
#include "fusioncheck/reference/vector_clones.hpp"

namespace fusioncheck::reference {
namespace {

using elements::splitmix64;

// One 64-bit draw per (seed, call, stream, element, purpose) (generator_elements.hpp).
// StreamDraws holds the steps that do not depend on the element, once per stream;
// block_draws the last two for a block of elements.
class StreamDraws {
 public:
  StreamDraws(std::uint64_t seed, std::uint64_t call, int stream)
      : prefix_(elements::stream_prefix(seed, call, stream)) {}
  std::uint64_t prefix() const { return prefix_; }

 private:
  std::uint64_t prefix_;
};

// The draws of a block of consecutive elements in a loop of their own: it vectorises (64-bit
// multiplies pay with AVX-512: vector_clones.hpp). The rest of an element (remainder, table
// look-up, conversion) does not vectorise and runs after it.
FUSIONCHECK_VECTOR_CLONES
void block_draws(std::uint64_t prefix, std::uint64_t first, std::size_t n, std::uint64_t purpose,
                 std::uint64_t* __restrict out) {
  for (std::size_t k = 0; k < n; ++k)
    out[k] = splitmix64(splitmix64(prefix ^ (first + k)) ^ purpose);
}

FUSIONCHECK_VECTOR_CLONES
void block_draws2(std::uint64_t prefix, std::uint64_t first, std::size_t n, std::uint64_t purpose_a,
                  std::uint64_t* __restrict out_a, std::uint64_t purpose_b,
                  std::uint64_t* __restrict out_b) {
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t h = splitmix64(prefix ^ (first + k));
    out_a[k] = splitmix64(h ^ purpose_a);
    out_b[k] = splitmix64(h ^ purpose_b);
  }
}

// Elements per block: the draws stay in L1 between the two loops.
constexpr std::size_t kBlock = 512;

// Tensors of this many elements or more are filled by several threads (OpenMP).
constexpr std::size_t kParallelElements = 1 << 14;

using elements::kCommonStream;
using elements::kExponent;
using elements::kNegZero;
using elements::kSpecial;
using elements::kValue;

// What one exact call's fills share: M and the modulus 2M + 1 of the value draw.
struct ExactShape {
  std::int64_t max_m;
  FastRemainder modulus;
};

template <DType T> ExactShape exact_shape(int ranks) {
  const std::int64_t max_m = elements::exact_max_m(T, ranks);
  return {max_m, FastRemainder(static_cast<std::uint64_t>(2 * max_m + 1))};
}

// Every value an exact element can take, as T bits, at index (draw % modulus) * 10 + e:
// the element's own formula (elements::exact_value), evaluated once per (T, modulus) instead
// of once per element. Kept per thread (a run uses one or two moduli).
template <DType T> const typename Element<T>::Bits* exact_values(const ExactShape& shape) {
  using Bits = typename Element<T>::Bits;
  struct Cache {
    std::uint64_t modulus = 0;
    std::vector<Bits> bits;
  };
  thread_local Cache cache;
  const std::uint64_t modulus = shape.modulus.divisor();
  if (cache.modulus != modulus) {
    cache.bits.resize(modulus * 10);
    for (std::uint64_t r = 0; r < modulus; ++r) {
      const auto m = static_cast<std::int64_t>(r) - shape.max_m;
      for (int e = 0; e < 10; ++e)
        cache.bits[r * 10 + static_cast<std::uint64_t>(e)] =
            Element<T>::from_float(elements::exact_value(m, e));
    }
    cache.modulus = modulus;
  }
  return cache.bits.data();
}

// The per-element exponent index e (exponent e - 6) of elements [first, first + count), at
// [0, count): the same for every stream of a call, so make_exact_inputs draws it once for
// all of them, and only where some stream needs it.
std::vector<std::uint8_t> exact_exponents(const ExactSpec& spec, std::size_t first,
                                          std::size_t count) {
  std::vector<std::uint8_t> e(count);
  const StreamDraws common(spec.seed, spec.call_index, kCommonStream);
  const auto blocks = static_cast<std::ptrdiff_t>((count + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t k0 = static_cast<std::size_t>(b) * kBlock, n = std::min(kBlock, count - k0);
    std::uint64_t draws[kBlock];
    block_draws(common.prefix(), first + k0, n, kExponent, draws);
    for (std::size_t k = 0; k < n; ++k) e[k0 + k] = static_cast<std::uint8_t>(draws[k] % 10);
  }
  return e;
}

// Elements [first, first + count) of one stream into out[first, first + count), with the
// call's exponents of those elements (exponents[0] is element first's).
template <DType T>
void fill_exact(const ExactSpec& spec, int stream, std::size_t first, std::size_t count,
                const std::uint8_t* exponents, typename Element<T>::Bits* out) {
  using Bits = typename Element<T>::Bits;
  const ExactShape shape = exact_shape<T>(spec.ranks);
  const Bits* const values = exact_values<T>(shape);
  const StreamDraws mine(spec.seed, spec.call_index, stream);
  const bool neg_zeros = elements::exact_has_neg_zeros(spec.with_neg_zero, stream);
  const auto neg_zero = static_cast<Bits>(neg_zero_bits(T));
  const auto blocks = static_cast<std::ptrdiff_t>((count + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t k0 = first + static_cast<std::size_t>(b) * kBlock,
                      n = std::min(kBlock, first + count - k0);
    std::uint64_t value[kBlock], negz[kBlock];
    const std::uint8_t* const e = exponents + (k0 - first);
    Bits* const o = out + k0;
    if (neg_zeros) {
      block_draws2(mine.prefix(), k0, n, kValue, value, kNegZero, negz);
      for (std::size_t k = 0; k < n; ++k)
        o[k] = negz[k] % 64 == 0 ? neg_zero : values[shape.modulus(value[k]) * 10 + e[k]];
    } else {
      block_draws(mine.prefix(), k0, n, kValue, value);
      for (std::size_t k = 0; k < n; ++k) o[k] = values[shape.modulus(value[k]) * 10 + e[k]];
    }
  }
}

// One stream of random_with_specials, elements [first, first + count), with T fixed (no
// per-element dispatch).
template <DType T>
void fill_random(const SpecialsSpec& spec, int stream, std::size_t first, std::size_t count,
                 typename Element<T>::Bits* out) {
  const StreamDraws draws(spec.seed, spec.call_index, stream);
  const auto blocks = static_cast<std::ptrdiff_t>((count + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t k0 = first + static_cast<std::size_t>(b) * kBlock,
                      n = std::min(kBlock, first + count - k0);
    std::uint64_t special[kBlock], value[kBlock];
    block_draws2(draws.prefix(), k0, n, kSpecial, special, kValue, value);
    for (std::size_t k = 0; k < n; ++k)
      out[k0 + k] = Element<T>::from_float(elements::random_value(spec, T, special[k], value[k]));
  }
}

template <DType T>
void fill_gamma(std::uint64_t seed, typename Element<T>::Bits* out, std::size_t hidden) {
  const StreamDraws draws(seed, 0, kGammaStream);
  for (std::size_t j0 = 0; j0 < hidden; j0 += kBlock) {
    const std::size_t n = std::min(kBlock, hidden - j0);
    std::uint64_t h[kBlock];
    block_draws(draws.prefix(), j0, n, kValue, h);
    for (std::size_t k = 0; k < n; ++k)
      out[j0 + k] = Element<T>::from_float(static_cast<float>(8 + h[k] % 8) / 8.0f *
                                           ((h[k] >> 3) & 1 ? 0.5f : 1.0f));
  }
}

// Calls fill.template operator()<T>(bits of t) for t's dtype T: a templated lambda that
// writes the tensor with T fixed (no per-element dispatch).
template <typename Fill> void typed_fill(Tensor& t, Fill&& fill) {
  switch (t.dtype()) {
    case DType::f16: fill.template operator()<DType::f16>(t.view<DType::f16>().data()); break;
    case DType::bf16: fill.template operator()<DType::bf16>(t.view<DType::bf16>().data()); break;
    case DType::f32: fill.template operator()<DType::f32>(t.view<DType::f32>().data()); break;
  }
}

// The elements a rank input (or, with complete = false, the residual) gets: all, or the
// rows of `partial`.
struct ElementRange {
  std::size_t first, count;
};
ElementRange partial_elements(const FusedConfig& c, const PartialInputs& partial, bool complete) {
  const auto hidden = static_cast<std::size_t>(c.hidden);
  if (complete) return {0, static_cast<std::size_t>(c.tokens) * hidden};
  if (partial.first_row < 0 || partial.rows < 0 || partial.first_row + partial.rows > c.tokens)
    throw std::invalid_argument("PartialInputs: rows outside the call's tokens");
  return {static_cast<std::size_t>(partial.first_row) * hidden,
          static_cast<std::size_t>(partial.rows) * hidden};
}

}  // namespace

Tensor exact_input(const ExactSpec& spec, int stream, int tokens, int hidden, DType dtype) {
  const auto count = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(hidden);
  Tensor out(dtype, count);
  const std::vector<std::uint8_t> exponents = exact_exponents(spec, 0, count);
  typed_fill(out, [&]<DType T>(auto* bits) {
    fill_exact<T>(spec, stream, 0, count, exponents.data(), bits);
  });
  return out;
}

Tensor exact_gamma(std::uint64_t seed, int hidden, DType dtype) {
  Tensor out(dtype, static_cast<std::size_t>(hidden));
  typed_fill(out, [&]<DType T>(auto* bits) { fill_gamma<T>(seed, bits, out.size()); });
  return out;
}

FusedInputs make_exact_inputs(const FusedConfig& c, std::uint64_t seed, std::uint64_t call_index,
                              bool with_neg_zero) {
  return make_exact_inputs(c, seed, call_index, with_neg_zero, PartialInputs{});
}

FusedInputs make_exact_inputs(const FusedConfig& c, std::uint64_t seed, std::uint64_t call_index,
                              bool with_neg_zero, const PartialInputs& partial) {
  const ExactSpec spec{seed, call_index, c.ranks, with_neg_zero};
  const auto count = static_cast<std::size_t>(c.tokens) * static_cast<std::size_t>(c.hidden);
  // The exponents of the elements some stream gets: all of them, or the asked rows only.
  bool any_whole = !partial.residual_rows_only;
  for (int r = 0; r < c.ranks; ++r) any_whole = any_whole || partial.complete(r);
  const ElementRange drawn = partial_elements(c, partial, any_whole);
  const std::vector<std::uint8_t> exponents = exact_exponents(spec, drawn.first, drawn.count);
  const auto exponents_of = [&](const ElementRange& range) {
    return exponents.data() + (range.first - drawn.first);
  };
  FusedInputs in;
  for (int r = 0; r < c.ranks; ++r) {
    const ElementRange range = partial_elements(c, partial, partial.complete(r));
    in.rank_inputs.emplace_back(c.dtype, count);
    typed_fill(in.rank_inputs.back(), [&]<DType T>(auto* bits) {
      fill_exact<T>(spec, r, range.first, range.count, exponents_of(range), bits);
    });
  }
  const ElementRange residual = partial_elements(c, partial, !partial.residual_rows_only);
  in.residual_in = Tensor(c.dtype, count);
  typed_fill(in.residual_in, [&]<DType T>(auto* bits) {
    fill_exact<T>(spec, kResidualStream, residual.first, residual.count, exponents_of(residual),
                  bits);
  });
  in.gamma = exact_gamma(seed, c.hidden, c.dtype);
  return in;
}

Tensor random_with_specials(const SpecialsSpec& spec, int stream, int tokens, int hidden,
                            DType dtype) {
  const auto count = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(hidden);
  Tensor out(dtype, count);
  typed_fill(out, [&]<DType T>(auto* bits) { fill_random<T>(spec, stream, 0, count, bits); });
  return out;
}

FusedInputs make_random_inputs(const FusedConfig& c, const SpecialsSpec& spec) {
  return make_random_inputs(c, spec, PartialInputs{});
}

FusedInputs make_random_inputs(const FusedConfig& c, const SpecialsSpec& spec,
                               const PartialInputs& partial) {
  const auto count = static_cast<std::size_t>(c.tokens) * static_cast<std::size_t>(c.hidden);
  FusedInputs in;
  for (int r = 0; r < c.ranks; ++r) {
    const ElementRange range = partial_elements(c, partial, partial.complete(r));
    in.rank_inputs.emplace_back(c.dtype, count);
    typed_fill(in.rank_inputs.back(), [&]<DType T>(auto* bits) {
      fill_random<T>(spec, r, range.first, range.count, bits);
    });
  }
  const ElementRange residual = partial_elements(c, partial, !partial.residual_rows_only);
  in.residual_in = Tensor(c.dtype, count);
  typed_fill(in.residual_in, [&]<DType T>(auto* bits) {
    fill_random<T>(spec, kResidualStream, residual.first, residual.count, bits);
  });
  in.gamma = exact_gamma(spec.seed, c.hidden, c.dtype);
  return in;
}

Tensor naive_exact_allreduce(const FusedInputs& in, DType dtype) {
  const std::size_t count = in.residual_in.size();
  Tensor out(dtype, count);
  for (std::size_t i = 0; i < count; ++i) {
    double sum = 0.0;
    for (const Tensor& t : in.rank_inputs)
      sum += bits_to_float(dtype, canonicalize(dtype, t.bits_at(i)));
    out.set_value(i, static_cast<float>(sum));
  }
  return out;
}

}  // namespace fusioncheck::reference
