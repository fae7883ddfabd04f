#pragma once
// The blocks of a thread-block cluster exchange one float each (a row's partial sum of
// squares, or its amax) through distributed shared memory: every block stores its value
// into every block's slot for it with st.async, which counts the bytes on the receiver's
// mbarrier, and each block waits on its own mbarrier only. No cluster-wide barrier and no
// fence sits on the row's path: cluster.sync() made every thread wait for its outstanding
// global stores (a MEMBAR.GPU before the arrive), twice per row.
#include <cstdint>

#include "device/common.cuh"
#include "fusioncheck/kernels/choice.hpp"

namespace fusioncheck::kernels::device {

// Two of everything: a block may send its next value while a slower block of its cluster
// still reads the last one, but never two ahead: its send of exchange u + 2 comes after its
// wait on u + 1, which needs the slower block's send of u + 1, and that block's senders pass
// a block-wide barrier (block_reduce's __syncthreads) after every thread of it read u.
// The seeded delay of a call inside its exchanges (DelaySpec: the call's seed and spread).
struct ExchangeDelay {
  DelaySpec spec{};
  int rank = 0;
  std::uint32_t call = 0;
};

struct ClusterExchange {
  std::uint64_t arrived[2];  // mbarriers: one arrival (the block's own) + the bytes of every block
  float slot[2][kMaxClusterSize];  // per sending block
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ std::uint32_t cluster_block_rank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// The address of the same shared variable in block `rank` of the cluster.
__device__ __forceinline__ std::uint32_t map_to_block(std::uint32_t shared, std::uint32_t rank) {
  std::uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(shared), "r"(rank));
  return out;
}
#endif

// Before the kernel's first exchange and before the grid-dependency wait: block thread 0
// sets up the mbarriers, every thread arrives on the cluster barrier (relaxed); the first
// exchange waits on it, so that no block sends into a block whose mbarriers are not set up.
__device__ __forceinline__ void cluster_exchange_init(ClusterExchange& x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    for (int b = 0; b < 2; ++b)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&x.arrived[b]))
                   : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncwarp();  // the aligned arrive below needs warp 0 converged again
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#else
  (void)x;
#endif
}

// The wait that the first exchange would have made, for a kernel that makes none.
__device__ __forceinline__ void cluster_exchange_wait_unused() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
#endif
}

// Exchange number `use` (0, 1, ...; every block of the cluster makes the same sequence, with
// a block-wide barrier between two exchanges): every thread of the block calls it with the
// block's value (the same in every thread: block_reduce's butterfly) and gets the cluster's
// values in block-rank order from 0.0f, summed or maxed.
//
// The wait is bounded twice. Once `budget` cycles from the exchange's start have passed,
// `expired` is set (the kernel writes its hang record after the row) and the wait goes on:
// a block that left now could exit while a late block's value is on its way into its
// shared memory, which kills the context (reproduced on an H200). The late
// value comes, since every wait before the exchange is bounded; the wait gives up only after
// kExchangeGraceCycles more, where something other than a wait must hold the late block.
inline constexpr unsigned long long kExchangeGraceCycles = 1ull << 33;  // about 4 s on an H200

//
// `delay` (the call's seeded delays, for this rank and call) slows a block between its wait and
// its read in the first exchange of a call: the window in which a faster block of the cluster
// sends its next value. `one_buffer`: the cluster-one-buffer mutant, every exchange through
// slot buffer 0 (its mbarrier's phase then flips every exchange).
template <bool kMax>
__device__ __forceinline__ float cluster_exchange(ClusterExchange& x, float value, int cluster_size,
                                                  std::uint32_t use, unsigned long long budget,
                                                  bool& expired, const ExchangeDelay& delay,
                                                  bool one_buffer) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (use == 0) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  const std::uint32_t buf = one_buffer ? 0u : use & 1u;
  const std::uint32_t parity = one_buffer ? use & 1u : (use >> 1) & 1u;
  const std::uint32_t bar = shared_address(&x.arrived[buf]);
  if (threadIdx.x == 0)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                 "r"(static_cast<std::uint32_t>(cluster_size * sizeof(float)))
                 : "memory");
  if (threadIdx.x < static_cast<unsigned>(cluster_size)) {  // thread i sends to block i
    const std::uint32_t to = threadIdx.x;
    const std::uint32_t slot = map_to_block(shared_address(&x.slot[buf][cluster_block_rank()]), to);
    asm volatile(
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(slot),
        "r"(__float_as_uint(value)), "r"(map_to_block(bar, to))
        : "memory");
  }
  // try_wait suspends the thread until the phase completes or a time the hardware picks;
  // acquire at cluster scope, the scope of the other blocks' stores.
  const long long start = clock64();
  for (std::uint32_t done = 0; !done;) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;"
        "\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) break;
    const auto waited = static_cast<unsigned long long>(clock64() - start);
    if (waited > budget) expired = true;
    if (waited > budget + kExchangeGraceCycles) break;
  }
  if (use == 0) inject_delay(delay.spec, delay.rank, DelayPoint::in_exchange, delay.call);
  float r = 0.0f;
  for (int i = 0; i < cluster_size; ++i) r = kMax ? fmaxf(r, x.slot[buf][i]) : r + x.slot[buf][i];
  return r;
#else
  (void)x;
  (void)cluster_size;
  (void)use;
  (void)budget;
  (void)expired;
  (void)delay;
  (void)one_buffer;
  return value;
#endif
}

}  // namespace fusioncheck::kernels::device
