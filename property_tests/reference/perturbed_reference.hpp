#pragma once
// A deliberately wrong reference for the negative controls: the library's result with one
// known defect. A property that cannot tell these apart from the real reference proves
// nothing, so each perturbation has a test that some property catches it.
#include <algorithm>
#include <cmath>
#include <string_view>

#include "fusioncheck/reference/reference.hpp"

namespace fusioncheck::reference::testing {

enum class Perturbation {
  none,
  output_one_ulp,         // allreduce, residual_out and norm_out one ulp away from zero
  reversed_rank_order,    // sums ranks N-1..0
  wrong_rounding_point,   // fp32 <-> per_step accumulation swapped
  residual_before_round,  // residual added to the unrounded float sum
  norm_one_ulp,           // only norm_out one ulp away from zero
  norm_scale_4rho,        // rsqrt scale off by 4x the derived relative bound
  norm_without_eps,       // eps left out of the RMSNorm
};

inline std::string_view perturbation_name(Perturbation p) {
  switch (p) {
    case Perturbation::none: return "none";
    case Perturbation::output_one_ulp: return "output_one_ulp";
    case Perturbation::reversed_rank_order: return "reversed_rank_order";
    case Perturbation::wrong_rounding_point: return "wrong_rounding_point";
    case Perturbation::residual_before_round: return "residual_before_round";
    case Perturbation::norm_one_ulp: return "norm_one_ulp";
    case Perturbation::norm_scale_4rho: return "norm_scale_4rho";
    case Perturbation::norm_without_eps: return "norm_without_eps";
  }
  return "?";
}

inline void bump_one_ulp(Tensor& t) {
  for (std::size_t i = 0; i < t.size(); ++i)
    if (std::isfinite(t.value_at(i))) t.set_bits(i, t.bits_at(i) + 1);  // away from zero
}

// norm_out recomputed from residual_out with r scaled by `r_factor` and eps replaced.
inline Tensor norm_with(const FusedConfig& c, const Tensor& residual_out, const Tensor& gamma,
                        float r_factor, float eps) {
  Tensor out(c.dtype, residual_out.size());
  const auto hidden = static_cast<std::size_t>(c.hidden);
  for (std::size_t base = 0; base < out.size(); base += hidden) {
    float ss = 0.0f;
    for (std::size_t j = 0; j < hidden; ++j)
      ss += residual_out.value_at(base + j) * residual_out.value_at(base + j);
    const float r = r_factor / std::sqrt(ss / static_cast<float>(hidden) + eps);
    for (std::size_t j = 0; j < hidden; ++j)
      out.set_value(base + j,
                    residual_out.value_at(base + j) * r * (c.weight_bias + gamma.value_at(j)));
  }
  return out;
}

inline FusedOutputs perturbed_compute(const FusedConfig& c, const FusedInputs& in, Perturbation p) {
  switch (p) {
    case Perturbation::none: return compute_fused(c, in);
    case Perturbation::output_one_ulp: {
      FusedOutputs out = compute_fused(c, in);
      bump_one_ulp(out.allreduce);
      bump_one_ulp(out.residual_out);
      bump_one_ulp(out.norm_out);
      return out;
    }
    case Perturbation::reversed_rank_order: {
      FusedInputs reversed = in;
      std::reverse(reversed.rank_inputs.begin(), reversed.rank_inputs.end());
      return compute_fused(c, reversed);
    }
    case Perturbation::wrong_rounding_point: {
      FusedConfig swapped = c;
      swapped.accumulation =
          c.accumulation == Accumulation::fp32 ? Accumulation::per_step : Accumulation::fp32;
      return compute_fused(swapped, in);
    }
    case Perturbation::residual_before_round: {
      FusedOutputs out = compute_fused(c, in);
      for (std::size_t i = 0; i < out.residual_out.size(); ++i) {
        float s = 0.0f;
        for (const Tensor& t : in.rank_inputs)
          s += bits_to_float(c.dtype, canonicalize(c.dtype, t.bits_at(i)));
        out.residual_out.set_value(i, s + in.residual_in.value_at(i));
      }
      return out;
    }
    case Perturbation::norm_one_ulp: {
      FusedOutputs out = compute_fused(c, in);
      bump_one_ulp(out.norm_out);
      return out;
    }
    case Perturbation::norm_scale_4rho: {
      FusedOutputs out = compute_fused(c, in);
      const auto factor = static_cast<float>(1.0 + 4.0 * norm_relative_bound(c.hidden));
      out.norm_out = norm_with(c, out.residual_out, in.gamma, factor, c.eps);
      return out;
    }
    case Perturbation::norm_without_eps: {
      FusedOutputs out = compute_fused(c, in);
      out.norm_out = norm_with(c, out.residual_out, in.gamma, 1.0f, 0.0f);
      return out;
    }
  }
  return compute_fused(c, in);
}

}  // namespace fusioncheck::reference::testing
