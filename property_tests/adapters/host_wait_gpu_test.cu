// The host-bounded wait of the FlashInfer adapters beside a kernel that never finishes on its
// own: the hang is recorded and the kernel released through copies that queue behind nothing,
// even when the SM hog's stream is blocked by the stuck kernel (it holds every SM).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "fi_device.hpp"
#include "host_wait.hpp"

namespace fi = fusioncheck::adapters::fi;

namespace {

// Spins until *go != 0, bounded (~20 s at 2 GHz) so that a failing test still ends.
__global__ void stuck_kernel(const volatile int* go) {
  const long long start = clock64();
  while (*go == 0 && clock64() - start < (1ll << 35)) {}
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
  fi::HostBoundedWait waiter("test kernel");
  waiter.stagger_next_start(1000);  // the hog is loaded and has run once
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // Two 1024-thread blocks per SM: every SM is taken, and the hog launched next cannot start.
  stuck_kernel<<<2 * sms_, 1024, 0, stream_>>>(go_);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  waiter.enqueued(fi::PendingCall{}, stream_);
  waiter.stagger_next_start(1000);
  int seen = -1;
  bool released = false;
  const auto start = std::chrono::steady_clock::now();
  waiter.wait(
      stream_, 0,
      [&](const fi::PendingCall& call, double seconds) {
        waiter.read_back(&seen, go_, sizeof(int), "read the flag beside the stuck kernel");
        return fi::hang_base(0, call, seconds);
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
  fi::HostBoundedWait waiter("test kernel");
  stuck_kernel<<<1, 32, 0, stream_>>>(go_);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const auto start = std::chrono::steady_clock::now();
  waiter.stagger_next_start(1000);
  fi::launch_pause(1000, stream_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  waiter.fill(reinterpret_cast<std::uint8_t*>(go_), sizeof(int), 1u, 4);
  EXPECT_LT(seconds, 2.0) << "a launch waited for the stuck kernel (a lazy module load)";
}

TEST_F(HostWait, AKernelThatFinishesInTimeIsNotReleased) {
  fi::HostBoundedWait waiter("test kernel");
  ASSERT_EQ(cudaMemset(go_, 1, sizeof(int)), cudaSuccess);
  stuck_kernel<<<1, 32, 0, stream_>>>(go_);
  waiter.enqueued(fi::PendingCall{}, stream_);
  bool released = false;
  waiter.wait(
      stream_, 0, [&](const fi::PendingCall& call, double s) { return fi::hang_base(0, call, s); },
      [&] { released = true; });
  EXPECT_FALSE(released);
  EXPECT_EQ(waiter.hang().valid, 0u);
}

}  // namespace
