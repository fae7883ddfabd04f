#pragma once
// Tagged values. Every element a rank pushes carries (call, source rank, index, element),
// so a stale read (a value from the call that last used the buffer) or a mixed read is
// caught exactly. A few inputs are -0 or +0 on purpose: the sentinel must tell them apart.
#include <cstdint>
#include <string>

#include "fusioncheck/protocol/sentinel.hpp"

namespace fusioncheck::sim {

inline constexpr std::uint32_t kSentinel = protocol::kNegZero32;
// A 16-bit -0 written into both halves of a 32-bit element (sentinel-width mutant).
inline constexpr std::uint32_t kSentinel16Fill = 0x80008000u;
// What a buffer holds before its rank initialised it (fresh cudaMalloc memory).
inline constexpr std::uint32_t kUninitialised = 0u;
// What two-shot data/gather buffers hold before the first write.
inline constexpr std::uint32_t kPoison = 0x7FC0DEADu;

constexpr std::uint32_t data_tag(int call, int src, int idx, int elem) {
  return 0x40000000u | (static_cast<std::uint32_t>(call) & 0x3FFu) << 20 |
         (static_cast<std::uint32_t>(src) & 0xFu) << 16 |
         (static_cast<std::uint32_t>(idx) & 0x3FFFu) << 2 | (static_cast<std::uint32_t>(elem) & 3u);
}

// Two-shot: the reduced value of (call, idx, elem) that the owner gathers to every rank.
constexpr std::uint32_t reduced_tag(int call, int idx, int elem) {
  return 0x20000000u | (static_cast<std::uint32_t>(call) & 0x3FFu) << 16 |
         (static_cast<std::uint32_t>(idx) & 0x3FFFu) << 2 | (static_cast<std::uint32_t>(elem) & 3u);
}

// Rank `src`'s input for (call, idx, elem): mostly a unique tag, sometimes -0 or +0. The
// period 7 is coprime with the buffer rotation (3), so a stale read three calls back does
// not land on a zero everywhere.
constexpr std::uint32_t input_value(int call, int src, int idx, int elem) {
  const int phase = (call + 2 * src + idx + 3 * elem) % 7;
  if (phase == 5) return protocol::kNegZero32;
  if (phase == 6) return 0u;
  return data_tag(call, src, idx, elem);
}

// What a consumer must read: the input with -0 mapped to +0.
constexpr std::uint32_t expected_value(int call, int src, int idx, int elem) {
  return protocol::canonicalize_bits32(input_value(call, src, idx, elem));
}

// "call 0 data from rank 1 index 3.0", "-0 (not yet written)", ...
std::string describe_value(std::uint32_t bits);

}  // namespace fusioncheck::sim
