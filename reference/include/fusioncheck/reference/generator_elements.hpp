#pragma once
// One element of the seeded generators (generators.hpp), written once for the host and the
// GPU (FC_HD): what a call's inputs are drawn from (ExactSpec, SpecialsSpec, the stream ids),
// the 64-bit draws, float -> fp16 / bf16 bits, and the value of an exact or a random element.
// generators.cpp builds its vectorising block loops from these pieces; the GPU suite calls
// exact_element / random_element per element on the device
// (mpi_launch/gpu/cases/device_inputs.cu) to make a rank's own input and the residual where the
// kernel reads them. No Eigen and no <cmath> here: nvcc compiles this header for the device.
// property_tests/reference/generators_test.cpp holds both to the plain definitions.
#include <bit>
#include <cstdint>

#include "fusioncheck/protocol/hd.hpp"
#include "fusioncheck/protocol/vocabulary.hpp"

namespace fusioncheck::reference {

// What a call's inputs are drawn from (generators.hpp has the whole-tensor generators).
// stream = the rank for rank inputs, kResidualStream / kGammaStream for the others.
inline constexpr int kResidualStream = -1;
inline constexpr int kGammaStream = -2;

struct ExactSpec {
  std::uint64_t seed = 0;
  std::uint64_t call_index = 0;
  int ranks = 2;
  bool with_neg_zero = true;  // ~1/64 of rank-input elements are -0
};

struct SpecialsSpec {
  std::uint64_t seed = 0;
  std::uint64_t call_index = 0;
  int specials_per_256 = 24;  // share of special values
  bool with_inf_nan = false;
  bool with_neg_zero = true;  // false: the signed-zero special is +0 only (a kernel that
                              // requires inputs free of -0, e.g. FlashInfer's older Lamport)
};

}  // namespace fusioncheck::reference

namespace fusioncheck::reference::elements {

using protocol::DType;

FC_HD std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}
FC_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// --- float -> 16-bit T, round to nearest even: Eigen's software conversions
// (Eigen/src/Core/arch/Default/Half.h and BFloat16.h, the path of a build without F16C),
// rewritten without branches: every case is computed and the right one selected, so that the
// reference's loops vectorise. A NaN keeps its sign and becomes the quiet NaN 0x7e00 / 0x7fc0.
// The subnormal path is one float addition, exact on the GPU as long as denormals are not
// flushed (no -ftz / --use_fast_math where this is compiled for the device).
FC_HD std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t bits = float_bits(f);
  const std::uint32_t sign = bits & 0x80000000u;
  const std::uint32_t u = bits ^ sign;
  // Inf or NaN (NaN -> the quiet NaN 0x7e00; its payload is dropped).
  const std::uint32_t inf_nan = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
  // Subnormal or zero result: one float add rounds to nearest even at the right place.
  constexpr std::uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  const std::uint32_t small = float_bits(bits_float(u) + bits_float(denorm_magic)) - denorm_magic;
  // Normal result: rebias the exponent and round to nearest even on the bits.
  const std::uint32_t normal = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;
  const std::uint32_t mag = u >= ((127u + 16u) << 23) ? inf_nan : u < (113u << 23) ? small : normal;
  return static_cast<std::uint16_t>(mag | (sign >> 16));
}

FC_HD std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t nan = ((u >> 16) & 0x8000u) | 0x7fc0u;  // NaN -> quiet NaN, sign kept
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// f16 or bf16 (the GPU suite's element types).
FC_HD std::uint16_t float_to_bits16(DType t, float f) {
  return t == DType::f16 ? float_to_half_bits(f) : float_to_bf16_bits(f);
}

// --- Draws: one 64-bit draw per (seed, call, stream, element, purpose), splitmix64 chained
// over seed ^ 0x5eed, then xor call, stream, element and purpose in turn.
inline constexpr std::uint64_t kValue = 1, kExponent = 2, kNegZero = 3, kSpecial = 4;  // purposes
inline constexpr int kCommonStream = 1000;  // draws shared by all streams (the exact exponent)

FC_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// The first three steps, which do not depend on the element: computed once per stream.
FC_HD std::uint64_t stream_prefix(std::uint64_t seed, std::uint64_t call, int stream) {
  return splitmix64(splitmix64(splitmix64(seed ^ 0x5eed) ^ call) ^
                    static_cast<std::uint64_t>(static_cast<std::int64_t>(stream)));
}
FC_HD std::uint64_t element_hash(std::uint64_t prefix, std::uint64_t element) {
  return splitmix64(prefix ^ element);
}
FC_HD std::uint64_t purpose_draw(std::uint64_t element_hash, std::uint64_t purpose) {
  return splitmix64(element_hash ^ purpose);
}

FC_HD int significand_bits(DType t) { return t == DType::f16 ? 11 : t == DType::bf16 ? 8 : 24; }

// --- Exact inputs (generators.hpp): m * 2^(e - 6) with |m| <= M = floor(2^p / (ranks + 1)),
// p = min(significand bits, 11), the exponent index e in [0, 10) shared by all streams.
FC_HD std::int64_t exact_max_m(DType t, int ranks) {
  const int p = significand_bits(t) < 11 ? significand_bits(t) : 11;
  return (std::int64_t{1} << p) / (ranks + 1);
}
// float(m) * 2^(e - 6) is exact for |m| < 2^11 (the product equals ldexp(m, e - 6)).
FC_HD float exact_value(std::int64_t m, int e) {
  return static_cast<float>(m) * bits_float(static_cast<std::uint32_t>(127 + e - 6) << 23);
}
// Rank inputs (stream >= 0) carry -0 on about 1/64 of their elements when asked.
FC_HD bool exact_has_neg_zeros(bool with_neg_zero, int stream) {
  return with_neg_zero && stream >= 0;
}

// Element k of an exact stream, as a float whose conversion to T is exact (-0.0f for the
// sentinel). stream_pre / common_pre: stream_prefix of the stream and of kCommonStream.
FC_HD float exact_element(std::uint64_t stream_pre, std::uint64_t common_pre, std::uint64_t k,
                          std::int64_t max_m, bool neg_zeros) {
  const std::uint64_t h = element_hash(stream_pre, k);
  if (neg_zeros && purpose_draw(h, kNegZero) % 64 == 0) return -0.0f;
  const auto e = static_cast<int>(purpose_draw(element_hash(common_pre, k), kExponent) % 10);
  const auto modulus = static_cast<std::uint64_t>(2 * max_m + 1);
  return exact_value(static_cast<std::int64_t>(purpose_draw(h, kValue) % modulus) - max_m, e);
}

// --- Random inputs with specials (generators.hpp).
FC_HD float largest_finite(DType t) {
  return t == DType::f16 ? 65504.0f : bits_float(t == DType::bf16 ? 0x7f7f0000u : 0x7f7fffffu);
}
FC_HD float smallest_subnormal(DType t) {
  return t == DType::f16 ? 0x1p-24f : t == DType::bf16 ? 0x1p-133f : bits_float(1u);
}

// A special value from a draw h: +-0, the smallest or a random subnormal of T, +-largest
// finite, an outlier, a value that rounds differently at different points, and inf / NaN
// when asked.
FC_HD float special_value(DType t, std::uint64_t h, bool with_inf_nan) {
  const float sign = (h & 1) ? -1.0f : 1.0f;
  const std::uint64_t kinds = with_inf_nan ? 8 : 6;
  switch ((h >> 1) % kinds) {
    case 0: return sign * 0.0f;
    case 1: return sign * smallest_subnormal(t);
    case 2: {  // a random subnormal of T
      const int sub_bits = significand_bits(t) - 1;
      const std::uint64_t span = (std::uint64_t{1} << (sub_bits < 20 ? sub_bits : 20)) - 1;
      return sign * smallest_subnormal(t) * static_cast<float>(1 + (h >> 8) % span);
    }
    case 3: return sign * largest_finite(t);
    case 4: return sign * (t == DType::f16 ? 2048.0f : 1048576.0f);  // outlier
    case 5: return sign * (1.0f + static_cast<float>((h >> 8) % 256) / 256.0f) * 0x1p-20f;
    case 6: return sign * bits_float(0x7f800000u);  // infinity
    default: return bits_float(0x7fc00000u);        // the quiet NaN
  }
}

// An element of T from its two draws (purposes kSpecial and kValue of its hash): a special
// value with probability specials_per_256 / 256, else a moderate value in [-4, 4) with 24
// random bits (most are not exact in T, so the rounding point shows in the result).
FC_HD float random_value(const SpecialsSpec& s, DType t, std::uint64_t special,
                         std::uint64_t value) {
  if (static_cast<int>(special % 256) < s.specials_per_256) {
    const float v = special_value(t, special >> 8, s.with_inf_nan);
    return !s.with_neg_zero && v == 0.0f ? 0.0f : v;  // -0 == 0: maps it to +0
  }
  return (static_cast<float>(value & 0xffffff) / 0x1p24f - 0.5f) * 8.0f;
}

FC_HD float random_element(const SpecialsSpec& s, DType t, std::uint64_t stream_pre,
                           std::uint64_t k) {
  const std::uint64_t h = element_hash(stream_pre, k);
  return random_value(s, t, purpose_draw(h, kSpecial), purpose_draw(h, kValue));
}

}  // namespace fusioncheck::reference::elements
