#pragma once
// How a GPU's outputs are compared with the reference.
//
// allreduce and residual_out: bit for bit (with exact inputs, see generators.hpp, any
// summation order gives the same bits; with other inputs, the kernel's documented order
// must be reproduced). Use first_bit_mismatch.
//
// norm_out: a per-element bound derived from the inputs (norm_out_tolerance). Derivation,
// with u = 2^-24 (unit roundoff of fp32) and gamma_k = k*u / (1 - k*u):
//   Both the reference and the kernel start from the same x = float(residual_out) (checked
//   bit for bit first) and compute, in fp32, y_j = (x_j * r) * (weight_bias + gamma_j),
//   r = rsqrt(ss / n + eps), ss = sum of x_j^2, n = hidden. Let y*_j be the exact value.
//   1. ss: n squares (rounded, or fused into FMAs) and n-1 additions in *any* order or tree.
//      All terms are >= 0, so every partial sum is <= S = exact sum and the computed
//      ss = S (1 + t1), |t1| <= gamma_n (Higham, Accuracy and Stability, sec. 4.2).
//   2. ss / n (or ss * (1/n)): <= 2 roundings; + eps (eps >= 0: cannot raise the relative
//      error): 1 rounding. v = (S/n + eps)(1 + t2), |t2| <= gamma_{n+3}.
//   3. r: the reference does 1/sqrtf(v) (2 roundings); the GPU's rsqrtf has at most 2 ulp
//      error (CUDA Math API), i.e. relative <= 4u. The input error enters as
//      (1+t2)^(-1/2), whose distance to 1 is <= |t2| for |t2| <= 1/2. So
//      r = r* (1 + t3), |t3| <= gamma_{n+7}.
//   4. weight_bias + gamma_j: 1 rounding; two products: 2 roundings.
//   => each implementation has |y - y*| <= gamma_{n+10} |y*|, so
//      |y_gpu - y_ref| <= rho |y_ref| with rho = 2 gamma_{n+10} / (1 - gamma_{n+10}).
//   5. The final rounding to T is round-to-nearest-even, which is monotone, so
//      T(y_gpu) lies in [T(y_ref - rho|y_ref|), T(y_ref + rho|y_ref|)]. The endpoints are
//      formed in double and widened outward by one float ulp before rounding to T (so a
//      double -> float -> T double rounding can only widen them).
//   allowed_j = max distance from T(y_ref) to the two rounded endpoints.
//   The bound assumes no underflow or overflow inside the fp32 computation: a token whose
//   reference ss is not finite, or below 2^-100 while eps < 2^-90, gets allowed = +inf
//   ("no claim") and is counted by the checker's caller, not silently passed. A non-finite
//   y_ref must be matched exactly (both NaN, or the same infinity).
//   With bf16 and hidden 4096, rho ~ 4.9e-4 while half a bf16 ulp is >= 2^-9 ~ 2e-3
//   relative: allowed is 0 for most elements and one ulp near rounding boundaries.
//
// fast_math (FusedConfig::fast_math, a kernel built with -use_fast_math): the reference
// flushes as that build does (fused.hpp), and the bound changes in three places.
//   a. Step 2: its division is approximate, <= 2 ulp (CUDA C Programming Guide, -prec-div=false;
//      measured on the device by the fast-math bounds test): 6u more, rho counts n + 16.
//   b. Flushed squares (< 2^-126 each, n of them, then / n) and the flushed quotient move v by
//      at most 2^-125: rho gains 2 * 2^-124 / v for the token (negligible when eps >= 2^-90).
//   c. Where x_j * r or y_j lies within a relative 2 rho of 2^-126, the GPU may flush where
//      the reference does not, or the reverse: allowed_j then covers 0 and the unflushed value
//      (|T(y_ref)| + |y_j| (1 + 2 rho) + 2^-120). Only bf16 gets there.
//   The quantised outputs' reciprocal of the FP8 scale, dynamic scale and quotients gain 4u
//   each (the approximate division).
//
// Quantised outputs: the quantiser's input on the GPU can differ from the reference's by
// the norm tolerance (or by half a T ulp if the kernel quantises before rounding to T),
// and the GPU may use approximate reciprocals. All quantisers here are monotone, so the
// checkers compute the interval of codes reachable from the input interval and accept a
// GPU code inside it (compared by decoded value). Dynamic and block scales are checked
// the same way, and the element codes are then checked against the GPU's own scale.
//   MXFP8: the block scale code sf = ue8m0_ceil(amax * (1/448)) from the interval of the
//   block's amax, one rounding of the product (fast math: its flushed product, sf 0, is
//   allowed where amax / 448 is below 2^-126); the codes against the GPU's sf, whose inverse
//   is exact. Group FP8: the scale y from the interval of amax / 448 (one rounding, or the
//   approximate division), its exponent byte within that of the interval's ends; the codes
//   against the GPU's y (x / y is exact for a power of two; fast math: 4u). The scales reach
//   the checker row by row (block_scales.hpp reads them out of the kernel's layouts).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusioncheck/reference/fused.hpp"

namespace fusioncheck::reference {

// rho of step 4 above: the relative bound on |y_gpu - y_ref| for a given hidden size (and for
// the fast-math build, see "fast_math" above).
double norm_relative_bound(int hidden, bool fast_math = false);

// Per-element allowed |gpu - ref| of norm_out, as a value of the output type (+inf for
// "no claim", see above). Size tokens * hidden.
std::vector<float> norm_out_tolerance(const FusedConfig& config, const Tensor& residual_out,
                                      const Tensor& gamma);

struct Mismatch {
  std::size_t index = 0;
  double expected = 0;  // reference value (decoded)
  double actual = 0;    // GPU value (decoded)
  double allowed = 0;   // allowed |difference|, or the half-width of the allowed interval
  std::string what;     // which output, one line
};

// First element whose bits differ (both tensors must have the same dtype and size).
std::optional<Mismatch> first_bit_mismatch(const Tensor& expected, const Tensor& actual,
                                           const std::string& what);
// First element with |actual - expected| > allowed (NaN must meet NaN).
std::optional<Mismatch> first_norm_mismatch(const Tensor& expected, const Tensor& actual,
                                            const std::vector<float>& allowed);

// GPU quantised outputs, in the reference's formats and layouts.
struct QuantOutputs {
  std::vector<std::uint8_t> fp8_static;
  std::vector<std::uint8_t> fp8_dynamic;
  std::vector<float> fp8_dynamic_scale;
  std::vector<std::uint8_t> nvfp4;
  std::vector<std::uint8_t> nvfp4_scale;
  std::vector<std::uint8_t> mxfp8;            // [tokens * hidden] e4m3
  std::vector<std::uint8_t> mxfp8_scale;      // [tokens * hidden / 32] ue8m0, row-major
  std::vector<std::uint8_t> group_fp8;        // [tokens * hidden] e4m3
  std::vector<std::uint8_t> group_fp8_scale;  // [tokens * hidden / group_size] exponents, row-major
};

// Checks every quantised output enabled in config.quant against the reference's norm_out
// and its tolerance. Returns the first violation.
std::optional<Mismatch> first_quant_mismatch(const FusedConfig& config, const Tensor& norm_ref,
                                             const std::vector<float>& norm_allowed,
                                             const QuantOutputs& gpu);

}  // namespace fusioncheck::reference
