#pragma once
// Step codes of the vLLM model's threads (vllm_model.cpp, vllm_steps.cpp).
#include <cstdint>

namespace fusioncheck::sim::vllm {

// Barrier lanes count and poll at each barrier; data threads reduce (one stage), or
// scatter and gather (two stages); every thread of a block meets at the __syncthreads. With
// the start-end barrier a lane reads the block's flag before it counts, and lane 0 (thread 0)
// publishes the flag it used after the barrier.
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
  kStartRead,
  kStartPublish,
  kEndRead,
  kEndPublish,
  kMidRead,
  kMidPublish,
  kDone,
};
inline constexpr int kSyncPoints = 3;

constexpr bool is_count(int pc) { return pc == kStartCount || pc == kEndCount || pc == kMidCount; }
constexpr bool is_poll(int pc) { return pc == kStartPoll || pc == kEndPoll || pc == kMidPoll; }
constexpr bool is_flag_read(int pc) { return pc == kStartRead || pc == kEndRead || pc == kMidRead; }
constexpr bool is_publish(int pc) {
  return pc == kStartPublish || pc == kEndPublish || pc == kMidPublish;
}
constexpr int sync_index(int pc) {
  return pc == kSync1 ? 0 : pc == kSync2 ? 1 : pc == kSync3 ? 2 : -1;
}

}  // namespace fusioncheck::sim::vllm
