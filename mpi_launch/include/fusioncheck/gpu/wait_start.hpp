#pragma once
// How long the host lets a kernel whose polls have no bound of their own run before it counts
// the call hung (HostBoundedWait): that depends on where the wait starts.
#include <chrono>

namespace fusioncheck::gpu {

enum class WaitStart {
  // Right after this rank enqueued its calls: a peer may not have launched yet (its host
  // loads a module lazily, makes its inputs), and this rank's kernel waits for it.
  this_rank_enqueued,
  // After a barrier that every rank reaches once its calls are enqueued (the case runner):
  // only the GPU's work remains, the kernels and the seeded pauses, holds and in-kernel
  // delays, each at most a few milliseconds.
  every_rank_enqueued,
};

// 2 s from this rank's enqueue; 250 ms once every rank has enqueued: three times the longest
// wait that ended on its own in 10,000 MoE cases (82 ms), twenty times the usual longest
// (about 12 ms; docs/results.md). `gpu check` prints the longest wait beside it and names the
// case when it comes within 4x.
inline std::chrono::milliseconds wait_budget(WaitStart start) {
  return start == WaitStart::every_rank_enqueued ? std::chrono::milliseconds(250)
                                                 : std::chrono::milliseconds(2000);
}

}  // namespace fusioncheck::gpu
