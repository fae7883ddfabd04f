#pragma once
// Included before a copy of FlashInfer's PCIe header whose poll loops the build rewrote
// (`while (true) {` and `while (!generation_reached(...)) {` become for loops that open a
// FUSIONCHECK_POLL_TIMER; adapters/flashinfer/cmake/poll_profile.cmake). The timer lives as long as
// one poll: when it ends, thread 0 of each block adds the poll's cycles to its source line's
// entry. One thread per block writes its own row, so no atomics; the row holds the first
// kPollProfileSites lines a block polls at (the header has fewer poll loops than that per kernel).
#include <cstdint>

#include "fi_pcie_call.hpp"

namespace fusioncheck_poll_profile {

using fusioncheck::adapters::fi::kPollProfileBlocks;
using fusioncheck::adapters::fi::kPollProfileSites;
using fusioncheck::adapters::fi::PollSiteCycles;

__device__ PollSiteCycles g_sites[kPollProfileBlocks][kPollProfileSites];

struct Timer {
  unsigned line = 0;
  long long start = 0;
  __host__ __device__ explicit Timer(unsigned source_line) : line(source_line) {
#ifdef __CUDA_ARCH__
    start = clock64();
#endif
  }
  __host__ __device__ ~Timer() {
#ifdef __CUDA_ARCH__
    if (threadIdx.x != 0 || blockIdx.x >= kPollProfileBlocks) return;
    const auto cycles = static_cast<unsigned long long>(clock64() - start);
    PollSiteCycles* row = g_sites[blockIdx.x];
    for (int i = 0; i < kPollProfileSites; ++i) {
      if (row[i].line != line && row[i].line != 0) continue;
      row[i].line = line;
      row[i].polls += 1;
      row[i].cycles += cycles;
      return;
    }
#endif
  }
};

}  // namespace fusioncheck_poll_profile

#define FUSIONCHECK_POLL_TIMER ::fusioncheck_poll_profile::Timer fusioncheck_poll_timer_(__LINE__)
