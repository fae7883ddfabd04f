#pragma once
// Pieces of the model shared by its implementation files (not part of the sim's API).
#include <cstdint>

#include "fusioncheck/sim/model.hpp"

namespace fusioncheck::sim {

// Program counter of a model thread. One-shot runs
//   wait read_flag arrive push clear poll update trigger done
// and two-shot runs
//   wait read_flag arrive scatter signal1 wait1 reduce signal2 wait2 read_gather update
//   trigger done.
// Steps that do not apply to a thread (push beyond the call's size, update on any thread
// but block 0's first, ...) are skipped without an event.
enum Pc : std::uint8_t {
  kPcWait,
  kPcReadFlag,
  kPcArrive,
  kPcPush,
  kPcClear,
  kPcPoll,
  kPcUpdate,
  kPcTrigger,
  kPcScatter,
  kPcSignal1,
  kPcWait1,
  kPcReduce,
  kPcSignal2,
  kPcWait2,
  kPcReadGather,
  kPcEmptyBody,
  kPcDone,
};

// Phases counted per block, for the __syncthreads in front of arrive and the signals.
enum Phase : int { kPhaseReadFlag = 0, kPhaseScatter = 1, kPhaseReduce = 2 };

std::uint8_t first_pc(const Model& model);
const char* region_name(Region region);
// Completion, output checks and launches of the rank's kernels after its state changed.
void refresh_rank(Model& model, int rank);

// Output and quiescence checks (checker.cpp).
struct Checker {
  static void kernel_completed(Model& model, int rank, int call);
  static void finish(Model& model);
};

}  // namespace fusioncheck::sim
