#pragma once
// How long the host lets a kernel whose polls have no bound of their own run before it counts
// the call hung (HostBoundedWait): that depends on where the wait starts and on the pauses
// the case itself puts into the kernels.
#include <chrono>

namespace fusioncheck::gpu {

enum class WaitStart {
  // Right after this rank enqueued its calls: a peer may not have launched yet (its host
  // loads a module lazily, makes its inputs), and this rank's kernel waits for it.
  this_rank_enqueued,
  // After a barrier that every rank reaches once its calls are enqueued (the case runner):
  // only the GPU's work remains, the kernels and the case's seeded pauses.
  every_rank_enqueued,
};

// A wait's budget: the base of where it starts, plus what the case's seeded pauses (holds,
// in-kernel delays, PDL producers; seeded_pause_allowance in gpu_case.hpp) may add to it.
// Made from a WaitStart alone, it allows no pauses.
struct WaitBudget {
  WaitBudget(WaitStart s, std::chrono::nanoseconds pauses = {})  // NOLINT: implicit by design
      : start(s), case_pauses(pauses) {}
  WaitStart start;
  std::chrono::nanoseconds case_pauses;
};

// 2 s from this rank's enqueue. 100 ms once every rank has enqueued, plus the case's pauses:
// of 10,000 MoE cases, the one held 2 ms at every poll ended on its own after 82 ms (its
// bound: 356 ms), every other within 18 ms (docs/results.md). `gpu check` names the case whose
// wait came closest to its bound.
inline std::chrono::milliseconds base_wait_budget(WaitStart start) {
  return start == WaitStart::every_rank_enqueued ? std::chrono::milliseconds(100)
                                                 : std::chrono::milliseconds(2000);
}

inline std::chrono::nanoseconds wait_budget(const WaitBudget& budget) {
  return base_wait_budget(budget.start) + budget.case_pauses;
}

}  // namespace fusioncheck::gpu
