// The unfused baseline's second kernel: residual + RMSNorm (+ quantisation) over an
// already allreduced tensor, one block per token row (what users run without fusion).
#include <algorithm>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "device/epilogue.cuh"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/kernels/validate.hpp"
#include "instances.hpp"

namespace fusioncheck::kernels {
namespace device {

template <typename T, EpilogueScope S>
__global__ void __launch_bounds__(1024)
    fc_residual_rmsnorm_kernel(const EpilogueArgs e, const void* allreduced) {
  __shared__ float scratch[32];
  RowReduction red{scratch};
  auto sum_vector = [&](int t, int v, float(&ar)[8]) {
    load_row_vector<T, 8>(
        allreduced, static_cast<std::uint64_t>(t) * e.hidden + static_cast<std::uint64_t>(v) * 8,
        ar);
  };
  for (int t = blockIdx.x; t < e.tokens; t += gridDim.x)
    process_row<T, 8, S, Rounding::elements>(e, t, 0, e.hidden / 8, red, sum_vector);
}

// The plain instance (residual + RMSNorm only) or the one of every pattern (choice.hpp).
template <typename T>
void launch_residual_rmsnorm_instance(bool plain, int grid, int threads, cudaStream_t stream,
                                      const EpilogueArgs& e, const void* allreduced) {
  if (plain)
    fc_residual_rmsnorm_kernel<T, EpilogueScope::plain>
        <<<grid, threads, 0, stream>>>(e, allreduced);
  else
    fc_residual_rmsnorm_kernel<T, EpilogueScope::full><<<grid, threads, 0, stream>>>(e, allreduced);
}

}  // namespace device

cudaError_t detail::preload_unfused_kernels() {  // see preload_kernels (launch.hpp)
  using device::fc_residual_rmsnorm_kernel;
  constexpr auto kPlain = EpilogueScope::plain, kFull = EpilogueScope::full;
  cudaFuncAttributes attributes{};
  for (const void* kernel :
       {reinterpret_cast<const void*>(fc_residual_rmsnorm_kernel<__nv_bfloat16, kPlain>),
        reinterpret_cast<const void*>(fc_residual_rmsnorm_kernel<__nv_bfloat16, kFull>),
        reinterpret_cast<const void*>(fc_residual_rmsnorm_kernel<__half, kPlain>),
        reinterpret_cast<const void*>(fc_residual_rmsnorm_kernel<__half, kFull>)}) {
    const cudaError_t e = cudaFuncGetAttributes(&attributes, kernel);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

void launch_residual_rmsnorm_unfused(const FusedParams& p, const void* allreduced,
                                     cudaStream_t stream) {
  if (p.pattern == Pattern::allreduce)
    throw InvalidLaunch("unfused residual+RMSNorm: pattern allreduce has no epilogue");
  FusedParams check = p;
  check.input = allreduced;
  int device = 0, major = 0, minor = 0;
  FC_CUDA_CHECK(cudaGetDevice(&device));
  FC_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  FC_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  // Reuse the fused checks; the unfused kernel has no workspace, so size limits are moot.
  validate_twoshot(check, LaunchLimits{p.ranks, ~0ull, p.fp32_lamport, ~0ull, major * 10 + minor});
  device::EpilogueArgs e = device::epilogue_args(p);
  e.allreduce_out = nullptr;  // the allreduce already happened
  const int threads = std::max(32, std::min(1024, (p.hidden / 8 + 31) / 32 * 32));
  const int grid = std::min(p.tokens, 65535);
  // The same two instances per dtype as the fused kernels (choice.hpp), so that the baseline
  // is not slowed by code it does not run; it sums nothing, so only the pattern decides.
  const bool plain = epilogue_scope_for(p.pattern, true) == EpilogueScope::plain;
  if (p.dtype == DType::bf16)
    device::launch_residual_rmsnorm_instance<__nv_bfloat16>(plain, grid, threads, stream, e,
                                                            allreduced);
  else
    device::launch_residual_rmsnorm_instance<__half>(plain, grid, threads, stream, e, allreduced);
  FC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fusioncheck::kernels
