#pragma once
// The reference's self-check (first step of the CPU main job, `fusioncheck reference
// --selfcheck`): seeded exact-input cases over dtypes, accumulation modes, rank counts and
// shapes; each case checks that the reference's allreduce and residual_out equal the naive
// exact sum bit for bit, that a random rank permutation gives the same bits, and that
// norm_out lies within its derived tolerance of a double-precision RMSNorm.
#include <cstdint>
#include <functional>
#include <string>

#include "fusioncheck/reference/fused.hpp"

namespace fusioncheck::reference {

struct SelfCheckResult {
  int cases = 0;
  int checks = 0;
  int failures = 0;
  std::string first_failure;  // one line, empty when clean
};

// The implementation under check; tests pass a perturbed one to show the self-check fails.
using FusedImpl = std::function<FusedOutputs(const FusedConfig&, const FusedInputs&)>;

// Progress of a long self-check, for the caller to show (the library prints nothing).
struct SelfCheckProgressState {
  int done = 0;  // cases finished
  int total = 0;
  int failures = 0;
  double seconds = 0;  // since the start
};
struct SelfCheckProgress {
  double every_s = 5.0;  // report about this often; never after the last case
  std::function<void(const SelfCheckProgressState&)> report;  // empty: no reports
};

SelfCheckResult run_selfcheck(std::uint64_t seed, int cases, const FusedImpl& impl = compute_fused,
                              const SelfCheckProgress& progress = {});

}  // namespace fusioncheck::reference
