#pragma once
// Seeded input generators. Every value is a pure function of
// (seed, call_index, stream, element), so each rank of a GPU run can generate its own and
// every peer's data without communication, and a counterexample replays from its numbers.
// stream = the rank for rank inputs, kResidualStream / kGammaStream for the others.
//
// Exact inputs: value = m * 2^e with integer m, |m| <= M, and the exponent e chosen per
// (call, element) (shared by all ranks, so all terms of one element are multiples of 2^e).
// M = floor(2^p / (ranks + 1)) with p the significand width of T (bf16 8, fp16 11, fp32 24,
// capped at 2^11) and e in [-6, 3], so the N rank values plus the residual have every partial
// sum, in any order and with any rounding point, an integer multiple of 2^e of magnitude
// <= 2^p * 2^e: exactly representable, never subnormal, never overflowing in T.
// So allreduce and residual_out are exact and must match bit for bit. m depends on
// (seed, call, stream, element), so stale data from another call or rank shows.
// Optionally a few rank inputs are -0 (the sentinel: exercises canonicalisation).
//
// Random with specials: mostly values of moderate magnitude, mixed with +-0, subnormals of
// both signs, +-largest finite, outliers (a large power of two) and values that round
// differently at different rounding points; no inf or NaN unless asked.
#include <cstdint>
#include <vector>

#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generator_elements.hpp"  // ExactSpec, SpecialsSpec, stream ids

namespace fusioncheck::reference {

// One rank's input (stream = rank) or the residual (stream = kResidualStream).
Tensor exact_input(const ExactSpec& spec, int stream, int tokens, int hidden, DType dtype);
// gamma: values in [0.5, 2) with 4 significant bits (exact in every T), nonzero.
Tensor exact_gamma(std::uint64_t seed, int hidden, DType dtype);
// All inputs of one call for config (ranks, tokens, hidden, dtype).
FusedInputs make_exact_inputs(const FusedConfig& config, std::uint64_t seed,
                              std::uint64_t call_index, bool with_neg_zero = true);

// For a harness that needs only some rows of some ranks' inputs (a rank checks its share of
// the rows): rank r's input is generated whole where complete(r), else only rows
// [first_row, first_row + rows), the other rows left +0. The generated values are those of
// the whole call. Default: every input whole. The residual likewise when residual_rows_only
// (a harness that makes the whole residual on the GPU), else whole; gamma always whole.
struct PartialInputs {
  std::vector<bool> complete_ranks;  // empty: every rank complete
  int first_row = 0;
  int rows = 0;
  bool residual_rows_only = false;
  bool complete(int rank) const {
    return complete_ranks.empty() || complete_ranks.at(static_cast<std::size_t>(rank));
  }
};
FusedInputs make_exact_inputs(const FusedConfig& config, std::uint64_t seed,
                              std::uint64_t call_index, bool with_neg_zero,
                              const PartialInputs& partial);

Tensor random_with_specials(const SpecialsSpec& spec, int stream, int tokens, int hidden,
                            DType dtype);
FusedInputs make_random_inputs(const FusedConfig& config, const SpecialsSpec& spec);
FusedInputs make_random_inputs(const FusedConfig& config, const SpecialsSpec& spec,
                               const PartialInputs& partial);

// The value the reference would compute for an exact-input element, by exact (double)
// arithmetic: sum of canonicalised rank inputs, rounded once. Used by the self-check as
// the naive implementation.
Tensor naive_exact_allreduce(const FusedInputs& inputs, DType dtype);

}  // namespace fusioncheck::reference
