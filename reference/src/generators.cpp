#include "fusioncheck/reference/generators.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fusioncheck::reference {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One 64-bit draw per (seed, call, stream, element, purpose).
std::uint64_t draw(std::uint64_t seed, std::uint64_t call, int stream, std::uint64_t element,
                   std::uint64_t purpose) {
  std::uint64_t h = splitmix64(seed ^ 0x5eed);
  h = splitmix64(h ^ call);
  h = splitmix64(h ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(stream)));
  h = splitmix64(h ^ element);
  return splitmix64(h ^ purpose);
}

// draw() for every element of one (seed, call, stream): its first three mixing steps do not
// depend on the element, so they are done once. Same values as draw().
class StreamDraws {
 public:
  StreamDraws(std::uint64_t seed, std::uint64_t call, int stream)
      : prefix_(splitmix64(splitmix64(splitmix64(seed ^ 0x5eed) ^ call) ^
                           static_cast<std::uint64_t>(static_cast<std::int64_t>(stream)))) {}
  std::uint64_t at(std::uint64_t element, std::uint64_t purpose) const {
    return splitmix64(splitmix64(prefix_ ^ element) ^ purpose);
  }

 private:
  std::uint64_t prefix_;
};

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

template <DType T>
void fill_exact(const ExactSpec& spec, int stream, Tensor& out) {
  using Bits = typename Element<T>::Bits;
  const std::span<Bits> bits = out.view<T>();
  const int p = std::min(significand_bits(T), 11);
  const std::int64_t max_m = (std::int64_t{1} << p) / (spec.ranks + 1);
  const auto modulus = static_cast<std::uint64_t>(2 * max_m + 1);
  const StreamDraws mine(spec.seed, spec.call_index, stream);
  const StreamDraws common(spec.seed, spec.call_index, kCommonStream);
  const bool neg_zeros = spec.with_neg_zero && stream >= 0;
  const auto n = static_cast<std::ptrdiff_t>(bits.size());
#pragma omp parallel for schedule(static) if (bits.size() >= kParallelElements)
  for (std::ptrdiff_t k = 0; k < n; ++k) {
    const auto i = static_cast<std::uint64_t>(k);
    if (neg_zeros && mine.at(i, kNegZero) % 64 == 0) {
      bits[i] = static_cast<Bits>(neg_zero_bits(T));
      continue;
    }
    const auto e = static_cast<int>(common.at(i, kExponent) % 10);  // exponent e - 6
    const auto m = static_cast<std::int64_t>(mine.at(i, kValue) % modulus) - max_m;
    bits[i] = Element<T>::from_float(static_cast<float>(m) * kExactScale[e]);
  }
}

}  // namespace

Tensor exact_input(const ExactSpec& spec, int stream, int tokens, int hidden, DType dtype) {
  Tensor out(dtype, static_cast<std::size_t>(tokens) * static_cast<std::size_t>(hidden));
  switch (dtype) {
    case DType::f16: fill_exact<DType::f16>(spec, stream, out); break;
    case DType::bf16: fill_exact<DType::bf16>(spec, stream, out); break;
    case DType::f32: fill_exact<DType::f32>(spec, stream, out); break;
  }
  return out;
}

Tensor exact_gamma(std::uint64_t seed, int hidden, DType dtype) {
  Tensor out(dtype, static_cast<std::size_t>(hidden));
  for (std::size_t j = 0; j < out.size(); ++j) {
    const std::uint64_t h = draw(seed, 0, kGammaStream, j, kValue);
    const float v = static_cast<float>(8 + h % 8) / 8.0f * ((h >> 3) & 1 ? 0.5f : 1.0f);
    out.set_value(j, v);
  }
  return out;
}

FusedInputs make_exact_inputs(const FusedConfig& c, std::uint64_t seed, std::uint64_t call_index,
                              bool with_neg_zero) {
  const ExactSpec spec{seed, call_index, c.ranks, with_neg_zero};
  FusedInputs in;
  for (int r = 0; r < c.ranks; ++r)
    in.rank_inputs.push_back(exact_input(spec, r, c.tokens, c.hidden, c.dtype));
  in.residual_in = exact_input(spec, kResidualStream, c.tokens, c.hidden, c.dtype);
  in.gamma = exact_gamma(seed, c.hidden, c.dtype);
  return in;
}

Tensor random_with_specials(const SpecialsSpec& spec, int stream, int tokens, int hidden,
                            DType dtype) {
  const auto count = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(hidden);
  Tensor out(dtype, count);
  const StreamDraws draws(spec.seed, spec.call_index, stream);
  const auto n = static_cast<std::ptrdiff_t>(count);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::ptrdiff_t k = 0; k < n; ++k) {
    const auto i = static_cast<std::uint64_t>(k);
    const std::uint64_t h = draws.at(i, kSpecial);
    if (static_cast<int>(h % 256) < spec.specials_per_256) {
      const float v = special_value(dtype, h >> 8, spec.with_inf_nan);
      out.set_value(i, !spec.with_neg_zero && v == 0.0f ? 0.0f : v);  // -0 == 0: maps it to +0
      continue;
    }
    // Moderate values in [-4, 4) with 24 random bits: most are not exact in T, so the
    // rounding point and the summation order show in the result.
    const std::uint64_t v = draws.at(i, kValue);
    out.set_value(i, (static_cast<float>(v & 0xffffff) / 0x1p24f - 0.5f) * 8.0f);
  }
  return out;
}

FusedInputs make_random_inputs(const FusedConfig& c, const SpecialsSpec& spec) {
  FusedInputs in;
  for (int r = 0; r < c.ranks; ++r)
    in.rank_inputs.push_back(random_with_specials(spec, r, c.tokens, c.hidden, c.dtype));
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
