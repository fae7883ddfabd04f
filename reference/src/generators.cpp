#include "fusioncheck/reference/generators.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "fusioncheck/reference/remainder.hpp"
#include "fusioncheck/reference/vector_clones.hpp"

namespace fusioncheck::reference {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One 64-bit draw per (seed, call, stream, element, purpose): splitmix64 chained over
// seed ^ 0x5eed, then xor call, stream, element and purpose in turn. StreamDraws computes
// the first three steps (they do not depend on the element) once per stream; block_draws
// the last two for a block of elements.
class StreamDraws {
 public:
  StreamDraws(std::uint64_t seed, std::uint64_t call, int stream)
      : prefix_(splitmix64(splitmix64(splitmix64(seed ^ 0x5eed) ^ call) ^
                           static_cast<std::uint64_t>(static_cast<std::int64_t>(stream)))) {}
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
  for (std::size_t k = 0; k < n; ++k) out[k] = splitmix64(splitmix64(prefix ^ (first + k)) ^ purpose);
}

FUSIONCHECK_VECTOR_CLONES
void block_draws2(std::uint64_t prefix, std::uint64_t first, std::size_t n, std::uint64_t purpose_a,
                  std::uint64_t* __restrict out_a, std::uint64_t purpose_b, std::uint64_t* __restrict out_b) {
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

constexpr std::uint64_t kValue = 1, kExponent = 2, kNegZero = 3, kSpecial = 4;
constexpr int kCommonStream = 1000;  // draws shared by all streams (the per-element exponent)

int significand_bits(DType t) {
  switch (t) {
    case DType::f16: return 11;
    case DType::bf16: return 8;
    case DType::f32: return 24;
  }
  return 8;
}

float largest_finite(DType t) {
  switch (t) {
    case DType::f16: return 65504.0f;
    case DType::bf16: return bits_to_float(DType::bf16, 0x7f7f);
    case DType::f32: return std::numeric_limits<float>::max();
  }
  return 0.0f;
}

float smallest_subnormal(DType t) {
  switch (t) {
    case DType::f16: return 0x1p-24f;
    case DType::bf16: return 0x1p-133f;
    case DType::f32: return std::numeric_limits<float>::denorm_min();
  }
  return 0.0f;
}

float special_value(DType t, std::uint64_t h, bool with_inf_nan) {
  const float sign = (h & 1) ? -1.0f : 1.0f;
  const int kinds = with_inf_nan ? 8 : 6;
  switch ((h >> 1) % static_cast<std::uint64_t>(kinds)) {
    case 0: return sign * 0.0f;
    case 1: return sign * smallest_subnormal(t);
    case 2: {  // a random subnormal of T
      const int sub_bits = significand_bits(t) - 1;
      const auto k = 1 + static_cast<int>((h >> 8) % ((1ULL << std::min(sub_bits, 20)) - 1));
      return sign * smallest_subnormal(t) * static_cast<float>(k);
    }
    case 3: return sign * largest_finite(t);
    case 4: return sign * (t == DType::f16 ? 2048.0f : 1048576.0f);  // outlier
    case 5: return sign * std::ldexp(1.0f + static_cast<float>((h >> 8) % 256) / 256.0f, -20);
    case 6: return sign * std::numeric_limits<float>::infinity();
    default: return std::numeric_limits<float>::quiet_NaN();
  }
}

}  // namespace

namespace {

// 2^e for the exponents exact_input draws, e in [-6, 3]: m * 2^e with an integer |m| < 2^11 is
// exact in float, so the product equals std::ldexp(m, e) (which cost more than the rest of
// the element).
constexpr float kExactScale[10] = {0x1p-6f, 0x1p-5f, 0x1p-4f, 0x1p-3f, 0x1p-2f,
                                   0x1p-1f, 0x1p0f,  0x1p1f,  0x1p2f,  0x1p3f};

// What one exact call's fills share: M and the modulus 2M + 1 of the value draw.
struct ExactShape {
  std::int64_t max_m;
  FastRemainder modulus;
};

template <DType T>
ExactShape exact_shape(int ranks) {
  const int p = std::min(significand_bits(T), 11);
  const std::int64_t max_m = (std::int64_t{1} << p) / (ranks + 1);
  return {max_m, FastRemainder(static_cast<std::uint64_t>(2 * max_m + 1))};
}

// Every value an exact element can take, as T bits, at index (draw % modulus) * 10 + e:
// the element's own formula, T(float(m) * 2^(e-6)), evaluated once per (T, modulus) instead
// of once per element. Kept per thread (a run uses one or two moduli).
template <DType T>
const typename Element<T>::Bits* exact_values(const ExactShape& shape) {
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
        cache.bits[r * 10 + static_cast<std::uint64_t>(e)] = Element<T>::from_float(static_cast<float>(m) * kExactScale[e]);
    }
    cache.modulus = modulus;
  }
  return cache.bits.data();
}

// The per-element exponent index e (exponent e - 6) of elements [0, count): the same for
// every stream of a call, so make_exact_inputs draws it once for all of them.
std::vector<std::uint8_t> exact_exponents(const ExactSpec& spec, std::size_t count) {
  std::vector<std::uint8_t> e(count);
  const StreamDraws common(spec.seed, spec.call_index, kCommonStream);
  const auto blocks = static_cast<std::ptrdiff_t>((count + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t k0 = static_cast<std::size_t>(b) * kBlock, n = std::min(kBlock, count - k0);
    std::uint64_t draws[kBlock];
    block_draws(common.prefix(), k0, n, kExponent, draws);
    for (std::size_t k = 0; k < n; ++k) e[k0 + k] = static_cast<std::uint8_t>(draws[k] % 10);
  }
  return e;
}

// Elements [first, first + count) of one stream into out[first, first + count), with the
// call's exponents (indexed by element).
template <DType T>
void fill_exact(const ExactSpec& spec, int stream, std::size_t first, std::size_t count, const std::uint8_t* exponents,
                typename Element<T>::Bits* out) {
  using Bits = typename Element<T>::Bits;
  const ExactShape shape = exact_shape<T>(spec.ranks);
  const Bits* const values = exact_values<T>(shape);
  const StreamDraws mine(spec.seed, spec.call_index, stream);
  const bool neg_zeros = spec.with_neg_zero && stream >= 0;
  const auto neg_zero = static_cast<Bits>(neg_zero_bits(T));
  const auto blocks = static_cast<std::ptrdiff_t>((count + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t k0 = first + static_cast<std::size_t>(b) * kBlock, n = std::min(kBlock, first + count - k0);
    std::uint64_t value[kBlock], negz[kBlock];
    const std::uint8_t* const e = exponents + k0;
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
    const std::size_t k0 = first + static_cast<std::size_t>(b) * kBlock, n = std::min(kBlock, first + count - k0);
    std::uint64_t special[kBlock], value[kBlock];
    block_draws2(draws.prefix(), k0, n, kSpecial, special, kValue, value);
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t h = special[k];
      if (static_cast<int>(h % 256) < spec.specials_per_256) {
        const float v = special_value(T, h >> 8, spec.with_inf_nan);
        out[k0 + k] = Element<T>::from_float(!spec.with_neg_zero && v == 0.0f ? 0.0f : v);  // -0 == 0: maps it to +0
        continue;
      }
      // Moderate values in [-4, 4) with 24 random bits: most are not exact in T, so the
      // rounding point and the summation order show in the result.
      out[k0 + k] = Element<T>::from_float((static_cast<float>(value[k] & 0xffffff) / 0x1p24f - 0.5f) * 8.0f);
    }
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
      out[j0 + k] = Element<T>::from_float(static_cast<float>(8 + h[k] % 8) / 8.0f * ((h[k] >> 3) & 1 ? 0.5f : 1.0f));
  }
}

// Calls fill.template operator()<T>(bits of t) for t's dtype T: a templated lambda that
// writes the tensor with T fixed (no per-element dispatch).
template <typename Fill>
void typed_fill(Tensor& t, Fill&& fill) {
  switch (t.dtype()) {
    case DType::f16: fill.template operator()<DType::f16>(t.view<DType::f16>().data()); break;
    case DType::bf16: fill.template operator()<DType::bf16>(t.view<DType::bf16>().data()); break;
    case DType::f32: fill.template operator()<DType::f32>(t.view<DType::f32>().data()); break;
  }
}

// The elements a rank input gets: all, or the rows of `partial` (rank_complete).
struct ElementRange {
  std::size_t first, count;
};
ElementRange rank_elements(const FusedConfig& c, const PartialInputs& partial, int rank) {
  const auto hidden = static_cast<std::size_t>(c.hidden);
  if (partial.complete(rank)) return {0, static_cast<std::size_t>(c.tokens) * hidden};
  if (partial.first_row < 0 || partial.rows < 0 || partial.first_row + partial.rows > c.tokens)
    throw std::invalid_argument("PartialInputs: rows outside the call's tokens");
  return {static_cast<std::size_t>(partial.first_row) * hidden, static_cast<std::size_t>(partial.rows) * hidden};
}

}  // namespace

Tensor exact_input(const ExactSpec& spec, int stream, int tokens, int hidden, DType dtype) {
  const auto count = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(hidden);
  Tensor out(dtype, count);
  const std::vector<std::uint8_t> exponents = exact_exponents(spec, count);
  typed_fill(out, [&]<DType T>(auto* bits) { fill_exact<T>(spec, stream, 0, count, exponents.data(), bits); });
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

FusedInputs make_exact_inputs(const FusedConfig& c, std::uint64_t seed, std::uint64_t call_index, bool with_neg_zero,
                              const PartialInputs& partial) {
  const ExactSpec spec{seed, call_index, c.ranks, with_neg_zero};
  const auto count = static_cast<std::size_t>(c.tokens) * static_cast<std::size_t>(c.hidden);
  const std::vector<std::uint8_t> exponents = exact_exponents(spec, count);
  FusedInputs in;
  for (int r = 0; r < c.ranks; ++r) {
    const ElementRange range = rank_elements(c, partial, r);
    in.rank_inputs.emplace_back(c.dtype, count);
    typed_fill(in.rank_inputs.back(),
               [&]<DType T>(auto* bits) { fill_exact<T>(spec, r, range.first, range.count, exponents.data(), bits); });
  }
  in.residual_in = Tensor(c.dtype, count);
  typed_fill(in.residual_in,
             [&]<DType T>(auto* bits) { fill_exact<T>(spec, kResidualStream, 0, count, exponents.data(), bits); });
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

FusedInputs make_random_inputs(const FusedConfig& c, const SpecialsSpec& spec, const PartialInputs& partial) {
  const auto count = static_cast<std::size_t>(c.tokens) * static_cast<std::size_t>(c.hidden);
  FusedInputs in;
  for (int r = 0; r < c.ranks; ++r) {
    const ElementRange range = rank_elements(c, partial, r);
    in.rank_inputs.emplace_back(c.dtype, count);
    typed_fill(in.rank_inputs.back(),
               [&]<DType T>(auto* bits) { fill_random<T>(spec, r, range.first, range.count, bits); });
  }
  in.residual_in = random_with_specials(spec, kResidualStream, c.tokens, c.hidden, c.dtype);
  in.gamma = exact_gamma(spec.seed, c.hidden, c.dtype);
  return in;
}

Tensor naive_exact_allreduce(const FusedInputs& in, DType dtype) {
  const std::size_t count = in.residual_in.size();
  Tensor out(dtype, count);
  for (std::size_t i = 0; i < count; ++i) {
    double sum = 0.0;
    for (const Tensor& t : in.rank_inputs) sum += bits_to_float(dtype, canonicalize(dtype, t.bits_at(i)));
    out.set_value(i, static_cast<float>(sum));
  }
  return out;
}

}  // namespace fusioncheck::reference
