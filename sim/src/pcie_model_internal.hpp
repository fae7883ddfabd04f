#pragma once
// Step codes of the PCIe model's threads (pcie_model.cpp, pcie_steps.cpp).
#include <cstdint>
#include <string>

#include "fusioncheck/protocol/sentinel.hpp"
#include "fusioncheck/sim/values.hpp"

namespace fusioncheck::sim::pcie {

// Sentinel kernels run wait read arrive push poll reset (gather) trigger; barrier kernels
// run wait push signal1 wait1 read_raw signal2 wait2 generation trigger. Steps that belong
// to thread 0 of a block only (arrive, signals, generation) are not in the other threads'
// programs.
enum Pc : std::uint8_t {
  kWait,
  kRead,
  kArrive,
  kPush,
  kPoll,
  kReset,
  kPushGather,
  kSignal1,
  kWait1,
  kReadRaw,
  kSignal2,
  kWait2,
  kGeneration,
  kTrigger,
  kDone,
};

}  // namespace fusioncheck::sim::pcie

namespace fusioncheck::sim {
// A value in this protocol's words: +0 is the sentinel, -0 a zero that was sent sanitised.
inline std::string pcie_value_text(std::uint32_t bits) {
  if (bits == 0u) return "+0 (not yet written)";
  if (bits == protocol::kNegZero32) return "-0 (a zero, sent sanitised)";
  return describe_value(bits);
}
}  // namespace fusioncheck::sim
