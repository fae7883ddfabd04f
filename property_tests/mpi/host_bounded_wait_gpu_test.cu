// The host-bounded wait (host_bounded_wait.hpp) beside a kernel that never finishes on its
// own: the hang is recorded and the kernel released through copies that queue behind nothing,
// even when the SM hog's stream is blocked by the stuck kernel (it holds every SM); calls
// queued behind it are released too; one the release cannot end is reported within a bound; a
// word awaited for a value the host does not know is released by sweeping its candidates.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "fusioncheck/gpu/host_bounded_wait.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/launch.hpp"

namespace fg = fusioncheck::gpu;

namespace {

// Spins until *go != 0, bounded (~20 s at 2 GHz) so that a failing test still ends.
__global__ void stuck_kernel(const volatile int* go) {
  const long long start = clock64();
  while (*go == 0 && clock64() - start < (1ll << 35)) {}
}

// Like a sentinel kernel: waits for *go != 0, then resets it to 0 (consumed), bounded as above.
__global__ void consuming_kernel(volatile int* go) {
  const long long start = clock64();
  while (*go == 0 && clock64() - start < (1ll << 35)) {}
  *go = 0;
}

// Ignores the released flag: ends only when *end != 0 (or after the bound).
__global__ void unreleasable_kernel(const volatile int* end) {
  const long long start = clock64();
  while (*end == 0 && clock64() - start < (1ll << 35)) {}
}

// Like a FlashInfer kernel's block 0 at its end: waits until *counter == awaited (the grid's
// size, which the host does not know), bounded as above.
__global__ void counter_kernel(const volatile int* counter, int awaited) {
  const long long start = clock64();
  while (*counter != awaited && clock64() - start < (1ll << 35)) {}
}

// Ends a kernel spinning on `stream` by writing `value` into `word` from a stream of its own,
// then waits for `stream`: the next test starts on an idle GPU.
void end_spinning_kernel(int* word, int value, cudaStream_t stream) {
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(word, &value, sizeof(int), cudaMemcpyHostToDevice, side), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(side);
}

class HostWait : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no usable CUDA device";
    ASSERT_EQ(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&go_, sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemset(go_, 0, sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ == nullptr) return;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the GPU is left idle
    cudaFree(go_);
    cudaStreamDestroy(stream_);
  }
  int sms_ = 0;
  cudaStream_t stream_ = nullptr;
  int* go_ = nullptr;
};

TEST_F(HostWait, AStuckKernelIsRecordedAndReleasedWhileTheHogStreamIsBlocked) {
  fg::HostBoundedWait waiter("test kernel");
  waiter.stagger_next_start(1000);  // the hog is loaded and has run once
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // Two 1024-thread blocks per SM: every SM is taken, and the hog launched next cannot start.
  stuck_kernel<<<2 * sms_, 1024, 0, stream_>>>(go_);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  waiter.enqueued(fg::PendingCall{}, stream_);
  waiter.stagger_next_start(1000);
  int seen = -1;
  bool released = false;
  const auto start = std::chrono::steady_clock::now();
  waiter.wait(
      stream_, fg::WaitStart::this_rank_enqueued, 0,
      [&](const fg::PendingCall& call, double seconds) {
        waiter.read_back(&seen, go_, sizeof(int), "read the flag beside the stuck kernel");
        return fg::hang_base(0, call, seconds);
      },
      [&] {
        released = true;
        waiter.fill(reinterpret_cast<std::uint8_t*>(go_), sizeof(int), 1u, 4);
      });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(released);
  EXPECT_EQ(seen, 0);
  EXPECT_EQ(waiter.hang().valid, 1u);
  EXPECT_LT(seconds, 8.0) << "the read-back or the release waited for the blocked hog";
}

// Run as its own process (ctest runs each test alone), the adapter's kernels are first
// launched here, beside the stuck kernel: loaded lazily, the launch would wait for it.
TEST_F(HostWait, TheAdaptersKernelsLaunchBesideAStuckKernel) {
  fg::HostBoundedWait waiter("test kernel");
  stuck_kernel<<<1, 32, 0, stream_>>>(go_);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const auto start = std::chrono::steady_clock::now();
  waiter.stagger_next_start(1000);
  fg::launch_pause(1000, stream_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  waiter.fill(reinterpret_cast<std::uint8_t*>(go_), sizeof(int), 1u, 4);
  EXPECT_LT(seconds, 2.0) << "a launch waited for the stuck kernel (a lazy module load)";
}

// Two calls queued back to back: the second starts on the state the first consumed (its own
// reset), so one release is not enough; the wait releases again until the stream is idle.
TEST_F(HostWait, CallsQueuedBehindTheStuckOneAreReleasedToo) {
  fg::HostBoundedWait waiter("test kernel");
  consuming_kernel<<<1, 1, 0, stream_>>>(go_);
  consuming_kernel<<<1, 1, 0, stream_>>>(go_);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  waiter.enqueued(fg::PendingCall{}, stream_);
  int releases = 0;
  waiter.wait(
      stream_, fg::WaitStart::this_rank_enqueued, 0,
      [&](const fg::PendingCall& call, double s) { return fg::hang_base(0, call, s); },
      [&] {
        ++releases;
        waiter.fill(reinterpret_cast<std::uint8_t*>(go_), sizeof(int), 1u, 4);
      });
  EXPECT_GE(releases, 2);
  EXPECT_EQ(waiter.hang().valid, 1u);
  EXPECT_FALSE(fusioncheck::kernels::device_stuck());
}

// A kernel the release cannot end: the wait gives up within its budget, says so, and marks the
// device stuck (destructors then leave device memory to the process's exit).
TEST_F(HostWait, AKernelTheReleaseCannotEndIsReportedAndTheDeviceMarkedStuck) {
  int* end = nullptr;
  ASSERT_EQ(cudaMalloc(&end, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemset(end, 0, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  {
    fg::HostBoundedWait waiter("test kernel");
    unreleasable_kernel<<<1, 1, 0, stream_>>>(end);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    waiter.enqueued(fg::PendingCall{}, stream_);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(
        waiter.wait(
            stream_, fg::WaitStart::this_rank_enqueued, 0,
            [&](const fg::PendingCall& call, double s) { return fg::hang_base(0, call, s); },
            [&] { waiter.fill(reinterpret_cast<std::uint8_t*>(go_), sizeof(int), 1u, 4); }),
        fusioncheck::kernels::CudaError);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 15.0);
    EXPECT_TRUE(fusioncheck::kernels::device_stuck());
    // Ends the kernel for the next test; the wait's own objects are then destroyed.
    end_spinning_kernel(end, 1, stream_);
  }
  fusioncheck::kernels::device_stuck_flag().store(false);
  cudaFree(end);
}

TEST_F(HostWait, AKernelThatFinishesInTimeIsNotReleased) {
  fg::HostBoundedWait waiter("test kernel");
  ASSERT_EQ(cudaMemset(go_, 1, sizeof(int)), cudaSuccess);
  stuck_kernel<<<1, 32, 0, stream_>>>(go_);
  waiter.enqueued(fg::PendingCall{}, stream_);
  bool released = false;
  waiter.wait(
      stream_, fg::WaitStart::this_rank_enqueued, 0,
      [&](const fg::PendingCall& call, double s) { return fg::hang_base(0, call, s); },
      [&] { released = true; });
  EXPECT_FALSE(released);
  EXPECT_EQ(waiter.hang().valid, 0u);
}

// Once every rank has enqueued, the budget is short: a stuck call is recorded and released
// within a fraction of the 2 s a wait that starts right after this rank's enqueue allows.
TEST_F(HostWait, AfterEveryRankEnqueuedAStuckCallIsReleasedWithinItsShortBudget) {
  fg::HostBoundedWait waiter("test kernel");
  stuck_kernel<<<1, 32, 0, stream_>>>(go_);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  waiter.enqueued(fg::PendingCall{}, stream_);
  double recorded_after = 0;
  const auto start = std::chrono::steady_clock::now();
  waiter.wait(
      stream_, fg::WaitStart::every_rank_enqueued, 0,
      [&](const fg::PendingCall& call, double s) {
        recorded_after = s;
        return fg::hang_base(0, call, s);
      },
      [&] { waiter.fill(reinterpret_cast<std::uint8_t*>(go_), sizeof(int), 1u, 4); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(waiter.hang().valid, 1u);
  const double budget =
      std::chrono::duration<double>(fg::wait_budget(fg::WaitStart::every_rank_enqueued)).count();
  EXPECT_GE(recorded_after, budget);
  EXPECT_LT(seconds, 1.0);
}

// The negative control of the short budget: a call that runs half of it, slow beside any call
// a case draws, ends on its own and is not released.
TEST_F(HostWait, AfterEveryRankEnqueuedASlowCallThatEndsIsNotReleased) {
  fg::HostBoundedWait waiter("test kernel");
  const auto half =
      std::chrono::nanoseconds(fg::wait_budget(fg::WaitStart::every_rank_enqueued)) / 2;
  fusioncheck::kernels::launch_spin(static_cast<std::uint64_t>(half.count()), stream_);
  waiter.enqueued(fg::PendingCall{}, stream_);
  bool released = false;
  waiter.wait(
      stream_, fg::WaitStart::every_rank_enqueued, 0,
      [&](const fg::PendingCall& call, double s) { return fg::hang_base(0, call, s); },
      [&] { released = true; });
  EXPECT_FALSE(released);
  EXPECT_EQ(waiter.hang().valid, 0u);
}

// A counter awaited for a value the host does not know (at most the SM count): the first
// release leaves it, later ones sweep every candidate, and one of them ends the call.
TEST_F(HostWait, ACounterAwaitedForAnUnknownValueIsReleasedBySweepingItsCandidates) {
  fg::HostBoundedWait waiter("test kernel");
  counter_kernel<<<1, 1, 0, stream_>>>(go_, sms_ / 2 + 3);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  waiter.enqueued(fg::PendingCall{}, stream_);
  std::vector<int> attempts;
  waiter.wait(
      stream_, fg::WaitStart::every_rank_enqueued, 0,
      [&](const fg::PendingCall& call, double s) { return fg::hang_base(0, call, s); },
      [&] {
        attempts.push_back(waiter.release_attempt());
        if (waiter.release_attempt() > 0) waiter.sweep(go_, 1, sms_, "sweep the counter");
      });
  EXPECT_EQ(waiter.hang().valid, 1u);
  EXPECT_EQ(attempts, (std::vector<int>{0, 1}));
  EXPECT_FALSE(fusioncheck::kernels::device_stuck());
}

// Its negative control: a sweep that stops short of the awaited value ends nothing, and the
// wait gives up within its budget.
TEST_F(HostWait, ASweepShortOfTheAwaitedValueDoesNotReleaseTheCounter) {
  const int awaited = sms_ / 2 + 3;
  {
    fg::HostBoundedWait waiter("test kernel");
    counter_kernel<<<1, 1, 0, stream_>>>(go_, awaited);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    waiter.enqueued(fg::PendingCall{}, stream_);
    EXPECT_THROW(
        waiter.wait(
            stream_, fg::WaitStart::every_rank_enqueued, 0,
            [&](const fg::PendingCall& call, double s) { return fg::hang_base(0, call, s); },
            [&] { waiter.sweep(go_, 1, awaited - 1, "sweep short of the value"); }),
        fusioncheck::kernels::CudaError);
    EXPECT_TRUE(fusioncheck::kernels::device_stuck());
    end_spinning_kernel(go_, awaited, stream_);  // for the next test
  }
  fusioncheck::kernels::device_stuck_flag().store(false);
}

// The reset's sentinel fill: every element of its range, no byte outside it (an odd count of
// elements, more than one grid-stride pass of the largest grid).
TEST(DeviceFill, WritesEveryElementOfItsRangeAndNothingBeyond) {
  constexpr std::size_t kElems = (std::size_t{4096} * 256) * 2 + 7;
  std::uint16_t* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, (kElems + 2) * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(d, 0x11, (kElems + 2) * 2), cudaSuccess);
  fg::fill16_on_device(d + 1, kElems * 2, 0x8000u, nullptr);
  std::vector<std::uint16_t> host(kElems + 2);
  ASSERT_EQ(cudaMemcpy(host.data(), d, host.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  EXPECT_EQ(host.front(), 0x1111u);
  EXPECT_EQ(host.back(), 0x1111u);
  std::size_t wrong = 0;
  for (std::size_t i = 1; i <= kElems; ++i) wrong += host[i] != 0x8000u;
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
