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
#include <cstddef>
#include <cstdint>

#include "fusioncheck/protocol/vocabulary.hpp"

namespace fusioncheck::reference {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE2m1Max = 6.0f;
inline constexpr std::uint8_t kE4m3NaN = 0x7f;

std::uint8_t float_to_e4m3(float x);  // rn, satfinite
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
