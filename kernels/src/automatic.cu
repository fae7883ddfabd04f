// The automatic one-/two-shot choice, and the spin kernel gpu bench queues its graphs behind.
#include <cstdint>
#include <limits>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "instances.hpp"

namespace fusioncheck::kernels {

// From how many input bytes per rank two-shot is chosen. One-shot moves (N-1) x size per rank
// over the links and reduces the whole tensor on every rank; two-shot moves 2 (N-1)/N x size
// and reduces 1/N of it, but pays a second round of synchronisation. At 2 ranks both move the
// same bytes, so one-shot is never slower (measured up to 2048 x 8192 on two H200s,
// docs/bench.md). The 4- to 16-rank sizes are estimates from that ratio: our 4- and 8-rank
// runs share one GPU, which says nothing about links.
bool twoshot_preferred(int ranks, std::uint64_t input_bytes_per_rank) {
  std::uint64_t from = std::numeric_limits<std::uint64_t>::max();
  if (ranks == 4) from = 1u << 20;
  if (ranks == 8) from = 256u << 10;
  if (ranks == 16) from = 128u << 10;
  return input_bytes_per_rank >= from;
}

LaunchInfo launch_automatic(const FusedParams& p, Workspace& ws, cudaStream_t stream) {
  const std::uint64_t bytes = static_cast<std::uint64_t>(p.tokens) * p.hidden * dtype_bytes(p.dtype);
  const bool twoshot = twoshot_preferred(p.ranks, bytes);
  LaunchInfo info = twoshot ? launch_twoshot(p, ws, stream) : launch_oneshot(p, ws, stream);
  info.twoshot = twoshot;
  return info;
}

bool polls_bounded() {
#ifdef FUSIONCHECK_BENCH_UNBOUNDED_POLLS
  return false;
#else
  return true;
#endif
}

namespace {
__global__ void fc_spin_kernel(std::uint64_t ns) {
  std::uint64_t t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
}  // namespace

cudaError_t detail::preload_spin_kernel() {  // see preload_kernels (launch.hpp)
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, fc_spin_kernel);
}

void launch_spin(std::uint64_t ns, cudaStream_t stream) {
  fc_spin_kernel<<<1, 1, 0, stream>>>(ns);
  FC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fusioncheck::kernels
