#pragma once
// The host-bounded wait, for any adapter of a kernel whose polls have no bound of their own
// (FlashInfer's allreduce fusion, MoE, older Lamport and PCIe kernels): the host bounds each
// wait, records what the stuck call awaited, releases the kernel through the copy engine, and
// pauses or staggers a rank's calls for the seeded delays (host_delays.cu).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fusioncheck/gpu/wait_start.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::gpu {

// One call enqueued since the last wait, with an event recorded behind it (none inside a
// graph capture), so that a hang names the call that is stuck.
struct PendingCall {
  cudaEvent_t done = nullptr;
  bool twoshot = false;
  std::uint64_t elems = 0;  // tokens x hidden
  int hidden = 1;
  std::uint32_t call_index = 0;
  std::uint32_t flag = 0;  // the Lamport flag the call ran with, where the host knows it
  int region = 0;          // the PCIe allreduce's scratch region (flag: its half there)
};

class HostBoundedWait {
 public:
  // `kernel` names the kernel in the error of a call that outlives its release.
  explicit HostBoundedWait(std::string kernel);
  ~HostBoundedWait();
  HostBoundedWait(const HostBoundedWait&) = delete;
  HostBoundedWait& operator=(const HostBoundedWait&) = delete;

  static bool capturing(cudaStream_t stream);
  // After enqueueing a call on `stream`: records its event (outside a capture).
  void enqueued(PendingCall call, cudaStream_t stream);
  bool idle() const { return pending_.empty(); }
  // Waits for `stream` (wait_budget(budget)). When it expires: `record` builds the hang
  // record of the stuck call from its buffers (read with read_back while the kernel runs),
  // `release` lets the kernel finish (fill), then the wait goes on (10 s) and throws CudaError
  // if it still runs.
  using Record = std::function<kernels::HangRecord(const PendingCall& stuck, double seconds)>;
  void wait(cudaStream_t stream, const WaitBudget& budget, int rank, const Record& record,
            const std::function<void()>& release);
  // Which release of the current hang `release` is running: 0 for the first, then 1, 2, ...
  // (every 500 ms while the call runs), so that an adapter can release harder when the first
  // did not end it.
  int release_attempt() const { return release_attempt_; }
  kernels::HangRecord hang() const { return hang_; }
  void clear_hang() { hang_ = kernels::HangRecord{}; }

  // Copies beside a running kernel (the copy engine, not an SM), on a stream of their own;
  // each ends within the release budget or throws CudaError with the device marked stuck.
  void read_back(void* dst, const void* src, std::size_t bytes, const char* what);
  void fill(std::uint8_t* dst, std::uint64_t bytes, std::uint32_t value, int width);
  void write(void* dst, const void* src, std::size_t bytes, const char* what);
  // Writes first, first + 1, ..., last into `word`, one copy each, each waited for: a kernel
  // that polls the word for one value the host does not know (a block counter awaiting its
  // grid's size) sees every candidate.
  void sweep(std::int32_t* word, std::int32_t first, std::int32_t last, const char* what);
  // An SM hog on the side stream (launch_sm_hog), beside the next call on another stream.
  void stagger_next_start(std::uint32_t spread_ns);
  // This rank's GPU's SM count (read once).
  int sm_count();

 private:
  using Clock = std::chrono::steady_clock;
  bool finished_by(cudaStream_t stream, Clock::time_point deadline) const;
  void copies_done(const char* what);
  PendingCall stuck_call() const;
  void done();

  std::string kernel_;
  cudaStream_t side_ = nullptr;    // the SM hog's
  cudaStream_t copies_ = nullptr;  // read-back and release copies
  cudaEvent_t copied_ = nullptr;
  std::uint8_t* staging_ = nullptr;  // pinned, for read_back and fill
  // The end of the budget every copy of one hang's record and release shares (set by wait;
  // copies outside a hang have their own budget each).
  Clock::time_point copies_deadline_ = Clock::time_point::max();
  int sm_count_ = 0;  // of this rank's GPU, read on first use
  int release_attempt_ = 0;
  std::vector<PendingCall> pending_;
  std::vector<cudaEvent_t> spare_events_;
  kernels::HangRecord hang_{};
};

// Collective: waits until this rank's GPU is idle and every rank got there, runs `drop` (the
// adapter forgets its workspaces), and meets the other ranks again before anyone goes on.
void reset_on_every_rank(kernels::Bootstrap& bootstrap, const std::string& kernel,
                         const std::function<void()>& drop);

// The fields of a hang record every adapter fills alike: rank, call, cycles at this GPU's clock.
kernels::HangRecord hang_base(int rank, const PendingCall& stuck, double seconds);
// Index of the first -0 (16-bit) in `data` past `skip_from`..`skip_to` (a slot the kernel
// never writes); data.size() if none.
std::size_t first_sentinel(const std::vector<std::uint16_t>& data, std::size_t skip_from = 0,
                           std::size_t skip_to = 0);
// The seeded pause before a call (FlashInfer's kernels take no delays of their own): a paused
// rank's call starts later than its peers' — as a whole (a pause kernel before it), or, for
// half of the delayed calls, block by block (an SM hog on `waiter`'s side stream that frees
// the SMs over the delay: a block that starts late is what provokes a flag advanced before
// every block read it).
void pause_before(const kernels::FusedParams& p, std::uint32_t call_index, cudaStream_t stream,
                  HostBoundedWait& waiter);

// The seeded delays (host_delays.cu). The pause before call `call_index` of `rank`: about half
// of the (seed, rank, call) draws pause, for up to max_ns; 0 = none.
std::uint32_t delay_for(std::uint32_t seed, int rank, std::uint32_t call_index,
                        std::uint32_t max_ns);
// The delay inside the kernel of a header's sync-delay copy (a hook at each synchronisation
// exit, named by its line): for about half of the (seed, rank) draws, one block (block, taken
// modulo the grid) waits at one of `sites` for max_ns / 2 to max_ns at every call of the case;
// line 0 = none (no seed, no sites or no max_ns).
struct SyncDelay {
  int line = 0;
  int block = 0;
  std::uint32_t ns = 0;
  bool operator==(const SyncDelay&) const = default;
};
SyncDelay sync_delay_for(std::uint32_t seed, int rank, std::uint32_t max_ns, const int* sites,
                         int site_count);
// Whether a delayed call starts its blocks staggered (launch_sm_hog) instead of late as a
// whole (launch_pause): about half of them.
bool staggered_start_for(std::uint32_t seed, int rank, std::uint32_t call_index);
// Occupies every SM and frees them one by one over spread_ns, on `stream` (another stream
// than the kernel's): the kernel launched next starts its blocks spread over that time.
void launch_sm_hog(std::uint32_t spread_ns, int sm_count, cudaStream_t stream);
// Enqueues a kernel writing `value` into every 16-bit element of bytes / 2 at dst: an
// adapter's sentinel fill at device speed, where no kernel of its own is running.
void fill16_on_device(void* dst, std::uint64_t bytes, std::uint16_t value, cudaStream_t stream);
// Enqueues a one-thread kernel that spins for `ns` nanoseconds (bounded by its argument).
void launch_pause(std::uint32_t ns, cudaStream_t stream);
// Loads the three kernels above now: loaded lazily at their first launch, they would wait for
// every kernel of the context to finish, one that spins without bound included.
void preload_device_kernels();

}  // namespace fusioncheck::gpu
