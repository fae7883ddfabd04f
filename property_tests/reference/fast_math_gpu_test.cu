// The reference's fast-math mode (fused.hpp, tolerance.hpp "fast_math") against the device,
// in a translation unit compiled with -use_fast_math like FlashInfer's JIT builds:
//   * the sum, residual add and conversions of the fusion kernel's shape (float adds of widened
//     16-bit values, cvt.rn back) give the reference's fast-math bits, and not its IEEE bits
//     where bf16 subnormals meet (the control that the mode matters);
//   * the worst errors of the division by the hidden size and of rsqrtf, measured over sweeps,
//     stay within the 2 ulp the tolerance takes for them.
// Skips (visibly) without a CUDA device.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"

namespace fusioncheck::reference {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

template <typename T> __device__ float widen(std::uint16_t bits);
template <> __device__ float widen<__nv_bfloat16>(std::uint16_t bits) {
  return __bfloat162float(__ushort_as_bfloat16(bits));
}
template <> __device__ float widen<__half>(std::uint16_t bits) {
  return __half2float(__ushort_as_half(bits));
}
template <typename T> __device__ std::uint16_t narrow(float v);
template <> __device__ std::uint16_t narrow<__nv_bfloat16>(float v) {
  return __bfloat16_as_ushort(__float2bfloat16(v));
}
template <> __device__ std::uint16_t narrow<__half>(float v) {
  return __half_as_ushort(__float2half(v));
}

// allreduce = T(x_0 + x_1 + ...) in float, residual_out = T(float(allreduce) + float(residual)):
// the arithmetic of FlashInfer's allreduce_sum (Fp32Acc) and FusedOp, one element per thread.
template <typename T>
__global__ void sum_kernel(const std::uint16_t* inputs, int ranks, const std::uint16_t* residual,
                           int n, std::uint16_t* allreduce, std::uint16_t* residual_out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = widen<T>(inputs[i]);
  for (int r = 1; r < ranks; ++r) acc += widen<T>(inputs[static_cast<std::size_t>(r) * n + i]);
  const std::uint16_t a = narrow<T>(acc);
  allreduce[i] = a;
  residual_out[i] = narrow<T>(widen<T>(a) + widen<T>(residual[i]));
}

struct SumResult {
  std::vector<std::uint16_t> allreduce, residual_out;
};

SumResult run_sum(const FusedConfig& c, const FusedInputs& in) {
  const std::size_t n = static_cast<std::size_t>(c.tokens) * c.hidden;
  std::vector<std::uint16_t> host(n * static_cast<std::size_t>(c.ranks));
  for (int r = 0; r < c.ranks; ++r)
    std::memcpy(host.data() + static_cast<std::size_t>(r) * n,
                in.rank_inputs[static_cast<std::size_t>(r)].data(), n * 2);
  std::uint16_t *d_in = nullptr, *d_res = nullptr, *d_ar = nullptr, *d_ro = nullptr;
  SumResult out{std::vector<std::uint16_t>(n), std::vector<std::uint16_t>(n)};
  if (cudaMalloc(&d_in, host.size() * 2) != cudaSuccess ||
      cudaMalloc(&d_res, n * 2) != cudaSuccess || cudaMalloc(&d_ar, n * 2) != cudaSuccess ||
      cudaMalloc(&d_ro, n * 2) != cudaSuccess) {
    ADD_FAILURE() << "cudaMalloc failed";
    return out;
  }
  cudaMemcpy(d_in, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(d_res, in.residual_in.data(), n * 2, cudaMemcpyHostToDevice);
  const int blocks = static_cast<int>((n + 255) / 256);
  if (c.dtype == DType::bf16)
    sum_kernel<__nv_bfloat16>
        <<<blocks, 256>>>(d_in, c.ranks, d_res, static_cast<int>(n), d_ar, d_ro);
  else sum_kernel<__half><<<blocks, 256>>>(d_in, c.ranks, d_res, static_cast<int>(n), d_ar, d_ro);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaMemcpy(out.allreduce.data(), d_ar, n * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(out.residual_out.data(), d_ro, n * 2, cudaMemcpyDeviceToHost);
  for (void* p : {static_cast<void*>(d_in), static_cast<void*>(d_res), static_cast<void*>(d_ar),
                  static_cast<void*>(d_ro)})
    cudaFree(p);
  return out;
}

// Elements whose bits differ (any NaN matches any NaN).
std::size_t differences(const Tensor& want, const std::vector<std::uint16_t>& got) {
  std::size_t d = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (want.bits_at(i) == got[i]) continue;
    const bool nan_want = std::isnan(want.value_at(i));
    Tensor one(want.dtype(), 1);
    std::memcpy(one.data(), &got[i], 2);
    if (nan_want && std::isnan(one.value_at(0))) continue;
    ++d;
  }
  return d;
}

FusedConfig sum_config(DType t, int ranks, bool fast_math) {
  FusedConfig c;
  c.ranks = ranks;
  c.tokens = 64;
  c.hidden = 1024;
  c.dtype = t;
  c.canonicalize_neg_zero = false;  // the kernel above sums its inputs as they are
  c.fast_math = fast_math;
  return c;
}

// Subnormals in every fourth element or so: the class where the fast-math build differs.
FusedInputs with_subnormals(const FusedConfig& c, std::uint64_t seed) {
  SpecialsSpec s;
  s.seed = seed;
  s.specials_per_256 = 128;
  s.with_inf_nan = true;
  return make_random_inputs(c, s);
}

TEST(FastMathGpu, SumsAndResidualMatchTheFastMathReferenceBitForBit) {
  if (!have_device()) GTEST_SKIP() << "no usable CUDA device";
  for (DType t : {DType::bf16, DType::f16})
    for (int ranks : {2, 4, 8})
      for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        const FusedConfig c = sum_config(t, ranks, true);
        const FusedInputs in = with_subnormals(c, seed);
        const FusedOutputs want = compute_fused(c, in);
        const SumResult got = run_sum(c, in);
        EXPECT_EQ(differences(want.allreduce, got.allreduce), 0u)
            << dtype_name(t) << " ranks " << ranks << " seed " << seed;
        EXPECT_EQ(differences(want.residual_out, got.residual_out), 0u)
            << dtype_name(t) << " ranks " << ranks << " seed " << seed;
      }
}

// The control: the IEEE reference does not describe this build on bf16 subnormals (so the
// test above could fail), and does on fp16, whose values are all normal in fp32.
TEST(FastMathGpu, TheIeeeReferenceDiffersOnBf16SubnormalsOnly) {
  if (!have_device()) GTEST_SKIP() << "no usable CUDA device";
  for (DType t : {DType::bf16, DType::f16}) {
    const FusedConfig ieee = sum_config(t, 2, false);
    const FusedInputs in = with_subnormals(ieee, 7);
    const SumResult got = run_sum(ieee, in);
    const std::size_t d = differences(compute_fused(ieee, in).allreduce, got.allreduce);
    if (t == DType::bf16) EXPECT_GT(d, 0u) << "bf16 subnormal sums were not flushed";
    else EXPECT_EQ(d, 0u);
  }
}

// Worst ulp error of x / d over x in a sweep of every binade that RMSNorm's sum of squares
// reaches, for the hidden sizes real models use, and of rsqrtf over [1, 4) (every float:
// rsqrt's error pattern repeats with every second binade).
__global__ void divide_kernel(const float* x, int n, float d, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] / d;
}
__global__ void rsqrt_kernel(std::uint32_t first_bits, int n, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = rsqrtf(__uint_as_float(first_bits + static_cast<std::uint32_t>(i)));
}

double ulps(float got, double exact) {
  const float near = static_cast<float>(exact);
  const double spacing = std::nextafter(std::fabs(near), INFINITY) - std::fabs(near);
  return std::fabs(static_cast<double>(got) - exact) / spacing;
}

TEST(FastMathGpu, DivisionByTheHiddenSizeIsWithinTwoUlp) {
  if (!have_device()) GTEST_SKIP() << "no usable CUDA device";
  constexpr int kN = 1 << 20;
  std::vector<float> x(kN);
  std::uint64_t s = 12345;
  for (float& v : x) {  // exponents 2^-60 .. 2^60, random mantissas
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const int e = static_cast<int>((s >> 33) % 121) - 60;
    v = std::ldexp(1.0f + static_cast<float>((s >> 8) & 0x7fffff) * 0x1p-23f, e);
  }
  float *d_x = nullptr, *d_out = nullptr;
  CUDA_OK(cudaMalloc(&d_x, kN * 4));
  CUDA_OK(cudaMalloc(&d_out, kN * 4));
  CUDA_OK(cudaMemcpy(d_x, x.data(), kN * 4, cudaMemcpyHostToDevice));
  std::vector<float> out(kN);
  double worst = 0.0;
  for (int hidden : {576, 896, 1024, 1536, 2048, 2880, 3584, 4096, 5120, 7168, 8192, 12288, 16384,
                     25600, 65536}) {
    divide_kernel<<<kN / 256, 256>>>(d_x, kN, static_cast<float>(hidden), d_out);
    CUDA_OK(cudaMemcpy(out.data(), d_out, kN * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < kN; ++i)
      worst = std::max(worst, ulps(out[static_cast<std::size_t>(i)],
                                   static_cast<double>(x[static_cast<std::size_t>(i)]) / hidden));
  }
  cudaFree(d_x);
  cudaFree(d_out);
  std::printf("fast-math x / hidden: worst error %.3f ulp\n", worst);
  EXPECT_LE(worst, 2.0);
}

TEST(FastMathGpu, RsqrtIsWithinTwoUlp) {
  if (!have_device()) GTEST_SKIP() << "no usable CUDA device";
  const std::uint32_t first = 0x3f800000u;  // 1.0f
  const int n = 1 << 24;                    // [1, 4)
  float* d_out = nullptr;
  CUDA_OK(cudaMalloc(&d_out, static_cast<std::size_t>(n) * 4));
  rsqrt_kernel<<<n / 256, 256>>>(first, n, d_out);
  std::vector<float> out(static_cast<std::size_t>(n));
  CUDA_OK(cudaMemcpy(out.data(), d_out, out.size() * 4, cudaMemcpyDeviceToHost));
  cudaFree(d_out);
  double worst = 0.0;
  for (int i = 0; i < n; ++i) {
    float v;
    const std::uint32_t bits = first + static_cast<std::uint32_t>(i);
    std::memcpy(&v, &bits, 4);
    worst = std::max(worst, ulps(out[static_cast<std::size_t>(i)], 1.0 / std::sqrt(double{v})));
  }
  std::printf("fast-math rsqrtf on [1, 4): worst error %.3f ulp\n", worst);
  EXPECT_LE(worst, 2.0);
}

}  // namespace
}  // namespace fusioncheck::reference
