#pragma once
// Step codes and tagged values of the MNNVL model (mnnvl_model.cpp, mnnvl_steps.cpp).
#include <cstdint>

#include "fusioncheck/sim/values.hpp"

namespace fusioncheck::sim::mnnvl {

// One-shot: wait, flags, push (multicast), arrive, clear, poll (then the PDL trigger),
// update. Two-shot: wait, flags, scatter (then the trigger), clear the scatter stage, the
// owner's reduce poll and broadcast (multicast), clear the broadcast stage, arrive, poll the
// result, update. Only the grid's first thread updates the flags.
enum Pc : std::uint8_t {
  kWait,
  kFlags,
  kPush,
  kScatter,
  kArrive,
  kClear,
  kClearScatter,
  kReducePoll,
  kBroadcast,
  kClearBroadcast,
  kPoll,
  kPollResult,
  kUpdate,
  kDone,
};

constexpr bool is_poll(int pc) { return pc == kPoll || pc == kReducePoll || pc == kPollResult; }

// Rank `src`'s payload of (call, token, vector, element): a unique tag, with 7 bits for the
// call (a stale read is at most three calls old) and for the rank (72 ranks).
constexpr std::uint32_t payload_tag(int call, int src, int token, int vec, int e) {
  return 0x40000000u | (static_cast<std::uint32_t>(call) & 0x7Fu) << 23 |
         (static_cast<std::uint32_t>(src) & 0x7Fu) << 16 |
         (static_cast<std::uint32_t>(token) & 0x3Fu) << 10 |
         (static_cast<std::uint32_t>(vec) & 0x3Fu) << 4 | (static_cast<std::uint32_t>(e) & 3u);
}

// The sum of (call, token, vector, element) that a two-shot owner multicasts.
constexpr std::uint32_t sum_tag(int call, int token, int vec, int e) {
  return 0x20000000u | (static_cast<std::uint32_t>(call) & 0x7Fu) << 22 |
         (static_cast<std::uint32_t>(token) & 0x3Fu) << 10 |
         (static_cast<std::uint32_t>(vec) & 0x3Fu) << 4 | (static_cast<std::uint32_t>(e) & 3u);
}

// What rank `src` stores for (call, token, vector, element), and the owner's sum: one word of
// each call is -0 (a payload, and a sum that rounds to it), which the kernels store as +0
// (sanitizeLamportPayload) so that it does not read as "not arrived".
constexpr std::uint32_t payload_value(int call, int ranks, int src, int token, int vec, int e) {
  if (token == 0 && vec == 0 && e == 0 && src == call % ranks) return kSentinel;
  return payload_tag(call, src, token, vec, e);
}
constexpr std::uint32_t sum_value(int call, int token, int vec, int e) {
  return token == 0 && vec == 0 && e == 0 ? kSentinel : sum_tag(call, token, vec, e);
}

}  // namespace fusioncheck::sim::mnnvl
