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

// NVFP4 scale layouts and their index arithmetic: protocol/vocabulary.hpp (one definition
// for the reference and the kernels).
using protocol::Nvfp4Layout;
using protocol::nvfp4_scale_index;
using protocol::nvfp4_scale_storage;

}  // namespace fusioncheck::reference
