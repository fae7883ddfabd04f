// The delay hook of a FlashInfer header's sync-delay copy (sync_delay.cmake): at each
// synchronisation exit the copy calls FUSIONCHECK_SYNC_DELAY(line), or, in a kernel body that
// knows its rank, FUSIONCHECK_SYNC_DELAY_RANK(line, rank). A plan's block (or every block)
// spins there for the plan's nanoseconds; every other site and block goes on at once. A module
// holds kFcSyncDelayPlans plans: a process that holds one rank (the suite) sets plans for any
// rank (plan 0: the case's block; the next ones: a rank held before its polls for one call); a
// reproducer whose ranks share one module sets a plan per rank, which only the sites that know
// their rank can honour.
// Included before the header by the one translation unit of a library that includes it.
#pragma once

#include <cstdint>

constexpr int kFcSyncDelayPlans = 8;

struct FcSyncDelayPlan {
  int line = 0;   // the header line of the site that waits; 0: no delay
  int block = 0;  // the block that waits: block % gridDim.x; < 0: every block
  std::uint32_t ns = 0;
  int rank = -1;  // the rank whose block waits; -1: the process's only rank
};

__device__ FcSyncDelayPlan fc_sync_delay_plans[kFcSyncDelayPlans];

// Written on a stream, in order with the calls on it.
__global__ void fc_set_sync_delay_plan(int slot, FcSyncDelayPlan plan) {
  if (slot >= 0 && slot < kFcSyncDelayPlans) fc_sync_delay_plans[slot] = plan;
}

// `rank`: the site's rank, -1 where the site does not know it. Where several plans name the
// site and the block, the longest holds. Not inlined: one body per module instead of one per
// site and kernel instantiation (a third of the hooked copy's compile time).
__device__ __noinline__ void fc_sync_delay(int line, int rank) {
  std::uint32_t ns = 0;
  for (int i = 0; i < kFcSyncDelayPlans; ++i) {
    const FcSyncDelayPlan& plan = fc_sync_delay_plans[i];
    if (plan.line != line || (plan.rank >= 0 && plan.rank != rank)) continue;
    if (plan.block >= 0 && blockIdx.x != static_cast<unsigned>(plan.block) % gridDim.x) continue;
    if (plan.ns > ns) ns = plan.ns;
  }
  if (ns == 0) return;
  const long long start = clock64();
  std::uint64_t t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {  // ns (at most 2^32 - 1), and a bound in cycles should the timer stall
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns && clock64() - start < (1ll << 34));
}

#define FUSIONCHECK_SYNC_DELAY(line) fc_sync_delay(line, -1)
#define FUSIONCHECK_SYNC_DELAY_RANK(line, rank) fc_sync_delay(line, static_cast<int>(rank))
