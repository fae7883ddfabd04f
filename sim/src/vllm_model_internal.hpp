#pragma once
// Step codes of the vLLM model's threads (vllm_model.cpp, vllm_steps.cpp).
#include <cstdint>

namespace fusioncheck::sim::vllm {

// Barrier lanes count and poll at each barrier; data threads reduce (one stage), or
// scatter and gather (two stages); every thread of a block meets at the __syncthreads.
enum Pc : std::uint8_t {
  kWait,
  kStartCount,
  kStartPoll,
  kSync1,
  kReduce,
  kScatter,
  kSync2,
  kEndCount,
  kEndPoll,
  kMidCount,
  kMidPoll,
  kSync3,
  kGather,
  kDone,
};
inline constexpr int kSyncPoints = 3;

constexpr bool is_count(int pc) { return pc == kStartCount || pc == kEndCount || pc == kMidCount; }
constexpr bool is_poll(int pc) { return pc == kStartPoll || pc == kEndPoll || pc == kMidPoll; }
constexpr int sync_index(int pc) {
  return pc == kSync1 ? 0 : pc == kSync2 ? 1 : pc == kSync3 ? 2 : -1;
}

}  // namespace fusioncheck::sim::vllm
