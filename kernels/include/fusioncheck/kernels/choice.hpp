#pragma once
// The automatic one-/two-shot choice (launch_automatic in launch.hpp uses it): host-only, so
// that it is tested without a GPU.
#include <cstdint>

namespace fusioncheck::kernels {

// Whether two-shot is chosen for `input_bytes_per_rank` (tokens x hidden x element size) on
// `ranks` ranks: from a per-rank-count size on. The sizes come from gpu bench's crossover
// (docs/bench.md).
bool twoshot_preferred(int ranks, std::uint64_t input_bytes_per_rank);

}  // namespace fusioncheck::kernels
