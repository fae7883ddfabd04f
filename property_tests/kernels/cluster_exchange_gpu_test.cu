// The cluster exchange (kernels/src/device/cluster_exchange.cuh) on its own: the blocks of
// a cluster meet their values in block-rank order, through both buffers and both phases,
// every thread gets the result; and, as the negative control of its bound, a block that
// comes later than the budget makes the others report it (expired) and still wait for its
// value, instead of leaving while it is on its way. Skips (visibly) without a device with
// cluster launch.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "device/cluster_exchange.cuh"

namespace fd = fusioncheck::kernels::device;

namespace {

constexpr int kThreads = 128;

// The value block `rank` of its cluster contributes to exchange `i`: +-1e8 and small values
// alternate, so that a sum of 4 or 8 blocks in another order than block rank gives another
// float (checked on the host below).
__host__ __device__ float contribution(int rank, int i) {
  const float big = 1.0e8f * static_cast<float>(1 + i % 3);
  switch ((rank + i) % 4) {
    case 0: return big;
    case 2: return -big;
    default: return 1.0f + 0.25f * static_cast<float>(rank);
  }
}

struct ProbeResult {
  float first_thread;  // what thread 0 got
  float last_thread;   // what the block's last thread got
  int expired;         // a thread of the block saw the budget pass
};

// Exchanges 0..exchanges-1 alternate sum and max. `late_block` (block rank in its cluster,
// or -1) comes to the last exchange `late_cycles` late.
__global__ void probe_kernel(ProbeResult* out, int exchanges, int late_block,
                             unsigned long long late_cycles, unsigned long long budget) {
  __shared__ fd::ClusterExchange x;
  __shared__ int s_expired;
  if (threadIdx.x == 0) s_expired = 0;
  __syncthreads();
  fd::cluster_exchange_init(x);
  int rank = 0, size = 1;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  for (int i = 0; i < exchanges; ++i) {
    if (i == exchanges - 1 && rank == late_block) {
      const long long t0 = clock64();
      while (static_cast<unsigned long long>(clock64() - t0) < late_cycles) __nanosleep(1000);
    }
    const float v = contribution(rank, i);
    bool expired = false;
    const float r = i % 2 == 0
                        ? fd::cluster_exchange<false>(x, v, size, static_cast<std::uint32_t>(i),
                                                      budget, expired, fd::ExchangeDelay{}, false)
                        : fd::cluster_exchange<true>(x, v, size, static_cast<std::uint32_t>(i),
                                                     budget, expired, fd::ExchangeDelay{}, false);
    if (expired) atomicOr(&s_expired, 1);
    __syncthreads();  // what the kernel has between two exchanges (block_reduce)
    ProbeResult& o = out[blockIdx.x * exchanges + i];
    if (threadIdx.x == 0) o.first_thread = r;
    if (threadIdx.x == blockDim.x - 1) o.last_thread = r;
    if (threadIdx.x == 0) o.expired = s_expired;
  }
}

float expected(int cluster_size, int i, bool reversed = false) {
  float r = 0.0f;
  for (int k = 0; k < cluster_size; ++k) {
    const float v = contribution(reversed ? cluster_size - 1 - k : k, i);
    r = i % 2 == 0 ? r + v : std::max(r, v);
  }
  return r;
}
class ClusterExchange : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no usable CUDA device";
    int clusters = 0;
    if (cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, 0) != cudaSuccess ||
        clusters == 0)
      GTEST_SKIP() << "the device has no cluster launch";
  }

  // Launches `clusters` clusters of `cluster_size` blocks; returns per block and exchange.
  std::vector<ProbeResult> run(int cluster_size, int clusters, int exchanges, int late_block,
                               unsigned long long late_cycles, unsigned long long budget) {
    const int blocks = cluster_size * clusters;
    ProbeResult* d = nullptr;
    const std::size_t bytes = sizeof(ProbeResult) * blocks * exchanges;
    EXPECT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(d, 0xFF, bytes), cudaSuccess);  // NaN where nothing was written
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(kThreads);
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cluster_size;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
    EXPECT_EQ(
        cudaLaunchKernelEx(&config, probe_kernel, d, exchanges, late_block, late_cycles, budget),
        cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<ProbeResult> out(static_cast<std::size_t>(blocks) * exchanges);
    EXPECT_EQ(cudaMemcpy(out.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d);
    return out;
  }
};

constexpr unsigned long long kGenerousBudget = 2'000'000'000ull;  // about a second
constexpr unsigned long long kShortBudget = 200'000ull;           // about 0.1 ms

TEST_F(ClusterExchange, EveryBlockGetsTheValuesInBlockRankOrderThroughBothBuffersAndPhases) {
  constexpr int kExchanges = 7;  // buffers 0,1,0,1,... and the phases of each flip
  for (int cluster_size : {2, 4, 8}) {
    const int clusters = 3;
    const auto out = run(cluster_size, clusters, kExchanges, -1, 0, kGenerousBudget);
    for (int b = 0; b < cluster_size * clusters; ++b)
      for (int i = 0; i < kExchanges; ++i) {
        const ProbeResult& o = out[b * kExchanges + i];
        const std::string where = "cluster of " + std::to_string(cluster_size) + ", block " +
                                  std::to_string(b) + ", exchange " + std::to_string(i);
        EXPECT_EQ(o.first_thread, expected(cluster_size, i)) << where;
        EXPECT_EQ(o.last_thread, o.first_thread) << where;
        EXPECT_EQ(o.expired, 0) << where;
      }
  }
}

TEST(ClusterExchangeValues, TheOrderIsVisibleInTheResult) {  // host only: runs without a device
  // What the test above relies on: for 4 and 8 blocks every sum in reverse block order
  // differs (2 blocks cannot show an order: a + b == b + a).
  for (int cluster_size : {4, 8})
    for (int i = 0; i < 7; i += 2)
      EXPECT_NE(expected(cluster_size, i, true), expected(cluster_size, i)) << i;
}

TEST_F(ClusterExchange, ABlockLaterThanTheBudgetIsReportedAndItsValueStillAwaited) {
  constexpr int kExchanges = 3;
  const int cluster_size = 4, late = 2;
  const auto out = run(cluster_size, 2, kExchanges, late, 20 * kShortBudget, kShortBudget);
  for (int b = 0; b < cluster_size * 2; ++b) {
    for (int i = 0; i + 1 < kExchanges; ++i)
      EXPECT_EQ(out[b * kExchanges + i].expired, 0) << "block " << b;
    const ProbeResult& last = out[b * kExchanges + kExchanges - 1];
    // The late block's value was waited for: every block has the full result.
    EXPECT_EQ(last.first_thread, expected(cluster_size, kExchanges - 1)) << "block " << b;
    if (b % cluster_size != late)
      EXPECT_EQ(last.expired, 1) << "block " << b << " did not report the late block";
  }
}

}  // namespace
