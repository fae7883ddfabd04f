#pragma once
// Which rows of a call each rank compares with the reference. Every rank takes an even share
// of the tokens; the cross-rank bitwise agreement of the whole outputs (invariant 8) carries
// each share to every rank, so the ranks together compare every row once instead of N times.
#include <cstddef>
#include <cstring>
#include <string>

#include "fusioncheck/reference/reference.hpp"

namespace fusioncheck::gpu {

struct RowShare {
  std::size_t first = 0;  // first row (token)
  std::size_t count = 0;  // rows; 0 when there are fewer tokens than ranks
};

// Rank `rank`'s rows of `tokens`; all of them when `all_rows` (NVFP4: its swizzled scale
// layout ties scales to absolute rows).
inline RowShare row_share(int tokens, int ranks, int rank, bool all_rows) {
  const auto t = static_cast<std::size_t>(tokens);
  if (all_rows) return {0, t};
  const std::size_t first = t * static_cast<std::size_t>(rank) / static_cast<std::size_t>(ranks);
  const std::size_t end = t * static_cast<std::size_t>(rank + 1) / static_cast<std::size_t>(ranks);
  return {first, end - first};
}

// The share's rows of a [tokens x hidden] tensor.
inline reference::Tensor slice_rows(const reference::Tensor& t, RowShare share,
                                    std::size_t hidden) {
  reference::Tensor out(t.dtype(), share.count * hidden);
  const std::size_t offset =
      share.first * hidden * static_cast<std::size_t>(reference::dtype_bytes(t.dtype()));
  if (out.bytes() > 0)
    std::memcpy(out.data(), static_cast<const unsigned char*>(t.data()) + offset, out.bytes());
  return out;
}

// The inputs of the share's rows (gamma is per column: whole).
inline reference::FusedInputs slice_rows(const reference::FusedInputs& in, RowShare share,
                                         std::size_t hidden) {
  reference::FusedInputs out;
  for (const auto& t : in.rank_inputs) out.rank_inputs.push_back(slice_rows(t, share, hidden));
  out.residual_in = slice_rows(in.residual_in, share, hidden);
  out.gamma = in.gamma;
  return out;
}

// A mismatch found in the share, in the whole output's indices (per-token outputs say
// "index = token" in their name).
inline reference::Mismatch in_whole_output(reference::Mismatch m, RowShare share,
                                           std::size_t hidden) {
  const bool per_token = m.what.find("index = token") != std::string::npos;
  m.index += per_token ? share.first : share.first * hidden;
  return m;
}

}  // namespace fusioncheck::gpu
