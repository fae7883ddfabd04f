// Comparison of GPU outputs with the reference; the derivation of every bound is in
// tolerance.hpp.
#include "fusioncheck/reference/tolerance.hpp"
#include "fusioncheck/reference/vector_clones.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace fusioncheck::reference {
namespace {

constexpr double kU = 0x1p-24;                // fp32 unit roundoff
constexpr double kSubnormalSlack = 0x1p-146;  // a few fp32 subnormal spacings (underflow)
constexpr double kInf = std::numeric_limits<double>::infinity();

// A closed interval of reals; the quantisers below are monotone, so they map it to an
// interval of codes.
struct Interval {
  double lo;
  double hi;
};

// Widens by `rel` relative error of each endpoint (outward).
Interval widen(Interval x, double rel) {
  return {x.lo - rel * std::fabs(x.lo), x.hi + rel * std::fabs(x.hi)};
}
Interval scale(Interval x, double lo_factor, double hi_factor) {
  // x * f for f in [lo_factor, hi_factor], f > 0.
  const double a = x.lo * lo_factor, b = x.lo * hi_factor;
  const double c = x.hi * lo_factor, d = x.hi * hi_factor;
  return {std::min({a, b, c, d}), std::max({a, b, c, d})};
}
// std::nextafter(f, -inf) and std::nextafter(f, +inf) for floats, by stepping the bits
// (the library call cost as much as the rest of a tolerance element).
float next_down(float f) {
  if (std::isnan(f) || f == -std::numeric_limits<float>::infinity()) return f;
  if (f == 0.0f) return -std::numeric_limits<float>::denorm_min();
  const auto b = std::bit_cast<std::uint32_t>(f);
  return std::bit_cast<float>(f > 0.0f ? b - 1 : b + 1);
}
float next_up(float f) {
  if (std::isnan(f) || f == std::numeric_limits<float>::infinity()) return f;
  if (f == 0.0f) return std::numeric_limits<float>::denorm_min();
  const auto b = std::bit_cast<std::uint32_t>(f);
  return std::bit_cast<float>(f > 0.0f ? b + 1 : b - 1);
}

// Double -> float, moved one float step outward so later roundings cannot narrow it.
float down_to_float(double d) { return next_down(static_cast<float>(d)); }
float up_to_float(double d) { return next_up(static_cast<float>(d)); }
Interval magnitude(Interval x) {  // {|v| : v in x}
  if (x.lo <= 0.0 && x.hi >= 0.0) return {0.0, std::max(-x.lo, x.hi)};
  return {std::min(std::fabs(x.lo), std::fabs(x.hi)), std::max(std::fabs(x.lo), std::fabs(x.hi))};
}
Interval e4m3_values(Interval x) {
  return {e4m3_to_float(float_to_e4m3(down_to_float(x.lo))),
          e4m3_to_float(float_to_e4m3(up_to_float(x.hi)))};
}
Interval e2m1_values(Interval x) {
  return {e2m1_to_float(float_to_e2m1(down_to_float(x.lo))),
          e2m1_to_float(float_to_e2m1(up_to_float(x.hi)))};
}
bool inside(double v, Interval x) { return v >= x.lo && v <= x.hi; }

Mismatch make_mismatch(std::size_t index, Interval allowed, double actual, std::string what) {
  return Mismatch{index, 0.5 * (allowed.lo + allowed.hi), actual, 0.5 * (allowed.hi - allowed.lo),
                  std::move(what)};
}

// The reals the GPU's quantiser input may take for element i: the reference norm value
// +- its tolerance, +- half a T ulp (the kernel may quantise before rounding to T).
Interval quant_input(DType dtype, float n, float allowed) {
  const double h = 0.5 * static_cast<double>(ulp_of(dtype, n));
  return {n - allowed - h, n + allowed + h};
}

// Elements that pass check_fp8_codes' test without the interval arithmetic, decided for a
// block in one branch-free loop (it vectorises): a NaN reference met by a NaN code, no claim
// (allowed or the reference infinite), or the fast path below. Sets skip[j]; n <= 256.
FUSIONCHECK_VECTOR_CLONES void fp8_fast_passes(const float* __restrict norm,
                                               const float* __restrict allowed,
                                               const std::uint8_t* __restrict codes, std::size_t n,
                                               double mid, std::uint8_t* __restrict skip) {
  // Fast path, exact: n * mid (rounded to float) lies inside the real interval built in
  // check_fp8_codes (it contains n, and the widening covers the float rounding); e4m3
  // rounding is monotone, so its code lies between the codes of the interval's ends. A
  // finite code equal to it passes the full test, which is all this skips.
  std::uint8_t fast_code[256];
  for (std::size_t j = 0; j < n; ++j)
    fast_code[j] = float_to_e4m3(static_cast<float>(norm[j] * mid));
  constexpr float inf = std::numeric_limits<float>::infinity();
  for (std::size_t j = 0; j < n; ++j) {  // bitwise logic: no branch in the loop
    const float v = norm[j];
    const bool code_nan = (codes[j] & 0x7f) == kE4m3NaN;  // e4m3_to_float(code) is NaN
    const bool fast = !code_nan & (codes[j] == fast_code[j]);
    const bool v_nan = v != v;
    const bool no_claim = (std::fabs(allowed[j]) == inf) | (std::fabs(v) == inf);
    skip[j] = static_cast<std::uint8_t>((v_nan & code_nan) | (!v_nan & (no_claim | fast)));
  }
}

// norm: the reference's norm_out as floats (values_of).
std::optional<Mismatch> check_fp8_codes(std::size_t base, std::size_t hidden, DType dtype,
                                        const std::vector<float>& norm,
                                        const std::vector<float>& allowed, double inv_lo,
                                        double inv_hi, const std::vector<std::uint8_t>& codes,
                                        const char* what) {
  const double mid = 0.5 * (inv_lo + inv_hi);
  constexpr std::size_t kBlock = 256;
  std::uint8_t skip[kBlock];
  for (std::size_t j0 = 0; j0 < hidden; j0 += kBlock) {
    const std::size_t m = std::min(kBlock, hidden - j0);
    fp8_fast_passes(norm.data() + base + j0, allowed.data() + base + j0, codes.data() + base + j0,
                    m, mid, skip);
    for (std::size_t j = 0; j < m; ++j) {
      if (skip[j]) continue;
      const std::size_t i = base + j0 + j;
      const float n = norm[i];
      const float got = e4m3_to_float(codes[i]);
      if (std::isnan(n)) return make_mismatch(i, {kInf, kInf}, got, what);  // got is not NaN
      const Interval ok =
          e4m3_values(widen(scale(quant_input(dtype, n, allowed[i]), inv_lo, inv_hi), 2 * kU));
      if (!inside(got, ok)) return make_mismatch(i, ok, got, what);
    }
  }
  return std::nullopt;
}

bool token_has_claim(const std::vector<float>& norm, const std::vector<float>& allowed,
                     std::size_t base, std::size_t count) {
  for (std::size_t j = 0; j < count; ++j)
    if (std::isinf(allowed[base + j]) || !std::isfinite(norm[base + j])) return false;
  return true;
}

// ulp_of(T, value) for T fixed, without branches.
template <DType T> float ulp_typed(float value) {
  using E = Element<T>;
  using Bits = typename E::Bits;
  const float mag = std::fabs(value);
  const Bits b = E::from_float(mag);
  const float next = E::to_float(static_cast<Bits>(b + 1));
  const float prev = E::to_float(static_cast<Bits>(b - 1));
  return std::isinf(next) ? mag - prev : next - mag;  // top binade: same spacing
}

// magnitude(quant_input(dtype, norm[j], allowed[j])) for a token's elements into lo[j] and
// hi[j]: the same expressions, branch-free, so that the loop vectorises (the per-element
// calls were most of an FP8 dynamic check).
template <DType T>
FUSIONCHECK_VECTOR_CLONES void input_magnitudes(const float* __restrict norm,
                                                const float* __restrict allowed, std::size_t n,
                                                double* __restrict lo, double* __restrict hi) {
  for (std::size_t j = 0; j < n; ++j) {
    const float v = norm[j], a = allowed[j];
    const double h = 0.5 * static_cast<double>(ulp_typed<T>(v));
    const double l = v - a - h, u = v + a + h;  // quant_input
    const double al = std::fabs(l), au = std::fabs(u);
    const bool straddles = (l <= 0.0) & (u >= 0.0);
    lo[j] = straddles ? 0.0 : (au < al ? au : al);                // std::min
    hi[j] = straddles ? (-l < u ? u : -l) : (al < au ? au : al);  // std::max
  }
}

void input_magnitudes(DType dtype, const float* norm, const float* allowed, std::size_t n,
                      double* lo, double* hi) {
  switch (dtype) {
    case DType::f16: return input_magnitudes<DType::f16>(norm, allowed, n, lo, hi);
    case DType::bf16: return input_magnitudes<DType::bf16>(norm, allowed, n, lo, hi);
    case DType::f32: return input_magnitudes<DType::f32>(norm, allowed, n, lo, hi);
  }
}

// A tensor's values as floats, in one typed loop (value_at per element cost as much as the
// checks that read them).
template <DType T> void widen_all(const Tensor& t, std::vector<float>& out) {
  const auto bits = t.view<T>();
  for (std::size_t i = 0; i < bits.size(); ++i) out[i] = Element<T>::to_float(bits[i]);
}
std::vector<float> values_of(const Tensor& t) {
  std::vector<float> out(t.size());
  switch (t.dtype()) {
    case DType::f16: widen_all<DType::f16>(t, out); break;
    case DType::bf16: widen_all<DType::bf16>(t, out); break;
    case DType::f32: widen_all<DType::f32>(t, out); break;
  }
  return out;
}

}  // namespace

double norm_relative_bound(int hidden, bool fast_math) {
  // The fast-math build's division has up to 2 ulp error (4u) where step 2 counted one
  // rounding: 6 more u is generous.
  const double k = static_cast<double>(hidden) + (fast_math ? 16.0 : 10.0);
  const double g = k * kU / (1.0 - k * kU);
  return 2.0 * g / (1.0 - g) + 0x1p-50;  // + slack for forming the endpoints in double
}

namespace {

template <DType T> float round_to_typed(float v) {
  return Element<T>::to_float(Element<T>::from_float(v));
}

// next_down / next_up without branches, for the vectorised loop below (the same values).
float next_down_branchless(float f) {
  const auto b = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t stepped = f > 0.0f ? b - 1 : b + 1;
  const std::uint32_t r = f == 0.0f                             ? 0x80000001u
                          : (std::isnan(f) || b == 0xff800000u) ? b
                                                                : stepped;
  return std::bit_cast<float>(r);
}
float next_up_branchless(float f) {
  const auto b = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t stepped = f > 0.0f ? b + 1 : b - 1;
  const std::uint32_t r = f == 0.0f                             ? 0x00000001u
                          : (std::isnan(f) || b == 0x7f800000u) ? b
                                                                : stepped;
  return std::bit_cast<float>(r);
}

// allowed_j of one row with a claim (tolerance.hpp, step 5): every element's own arithmetic,
// without branches and split into three simple loops over a block, so that each vectorises
// (GCC gives up on the fp16 conversions inside the whole computation as one loop).
template <DType T>
FUSIONCHECK_VECTOR_CLONES void row_allowed(const float* __restrict y, std::size_t n, double rho,
                                           float* __restrict allowed) {
  constexpr std::size_t kBlock = 256;
  float lo[kBlock], hi[kBlock];
  for (std::size_t j0 = 0; j0 < n; j0 += kBlock) {
    const std::size_t m = std::min(kBlock, n - j0);
    const float* const yb = y + j0;
    for (std::size_t j = 0; j < m; ++j) {  // the interval's ends, moved outward to floats
      const double yd = yb[j];
      const double spread = rho * std::fabs(yd) + kSubnormalSlack;
      lo[j] = next_down_branchless(static_cast<float>(yd - spread));
      hi[j] = next_up_branchless(static_cast<float>(yd + spread));
    }
    for (std::size_t j = 0; j < m; ++j) {  // rounded to T
      lo[j] = round_to_typed<T>(lo[j]);
      hi[j] = round_to_typed<T>(hi[j]);
    }
    for (std::size_t j = 0; j < m; ++j) {
      const float yf = yb[j];
      const double t_ref = round_to_typed<T>(yf);
      const double below = t_ref - static_cast<double>(lo[j]),
                   above = static_cast<double>(hi[j]) - t_ref;
      const double d = below < above ? above : below;  // std::max: inf if the interval overflows T
      const auto df = static_cast<float>(d);
      const float a = df < d ? next_up_branchless(df) : df;
      allowed[j0 + j] = std::isfinite(yf) ? a : 0.0f;  // a non-finite y must match exactly
    }
  }
}

// The fast-math build near its flush threshold (tolerance.hpp, "fast_math"): where x_j * r or
// y_j lies within a relative `band` of 2^-126, the GPU may flush where the reference does not,
// or the reverse: such an element may be 0 or near its unflushed value, and allowed covers
// both. p: the unflushed x_j * r; yu: the unflushed y_j.
void allow_flush_either_way(double p, double yu, double band, float y_ref_rounded, float& allowed) {
  constexpr double kMinNormal = 0x1p-126;
  auto near = [&](double v) {
    const double m = std::fabs(v);
    return m >= kMinNormal / (1.0 + band) && m <= kMinNormal * (1.0 + band);
  };
  if (!near(p) && !near(yu)) return;
  // Either 0 or a value of magnitude <= |yu| (1 + band) rounded to T (within 2^-133 for bf16,
  // 2^-149 beyond): 2^-120 covers every T's spacing there.
  const double reach =
      std::fabs(static_cast<double>(y_ref_rounded)) + std::fabs(yu) * (1.0 + band) + 0x1p-120;
  allowed = std::max(allowed, up_to_float(reach));
}

template <DType T>
std::vector<float> norm_out_tolerance_typed(const FusedConfig& c, const Tensor& residual_out,
                                            const Tensor& gamma) {
  const std::vector<float> y = norm_before_rounding(c, residual_out, gamma);
  const auto ro = residual_out.view<T>();
  const auto g = gamma.view<T>();
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const double base_rho = norm_relative_bound(c.hidden, c.fast_math);
  std::vector<float> allowed(y.size(), 0.0f);
  const auto rows = static_cast<std::ptrdiff_t>(y.size() / hidden);
  // Rows are independent: several threads for large tensors (OpenMP).
#pragma omp parallel for schedule(static) if (y.size() >= (1u << 14))
  for (std::ptrdiff_t row = 0; row < rows; ++row) {
    const std::size_t base = static_cast<std::size_t>(row) * hidden;
    float ss = 0.0f;  // the reference's own sum of squares decides "no claim"
    for (std::size_t j = 0; j < hidden; ++j) {
      const float x = Element<T>::to_float(ro[base + j]);
      ss += x * x;
    }
    const bool no_claim = !std::isfinite(ss) || (ss < 0x1p-100f && c.eps < 0x1p-90f);
    if (no_claim) {
      std::fill_n(allowed.data() + base, hidden, std::numeric_limits<float>::infinity());
      continue;
    }
    // Fast math: squares and quotients flushed move v = ss / n + eps by at most 2^-125.
    const double v = static_cast<double>(ss) / static_cast<double>(hidden) + c.eps;
    const double rho = c.fast_math ? base_rho + 2.0 * 0x1p-124 / v : base_rho;
    row_allowed<T>(y.data() + base, hidden, rho, allowed.data() + base);
    if (!c.fast_math) continue;
    const double r = 1.0 / std::sqrt(v);
    for (std::size_t j = 0; j < hidden; ++j) {
      const double p = static_cast<double>(Element<T>::to_float(ro[base + j])) * r;
      const double w = static_cast<double>(c.weight_bias) + Element<T>::to_float(g[j]);
      allow_flush_either_way(p, p * w, 2.0 * rho + 0x1p-40, round_to_typed<T>(y[base + j]),
                             allowed[base + j]);
    }
  }
  return allowed;
}

}  // namespace

std::vector<float> norm_out_tolerance(const FusedConfig& c, const Tensor& residual_out,
                                      const Tensor& gamma) {
  switch (c.dtype) {
    case DType::f16: return norm_out_tolerance_typed<DType::f16>(c, residual_out, gamma);
    case DType::bf16: return norm_out_tolerance_typed<DType::bf16>(c, residual_out, gamma);
    case DType::f32: return norm_out_tolerance_typed<DType::f32>(c, residual_out, gamma);
  }
  throw std::invalid_argument("norm_out_tolerance: unknown dtype");
}

std::optional<Mismatch> first_bit_mismatch(const Tensor& expected, const Tensor& actual,
                                           const std::string& what) {
  if (expected.dtype() != actual.dtype() || expected.size() != actual.size())
    throw std::invalid_argument(what + ": dtype or size differ");
  if (std::memcmp(expected.data(), actual.data(), expected.bytes()) == 0) return std::nullopt;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected.bits_at(i) == actual.bits_at(i)) continue;
    // IEEE 754 leaves the sign and payload of a NaN result open (x86 gives -NaN for inf - inf,
    // the GPU its canonical +NaN): any NaN matches a NaN.
    if (std::isnan(expected.value_at(i)) && std::isnan(actual.value_at(i))) continue;
    return Mismatch{i, expected.value_at(i), actual.value_at(i), 0.0, what};
  }
  return std::nullopt;
}

std::optional<Mismatch> first_norm_mismatch(const Tensor& expected, const Tensor& actual,
                                            const std::vector<float>& allowed) {
  if (expected.dtype() != actual.dtype() || expected.size() != actual.size() ||
      allowed.size() != expected.size())
    throw std::invalid_argument("norm_out: dtype or size differ");
  // Identical bits pass every element's test below (NaN against NaN included).
  if (std::memcmp(expected.data(), actual.data(), expected.bytes()) == 0) return std::nullopt;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (std::isinf(allowed[i])) continue;  // no claim (documented in tolerance.hpp)
    const double e = expected.value_at(i), a = actual.value_at(i);
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) && std::isnan(a)) continue;
    } else if (e == a || std::fabs(a - e) <= allowed[i]) {
      continue;
    }
    return Mismatch{i, e, a, allowed[i], "norm_out"};
  }
  return std::nullopt;
}

namespace {

// The reals the amax of elements [from, to) of a token may take, from their magnitude
// intervals.
Interval amax_of(const double* mag_lo, const double* mag_hi, std::size_t from, std::size_t to) {
  Interval amax{0.0, 0.0};
  for (std::size_t k = from; k < to; ++k) {
    amax.lo = std::max(amax.lo, mag_lo[k]);
    amax.hi = std::max(amax.hi, mag_hi[k]);
  }
  return amax;
}

double ue8m0_value(std::uint8_t code) { return std::ldexp(1.0, static_cast<int>(code) - 127); }

// MXFP8 of token t (tolerance.hpp): each block's scale code, then its codes against it.
std::optional<Mismatch> mxfp8_token_mismatch(const FusedConfig& c, std::size_t t,
                                             const std::vector<float>& norm,
                                             const std::vector<float>& allowed,
                                             const double* mag_lo, const double* mag_hi,
                                             const QuantOutputs& gpu) {
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const std::size_t cols = hidden / kMxfp8BlockSize;
  const double inv448 = 1.0f / kE4m3Max;  // the kernel's float constant
  for (std::size_t b = 0; b < cols; ++b) {
    const std::size_t from = b * kMxfp8BlockSize, to = from + kMxfp8BlockSize;
    const Interval amax = amax_of(mag_lo, mag_hi, from, to);
    const double lo = amax.lo * inv448 * (1 - kU), hi = amax.hi * inv448 * (1 + kU);
    std::uint8_t sf_lo = float_to_ue8m0_ceil(down_to_float(lo));
    const std::uint8_t sf_hi = float_to_ue8m0_ceil(up_to_float(hi));
    if (c.fast_math && lo < 0x1p-126) sf_lo = 0;  // the product flushed to zero
    const std::uint8_t sf = gpu.mxfp8_scale[t * cols + b];
    const std::size_t first = t * hidden + from;
    if (sf < sf_lo || sf > sf_hi)
      return make_mismatch(first, {ue8m0_value(sf_lo), ue8m0_value(sf_hi)}, ue8m0_value(sf),
                           "mxfp8_scale (index = first element of block)");
    const double inv = ue8m0_inverse(sf);  // exact: a power of two, or 0
    if (auto m = check_fp8_codes(first, kMxfp8BlockSize, c.dtype, norm, allowed, inv, inv,
                                 gpu.mxfp8, "mxfp8"))
      return m;
  }
  return std::nullopt;
}

// Group FP8 of token t (tolerance.hpp): each group's scale exponent, then its codes.
std::optional<Mismatch> group_fp8_token_mismatch(const FusedConfig& c, std::size_t t,
                                                 const std::vector<float>& norm,
                                                 const std::vector<float>& allowed,
                                                 const double* mag_lo, const double* mag_hi,
                                                 const QuantOutputs& gpu) {
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const auto size = static_cast<std::size_t>(c.quant.group_size);
  const std::size_t groups = hidden / size;
  const double fm = c.fast_math ? 4 * kU : 0.0;
  // group_fp8_scale divides its argument by 448 once more (one rounding): the ends moved
  // outward by 2u cover that and the kernel's own division.
  const double d = 2 * kU + fm;
  for (std::size_t g = 0; g < groups; ++g) {
    const Interval amax = amax_of(mag_lo, mag_hi, g * size, (g + 1) * size);
    const float y_lo = group_fp8_scale(down_to_float(amax.lo * (1 - d)));
    const float y_hi = group_fp8_scale(up_to_float(amax.hi * (1 + d)));
    const std::uint8_t e = gpu.group_fp8_scale[t * groups + g];
    const std::size_t first = t * hidden + g * size;
    if (e < ue8m0_exponent(y_lo) || e > ue8m0_exponent(y_hi))
      return make_mismatch(first, {y_lo, y_hi}, ue8m0_value(e),
                           "group_fp8_scale (index = first element of group)");
    const double inv = 1.0 / ue8m0_value(e);  // x / y: exact for a power of two
    if (auto m = check_fp8_codes(first, size, c.dtype, norm, allowed, inv * (1 - fm),
                                 inv * (1 + fm), gpu.group_fp8, "group_fp8"))
      return m;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Mismatch> first_quant_mismatch(const FusedConfig& c, const Tensor& norm_ref,
                                             const std::vector<float>& allowed,
                                             const QuantOutputs& gpu) {
  const auto hidden = static_cast<std::size_t>(c.hidden);
  const auto tokens = static_cast<std::size_t>(c.tokens);
  const std::size_t count = tokens * hidden;
  if (norm_ref.size() != count || allowed.size() != count)
    throw std::invalid_argument("quantised outputs: norm_out shape differs from the config");
  const QuantConfig& q = c.quant;
  auto need = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string(what) + " has the wrong size");
  };
  if (q.fp8_static) need(gpu.fp8_static.size() == count, "fp8_static");
  if (q.fp8_dynamic)
    need(gpu.fp8_dynamic.size() == count && gpu.fp8_dynamic_scale.size() == tokens, "fp8_dynamic");
  if (q.nvfp4)
    need(gpu.nvfp4.size() == count / 2 &&
             gpu.nvfp4_scale.size() == nvfp4_scale_storage(q.nvfp4_layout, tokens, hidden / 16),
         "nvfp4");
  if (q.mxfp8)
    need(gpu.mxfp8.size() == count && gpu.mxfp8_scale.size() == count / kMxfp8BlockSize, "mxfp8");
  if (q.group_fp8)
    need(gpu.group_fp8.size() == count && q.group_size > 0 &&
             gpu.group_fp8_scale.size() == count / static_cast<std::size_t>(q.group_size),
         "group_fp8");

  const std::vector<float> norm = values_of(norm_ref);
  // The fast-math build divides approximately (<= 2 ulp, 4u): its reciprocal of the FP8 scale,
  // its dynamic scale amax / 448 and its quotients x / scale carry that much more.
  const double fm = c.fast_math ? 4 * kU : 0.0;
  // Tokens are independent: checked by several threads (OpenMP); the first failing token in
  // token order is reported, as a sequential loop would.
  auto check_token = [&](std::size_t t) -> std::optional<Mismatch> {
    const std::size_t base = t * hidden;
    if (q.fp8_static) {
      const double inv = q.fp8_inv_scale;
      if (auto m = check_fp8_codes(base, hidden, c.dtype, norm, allowed, inv * (1 - fm),
                                   inv * (1 + fm), gpu.fp8_static, "fp8_static"))
        return m;
    }
    const bool claim = token_has_claim(norm, allowed, base, hidden);
    // Every element's magnitude interval (magnitude(quant_input(...))), for the amax bounds.
    thread_local std::vector<double> mag_lo, mag_hi;
    if ((q.fp8_dynamic || q.nvfp4 || q.mxfp8 || q.group_fp8) && claim) {
      mag_lo.resize(hidden);
      mag_hi.resize(hidden);
      input_magnitudes(c.dtype, norm.data() + base, allowed.data() + base, hidden, mag_lo.data(),
                       mag_hi.data());
    }
    if (q.fp8_dynamic && claim) {
      double amax_lo = 0.0, amax_hi = 0.0;
      for (std::size_t j = 0; j < hidden; ++j) {
        amax_lo = std::max(amax_lo, mag_lo[j]);
        amax_hi = std::max(amax_hi, mag_hi[j]);
      }
      const double floor = kFp8MinScale;
      const Interval ok = widen(
          {std::max(amax_lo / kE4m3Max, floor), std::max(amax_hi / kE4m3Max, floor)}, 2 * kU + fm);
      const double s = gpu.fp8_dynamic_scale[t];
      if (!inside(s, ok)) return make_mismatch(t, ok, s, "fp8_dynamic_scale (index = token)");
      // Codes against the GPU's own scale: x / s or x * (1/s), 3 roundings at most.
      if (auto m =
              check_fp8_codes(base, hidden, c.dtype, norm, allowed, (1.0 / s) * (1 - 3 * kU - fm),
                              (1.0 / s) * (1 + 3 * kU + fm), gpu.fp8_dynamic, "fp8_dynamic"))
        return m;
    }
    if (q.nvfp4 && claim) {
      const double g = q.nvfp4_global_scale;
      const std::size_t scale_cols = hidden / kNvfp4BlockSize;
      for (std::size_t b = 0; b < scale_cols; ++b) {
        const std::size_t blk = base + b * kNvfp4BlockSize;
        double amax_lo = 0.0, amax_hi = 0.0;
        for (std::size_t k = b * kNvfp4BlockSize; k < (b + 1) * kNvfp4BlockSize; ++k) {
          amax_lo = std::max(amax_lo, mag_lo[k]);
          amax_hi = std::max(amax_hi, mag_hi[k]);
        }
        // sf = e4m3(g * (amax * (1/6))): three roundings, plus an approximate 1/6 on the GPU.
        const Interval sf_ok = e4m3_values(widen({g * amax_lo / 6.0, g * amax_hi / 6.0}, 6 * kU));
        const std::uint8_t sf =
            gpu.nvfp4_scale[nvfp4_scale_index(q.nvfp4_layout, t, b, scale_cols)];
        const double sf_value = e4m3_to_float(sf);
        if (!inside(sf_value, sf_ok))
          return make_mismatch(blk, sf_ok, sf_value,
                               "nvfp4_scale (index = first element of block)");
        // Elements against the GPU's own block scale: out_scale = 1 / (sf / g), formed with
        // approximate reciprocals (<= 1 ulp each) on the GPU: widen by 6u.
        const double os = sf_value == 0.0 ? 0.0 : g / sf_value;
        for (int k = 0; k < kNvfp4BlockSize; ++k) {
          const std::size_t i = blk + k;
          const std::uint8_t code = (gpu.nvfp4[i / 2] >> (4 * (i % 2))) & 0xf;
          const Interval x = quant_input(c.dtype, norm[i], allowed[i]);
          const Interval ok =
              e2m1_values(widen(scale(x, os * (1 - 6 * kU), os * (1 + 6 * kU)), 2 * kU));
          const double got = e2m1_to_float(code);
          if (!inside(got, ok)) return make_mismatch(i, ok, got, "nvfp4");
        }
      }
    }
    if (q.mxfp8 && claim)
      if (auto m = mxfp8_token_mismatch(c, t, norm, allowed, mag_lo.data(), mag_hi.data(), gpu))
        return m;
    if (q.group_fp8 && claim)
      if (auto m = group_fp8_token_mismatch(c, t, norm, allowed, mag_lo.data(), mag_hi.data(), gpu))
        return m;
    return std::nullopt;
  };
  std::vector<std::optional<Mismatch>> per_token(tokens);
#pragma omp parallel for schedule(dynamic, 16) if (count >= (1u << 14))
  for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(tokens); ++t)
    per_token[static_cast<std::size_t>(t)] = check_token(static_cast<std::size_t>(t));
  for (auto& m : per_token)
    if (m) return m;
  return std::nullopt;
}

}  // namespace fusioncheck::reference
