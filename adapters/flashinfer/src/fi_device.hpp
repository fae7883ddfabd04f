#pragma once
// Small device helpers of the adapter (fi_device.cu): the seeded pause between launches.
#include <cuda_runtime.h>

#include <cstdint>

namespace fusioncheck::adapters::fi {

// The pause before call `call_index` of `rank`: about half of the (seed, rank, call) draws
// pause, for up to max_ns; 0 = none.
std::uint32_t delay_for(std::uint32_t seed, int rank, std::uint32_t call_index, std::uint32_t max_ns);
// Enqueues a one-thread kernel that spins for `ns` nanoseconds (bounded by its argument).
void launch_pause(std::uint32_t ns, cudaStream_t stream);

}  // namespace fusioncheck::adapters::fi
