#pragma once
// The steps of one call of the example kernel that do not depend on threads: which buffer a
// call pushes into and which it clears, what a pushed and a landed element look like, and the
// arithmetic of one 16-byte vector. One definition for the device (my_kernel.cu) and for the
// host emulation that holds it to the suite's reference and invariants on the CPU
// (tests/emulation_test.cpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "fusioncheck/protocol/hd.hpp"
#include "fusioncheck/protocol/mutants.hpp"
#include "fusioncheck/protocol/rotation.hpp"
#include "fusioncheck/protocol/sentinel.hpp"

namespace my_kernel {

namespace fp = fusioncheck::protocol;

inline constexpr int kLanes = 8;  // 16-bit elements per 16-byte vector

// The negative controls this kernel is built with (bf16 only: the suite draws bf16 cases
// for a mutant). Each breaks one step below.
inline constexpr fp::Mutant kMutants[] = {
    fp::Mutant::wrong_clear_buffer,  // clears the buffer the next call pushes into
    fp::Mutant::clear_size_current,  // clears this call's size, not the previous call's
    fp::Mutant::float_sentinel,      // tests "landed" with float !=, so +0 never lands
    fp::Mutant::no_canonicalize,     // pushes input -0 as is, which reads as "not landed"
};

struct alignas(16) Vec {
  std::uint16_t lane[kLanes];
};

// Element conversions, round to nearest even (the reference's rounding).
struct Bf16 {
  static FC_HD float to_float(std::uint16_t bits) {
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return __bfloat162float(__nv_bfloat16(raw));
  }
  static FC_HD std::uint16_t from_float(float v) {
    const __nv_bfloat16_raw raw = __float2bfloat16_rn(v);
    return raw.x;
  }
};
struct F16 {
  static FC_HD float to_float(std::uint16_t bits) {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
  }
  static FC_HD std::uint16_t from_float(float v) {
    const __half_raw raw = __float2half_rn(v);
    return raw.x;
  }
};

// Where one call's data goes, from the control block as the call found it.
struct Rotation {
  int data_buffer = 0;            // every rank pushes its slot here, in every rank
  int clear_buffer = 0;           // this rank clears its own copy of this one
  std::uint64_t clear_elems = 0;  // from its start
  std::uint32_t next_flag = 0;    // the control block after the call
  std::uint64_t next_clear_size = 0;
};

template <fp::Mutant M>
FC_HD Rotation rotation(std::uint32_t flag, std::uint64_t clear_size, int ranks,
                        std::uint64_t elems) {
  Rotation r;
  r.data_buffer = fp::data_buffer_index(flag, M);
  r.clear_buffer = fp::clear_buffer_index(flag, M);
  r.next_clear_size = static_cast<std::uint64_t>(ranks) * elems;
  r.clear_elems = fp::elements_to_clear(clear_size, r.next_clear_size, M);
  r.next_flag = fp::next_flag(flag, M);
  return r;
}

// Element index of element i of rank `rank`'s slot in a buffer (fusioncheck's layout,
// protocol::lamport_offset, in elements).
FC_HD std::uint64_t slot_index(int rank, std::uint64_t elems, std::uint64_t i) {
  return static_cast<std::uint64_t>(rank) * elems + i;
}

// What a rank pushes: -0 becomes +0, so that no pushed element reads as "not yet written".
template <fp::Mutant M> FC_HD Vec pushed(Vec v) {
  if constexpr (M != fp::Mutant::no_canonicalize)
    for (int j = 0; j < kLanes; ++j) v.lane[j] = fp::canonicalize_bits16(v.lane[j]);
  return v;
}

// Whether every element of a polled vector has landed: none holds the -0 sentinel, tested
// bitwise (a float test cannot tell -0 from a pushed +0).
template <class E, fp::Mutant M> FC_HD bool landed(const Vec& v) {
  for (int j = 0; j < kLanes; ++j) {
    if constexpr (M == fp::Mutant::float_sentinel) {
      if (E::to_float(v.lane[j]) == -0.0f) return false;
    } else if (fp::is_neg_zero_bits16(v.lane[j])) {
      return false;
    }
  }
  return true;
}

FC_HD Vec sentinel_vec() {
  Vec v;
  for (int j = 0; j < kLanes; ++j) v.lane[j] = fp::kNegZero16;
  return v;
}

// Adds rank r's vector to the sum in rank order: fp32 throughout, or rounded to the element
// type after every add (per_step).
template <class E> FC_HD void accumulate(float (&acc)[kLanes], const Vec& x, int r, bool per_step) {
  for (int j = 0; j < kLanes; ++j) {
    const float v = E::to_float(x.lane[j]);
    acc[j] = r == 0 ? v : acc[j] + v;
    if (per_step && r > 0) acc[j] = E::to_float(E::from_float(acc[j]));
  }
}

template <class E> FC_HD Vec rounded(const float (&acc)[kLanes]) {
  Vec v;
  for (int j = 0; j < kLanes; ++j) v.lane[j] = E::from_float(acc[j]);
  return v;
}

// residual_out = T(allreduce + residual_in); returns the row's sum of squares of it.
template <class E>
FC_HD float add_residual(const Vec& allreduced, const Vec& residual_in, Vec& residual_out) {
  float squares = 0.0f;
  for (int j = 0; j < kLanes; ++j) {
    residual_out.lane[j] =
        E::from_float(E::to_float(allreduced.lane[j]) + E::to_float(residual_in.lane[j]));
    const float x = E::to_float(residual_out.lane[j]);
    squares += x * x;
  }
  return squares;
}

// 1 / sqrt(mean square + eps), the factor of a row.
FC_HD float norm_factor(float sum_of_squares, int hidden, float eps) {
  return 1.0f / sqrtf(sum_of_squares / static_cast<float>(hidden) + eps);
}

// norm_out = T((x * factor) * (weight_bias + gamma)).
template <class E>
FC_HD Vec normed(const Vec& residual_out, const Vec& gamma, float factor, float weight_bias) {
  Vec v;
  for (int j = 0; j < kLanes; ++j) {
    const float x = E::to_float(residual_out.lane[j]);
    v.lane[j] = E::from_float((x * factor) * (weight_bias + E::to_float(gamma.lane[j])));
  }
  return v;
}

}  // namespace my_kernel
