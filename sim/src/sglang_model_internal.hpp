#pragma once
// Step codes of the SGLang model's threads (sglang_model.cpp, sglang_steps.cpp).
#include <cstdint>

namespace fusioncheck::sim::sglang {

// Generic one-shot: wait, epoch, push, poll, reduce, re-arm, trigger, __syncthreads, flip.
// Generic two-shot: the owner of a vector's chunk polls the partials, reduces and pushes the
// sum; any other rank scatters its partial to the owner and polls for the sum. Fused: wait,
// epoch, push, cluster arrive, poll, reduce, cluster wait, trigger, re-arm, the leader's
// flip; its bumper cluster flips the counters past the tokens.
enum Pc : std::uint8_t {
  kWait,
  kEpoch,
  kPush,
  kScatter,
  kClusterArrive,
  kPoll,
  kOwnerPoll,
  kGatherPoll,
  kReduce,
  kOwnerReduce,
  kGather,
  kClusterWait,
  kTrigger,
  kRearm,
  kSync,
  kFlip,
  kBumperFlip,
  kDone,
};

constexpr bool is_poll(int pc) { return pc == kPoll || pc == kOwnerPoll || pc == kGatherPoll; }

}  // namespace fusioncheck::sim::sglang
