#pragma once
// Low-precision formats of the quantised outputs, and their rounding and saturation rules.
//
// FP8 E4M3 (OCP "E4M3FN", NVIDIA __nv_fp8_e4m3): S.EEEE.MMM, bias 7, no infinity,
// NaN = S.1111.111 (0x7f / 0xff), largest finite 448 (0x7e), smallest subnormal 2^-9.
// Encoding follows PTX `cvt.rn.satfinite.e4m3x2.f32`:
//   * round to nearest, ties to even (also between subnormals);
//   * satfinite: a finite value whose rounding would exceed 448 in magnitude, and +-inf,
//     become +-448 (0x7e / 0xfe); NaN stays NaN (0x7f, sign kept);
//   * -0 encodes as 0x80, +0 as 0x00.
//
// FP4 E2M1 (NVFP4 elements): S.EE.M, values {0, 0.5, 1, 1.5, 2, 3, 4, 6}, no inf, no NaN.
// Encoding follows `cvt.rn.satfinite.e2m1x2.f32`: round to nearest, ties to even; beyond
// 6 -> +-6. NaN has no encoding; this reference maps it to +6 (0x7) (assumption, marked
// as such: the property tests never feed NaN to the fp4 path).
#include <bit>
#include <cstddef>
#include <cstdint>

#include "fusioncheck/protocol/vocabulary.hpp"

namespace fusioncheck::reference {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE2m1Max = 6.0f;
inline constexpr std::uint8_t kE4m3NaN = 0x7f;

// rn, satfinite. Branch-free (the quantisers' row loops vectorise); property_tests compare
// it with the nearest-code oracle and with the former branchy definition.
inline std::uint8_t float_to_e4m3(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t u = bits & 0x7fffffffu;  // |x|
  // Subnormal range (|x| < 2^-6, multiples of 2^-9; code 8 is the first normal): adding 2^14,
  // whose ulp is 2^-9, rounds |x| to nearest even at 2^-9, and the bits above 2^14's count
  // the steps: nearbyint(|x| * 2^9).
  const std::uint32_t small = std::bit_cast<std::uint32_t>(std::bit_cast<float>(u) + 0x1p14f) -
                              std::bit_cast<std::uint32_t>(0x1p14f);
  // Normal range: round the float's 23 fraction bits to 3, to nearest even, on the bits; a
  // carry moves into the exponent as it should. Float exponent field E holds e + 127, the
  // e4m3 field e + 7, so the code is the rounded (E, fraction) pair minus 120 << 3.
  const std::uint32_t normal = ((u + 0x7ffffu + ((u >> 20) & 1u)) >> 20) - (120u << 3);
  // NaN stays NaN; at or beyond the largest finite value (inf included): +-448 (satfinite).
  const std::uint32_t mag = u > 0x7f800000u                               ? kE4m3NaN
                            : u >= std::bit_cast<std::uint32_t>(kE4m3Max) ? 0x7eu
                            : u < std::bit_cast<std::uint32_t>(0x1p-6f)   ? small
                                                                          : normal;
  return static_cast<std::uint8_t>(((bits >> 24) & 0x80u) | mag);
}
float e4m3_to_float(std::uint8_t code);
std::uint8_t float_to_e2m1(float x);  // rn, satfinite; 4-bit code in the low nibble
float e2m1_to_float(std::uint8_t code);

// Half the spacing of the format's grid around magnitude |v| (|v| within the finite range):
// the largest error round-to-nearest can make there. For e4m3 the spacing is
// 2^(max(e,-6)-3) with e = floor(log2|v|); for e2m1 it is 0.5 below 2, 1 in [2,4), 2 in [4,6].
float e4m3_half_spacing(float v);
float e2m1_half_spacing(float v);

// UE8M0: an unsigned 8-bit biased exponent, the scale 2^(code - 127) (OCP MX). Two users:
//
// MXFP8 (FlashInfer's kARResidualRMSNorm[Out]MXFP8Quant): per 32 consecutive elements of a
// token, sf = float_to_ue8m0_ceil(amax * (1.0f / 448)), the code of the smallest power of two
// >= its argument; the elements are e4m3(clamp(x * ue8m0_inverse(sf), +-448)) (satfinite).
//   float_to_ue8m0_ceil: 0 for v <= 0; a subnormal v rounds to code 0 (2^-127) up to 2^-127,
//   else to 1; a normal v to its exponent field, plus one when its fraction is not 0; at most
//   254 (inf and NaN give 254). ue8m0_inverse(sf) = 2^(127 - sf), built from its bits: 0 for
//   sf 0, and +0 for sf 254 (2^-127 has no normal encoding).
//
// Per-token-group FP8 with packed UE8M0 scales (kARResidualRMSNorm[Out]PerTokenGroupFP8-
// PackedQuant, DeepGEMM's layout): per group of G consecutive elements of a token,
// y = group_fp8_scale(amax) = max(amax / 448, 1e-10f) rounded up to a power of two (its
// fraction bits cleared after a carry into the exponent); codes e4m3(clamp(x / y, +-448));
// the scale stored is y's exponent field. NaN inputs: the kernel's two amax reductions
// differ (fmaxf ignores NaN, the shared-memory atomicMax on the bits does not), so the
// reference takes finite inputs for these patterns.
using protocol::kMxfp8BlockSize;  // 32
std::uint8_t float_to_ue8m0_ceil(float v);
float ue8m0_inverse(std::uint8_t sf);
float group_fp8_scale(float group_absmax);
inline std::uint8_t ue8m0_exponent(float power_of_two) {
  return static_cast<std::uint8_t>((std::bit_cast<std::uint32_t>(power_of_two) >> 23) & 0xffu);
}

// Where the packed group scales live: uint32 words [pack][mn] with mn the token padded to
// tma_aligned_mn (pack = group / 4, byte group % 4 of the word, little-endian). The storage
// holds (packs - 1) * tma_aligned_mn + tokens words: the last pack has no padding tokens.
// Padding bytes and words the kernel zeroes: the bytes after the last group of a row, and
// every word of the padding tokens in the packs before the last.
constexpr std::size_t group_fp8_packs(std::size_t groups_per_row) {
  return (groups_per_row + 3) / 4;
}
constexpr std::size_t group_fp8_scale_bytes(std::size_t tokens, std::size_t groups_per_row,
                                            std::size_t tma_aligned_mn) {
  return 4 * ((group_fp8_packs(groups_per_row) - 1) * tma_aligned_mn + tokens);
}
constexpr std::size_t group_fp8_scale_index(std::size_t token, std::size_t group,
                                            std::size_t tma_aligned_mn) {
  return ((group / 4) * tma_aligned_mn + token) * 4 + group % 4;
}

// NVFP4 scale layouts and their index arithmetic: protocol/vocabulary.hpp (one definition
// for the reference and the kernels). MXFP8's scales use the same two layouts with 32-element
// blocks (FlashInfer's mxfp8_sf_offset is the same 128x4 swizzle).
using protocol::Nvfp4Layout;
using protocol::nvfp4_scale_index;
using protocol::nvfp4_scale_storage;

}  // namespace fusioncheck::reference
