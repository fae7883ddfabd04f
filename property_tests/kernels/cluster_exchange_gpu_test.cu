// The cluster exchange (kernels/src/device/cluster_exchange.cuh) on its own: the blocks of
// a cluster meet their values in block-rank order, through both buffers and both phases,
// every thread gets the result; and, as the negative control of its bound, a block that
// does not send makes the others' wait give up and say so instead of spinning. Skips
// (visibly) without a device with cluster launch.
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

// The value block `rank` of its cluster contributes to exchange `i`: large and small
// magnitudes mixed, so that a sum in another order than block rank gives another float.
__host__ __device__ float contribution(int rank, int i) {
  const float big = (rank % 2 == 0 ? 1.0e8f : -1.0e8f) * static_cast<float>(i + 1);
  return rank % 3 == 0 ? big : 1.0f + 0.25f * static_cast<float>(rank + i);
}

struct ProbeResult {
  float first_thread;  // what thread 0 got
  float last_thread;   // what the block's last thread got
  int timed_out;       // any thread of the block gave up waiting
};

// Exchanges 0..exchanges-1 alternate sum and max. `silent_block` (block rank in its
// cluster, or -1) does not take part in the last exchange (but stays resident).
__global__ void probe_kernel(ProbeResult* out, int exchanges, int silent_block, unsigned long long budget) {
  __shared__ fd::ClusterExchange x;
  __shared__ int s_timed_out;
  const long long start = clock64();
  if (threadIdx.x == 0) s_timed_out = 0;
  fd::cluster_exchange_init(x);
  int rank = 0, size = 1;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  for (int i = 0; i < exchanges; ++i) {
    if (i == exchanges - 1 && rank == silent_block) {
      // Stays resident past the others' bound: they still send into its shared memory.
      while (static_cast<unsigned long long>(clock64() - start) < 4 * budget) __nanosleep(1000);
      break;
    }
    bool timed_out = false;
    const float v = contribution(rank, i);
    const float r = i % 2 == 0 ? fd::cluster_exchange<false>(x, v, size, static_cast<std::uint32_t>(i), budget, timed_out)
                               : fd::cluster_exchange<true>(x, v, size, static_cast<std::uint32_t>(i), budget, timed_out);
    if (timed_out) atomicOr(&s_timed_out, 1);
    __syncthreads();
    ProbeResult& o = out[blockIdx.x * exchanges + i];
    if (threadIdx.x == 0) o.first_thread = r;
    if (threadIdx.x == blockDim.x - 1) o.last_thread = r;
    if (threadIdx.x == 0) o.timed_out = s_timed_out;
  }
}

float expected(int cluster_size, int i) {
  float r = 0.0f;
  for (int b = 0; b < cluster_size; ++b) {
    const float v = contribution(b, i);
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
    if (cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, 0) != cudaSuccess || clusters == 0)
      GTEST_SKIP() << "the device has no cluster launch";
  }

  // Launches `clusters` clusters of `cluster_size` blocks; returns per block and exchange.
  std::vector<ProbeResult> run(int cluster_size, int clusters, int exchanges, int silent_block,
                               unsigned long long budget) {
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
    EXPECT_EQ(cudaLaunchKernelEx(&config, probe_kernel, d, exchanges, silent_block, budget), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<ProbeResult> out(static_cast<std::size_t>(blocks) * exchanges);
    EXPECT_EQ(cudaMemcpy(out.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d);
    return out;
  }
};

constexpr unsigned long long kGenerousBudget = 2'000'000'000ull;  // about a second
constexpr unsigned long long kShortBudget = 2'000'000ull;         // about a millisecond

TEST_F(ClusterExchange, EveryBlockGetsTheValuesInBlockRankOrderThroughBothBuffersAndPhases) {
  constexpr int kExchanges = 7;  // buffers 0,1,0,1,... and the phases of each flip
  for (int cluster_size : {2, 4, 8}) {
    const int clusters = 3;
    const auto out = run(cluster_size, clusters, kExchanges, -1, kGenerousBudget);
    for (int b = 0; b < cluster_size * clusters; ++b)
      for (int i = 0; i < kExchanges; ++i) {
        const ProbeResult& o = out[b * kExchanges + i];
        const std::string where = "cluster of " + std::to_string(cluster_size) + ", block " + std::to_string(b) +
                                  ", exchange " + std::to_string(i);
        EXPECT_EQ(o.first_thread, expected(cluster_size, i)) << where;
        EXPECT_EQ(o.last_thread, o.first_thread) << where;
        EXPECT_EQ(o.timed_out, 0) << where;
      }
  }
}

TEST_F(ClusterExchange, TheOrderIsVisibleInTheResult) {
  // What the test above relies on: a sum in reverse block order differs.
  float reversed = 0.0f;
  for (int b = 7; b >= 0; --b) reversed += contribution(b, 0);
  EXPECT_NE(reversed, expected(8, 0));
}

TEST_F(ClusterExchange, ABlockThatDoesNotSendEndsTheOthersWaitWithTimedOut) {
  constexpr int kExchanges = 3;
  const int cluster_size = 4, silent = 2;
  const auto out = run(cluster_size, 1, kExchanges, silent, kShortBudget);
  for (int b = 0; b < cluster_size; ++b) {
    for (int i = 0; i + 1 < kExchanges; ++i) EXPECT_EQ(out[b * kExchanges + i].timed_out, 0) << "block " << b;
    if (b == silent) continue;
    EXPECT_EQ(out[b * kExchanges + kExchanges - 1].timed_out, 1) << "block " << b << " did not see the silent block";
  }
}

}  // namespace
