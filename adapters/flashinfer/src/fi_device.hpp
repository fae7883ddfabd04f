#pragma once
// Small device helpers of the adapter (fi_device.cu): the seeded pauses between launches.
#include <cuda_runtime.h>

#include <cstdint>

namespace fusioncheck::adapters::fi {

// The pause before call `call_index` of `rank`: about half of the (seed, rank, call) draws
// pause, for up to max_ns; 0 = none.
std::uint32_t delay_for(std::uint32_t seed, int rank, std::uint32_t call_index,
                        std::uint32_t max_ns);
// Whether a delayed call starts its blocks staggered (launch_sm_hog) instead of late as a
// whole (launch_pause): about half of them.
bool staggered_start_for(std::uint32_t seed, int rank, std::uint32_t call_index);
// Occupies every SM and frees them one by one over spread_ns, on `stream` (another stream
// than the kernel's): the kernel launched next starts its blocks spread over that time.
void launch_sm_hog(std::uint32_t spread_ns, int sm_count, cudaStream_t stream);
// Enqueues a one-thread kernel that spins for `ns` nanoseconds (bounded by its argument).
void launch_pause(std::uint32_t ns, cudaStream_t stream);
// Loads the two kernels above now: loaded lazily at their first launch, they would wait for
// every kernel of the context to finish, one that spins without bound included.
void preload_device_kernels();

}  // namespace fusioncheck::adapters::fi
