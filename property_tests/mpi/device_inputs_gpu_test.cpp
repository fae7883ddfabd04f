// The GPU's input generator (mpi_launch: device_inputs.hpp) against the host generators:
// bit for bit, for both 16-bit types, exact and random inputs, rank and residual streams,
// sizes around the grid's stride. `gpu check` takes the GPU's own input and residual on
// trust and checks outputs against references built from the host's rows, so a difference
// here would be reported as a kernel bug. Skips (visibly) without a CUDA device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fusioncheck/gpu/device_buffer.hpp"
#include "fusioncheck/gpu/device_inputs.hpp"
#include "fusioncheck/reference/reference.hpp"

namespace fg = fusioncheck::gpu;
namespace ref = fusioncheck::reference;
using fusioncheck::protocol::DType;

namespace {

class DeviceInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no usable CUDA device";
  }
};

// What the generator wrote to out and to copy, downloaded.
struct Generated {
  std::vector<std::uint16_t> out, copy;
};
template <typename Spec>
Generated generate(const Spec& spec, int input_stream, DType dtype, std::size_t elems) {
  fg::DeviceBuffer out(elems * 2 + 2), copy(elems * 2 + 2);
  cudaStream_t stream = nullptr;
  fg::cuda_check(cudaStreamCreate(&stream), "cudaStreamCreate");
  out.fill(0x55, stream, elems * 2 + 2);  // not a value either generator makes in every slot
  copy.fill(0x55, stream, elems * 2 + 2);
  fg::generate_on_device(spec, input_stream, dtype, elems, static_cast<std::uint16_t*>(out.get()),
                         static_cast<std::uint16_t*>(copy.get()), stream);
  fg::cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaStreamDestroy(stream);
  Generated g{std::vector<std::uint16_t>(elems + 1), std::vector<std::uint16_t>(elems + 1)};
  out.download(g.out.data(), (elems + 1) * 2);
  copy.download(g.copy.data(), (elems + 1) * 2);
  EXPECT_EQ(g.out.back(), 0x5555u) << "wrote past the end";
  EXPECT_EQ(g.copy.back(), 0x5555u) << "wrote past the end of the copy";
  g.out.pop_back();
  g.copy.pop_back();
  return g;
}

std::vector<std::uint16_t> host_bits(const ref::Tensor& t) {
  const auto b = t.bits16();
  return {b.begin(), b.end()};
}

// The index of the first difference, or -1.
long first_difference(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<long>(i);
  return -1;
}

// Sizes: one element, less than a block, the grid-stride boundary (4096 blocks x 256) and a
// call of 130 tokens x 8192.
const std::vector<std::size_t> kSizes = {1, 200, 4096 * 256 + 3, 130 * 8192};

TEST_F(DeviceInputs, ExactStreamsEqualTheHostGenerator) {
  int checked = 0;
  for (DType dtype : {DType::bf16, DType::f16})
    for (int ranks : {2, 8})
      for (std::size_t elems : kSizes)
        for (int stream : {0, ranks - 1, ref::kResidualStream})
          for (bool neg_zero : {true, false}) {
            const ref::ExactSpec spec{0x5eedull + elems, static_cast<std::uint64_t>(ranks) * 3 + 1,
                                      ranks, neg_zero};
            const Generated got = generate(spec, stream, dtype, elems);
            const auto want =
                host_bits(ref::exact_input(spec, stream, 1, static_cast<int>(elems), dtype));
            const std::string what = std::string(ref::dtype_name(dtype)) + " ranks " +
                                     std::to_string(ranks) + " elems " + std::to_string(elems) +
                                     " stream " + std::to_string(stream) + " neg_zero " +
                                     std::to_string(neg_zero);
            ASSERT_EQ(first_difference(got.out, want), -1) << what;
            ASSERT_EQ(first_difference(got.copy, want), -1) << what << " (copy)";
            ++checked;
          }
  EXPECT_EQ(checked, 2 * 2 * 4 * 3 * 2);
}

TEST_F(DeviceInputs, RandomStreamsEqualTheHostGenerator) {
  for (DType dtype : {DType::bf16, DType::f16})
    for (std::size_t elems : kSizes)
      for (int specials : {0, 24, 256})
        for (int flags = 0; flags < 4; ++flags)
          for (int stream : {1, ref::kResidualStream}) {
            const ref::SpecialsSpec spec{elems * 7 + 1, static_cast<std::uint64_t>(specials),
                                         specials, (flags & 1) != 0, (flags & 2) != 0};
            const Generated got = generate(spec, stream, dtype, elems);
            const auto want = host_bits(
                ref::random_with_specials(spec, stream, 1, static_cast<int>(elems), dtype));
            ASSERT_EQ(first_difference(got.out, want), -1)
                << ref::dtype_name(dtype) << " elems " << elems << " specials " << specials
                << " flags " << flags << " stream " << stream;
          }
}

// The comparison can fail: the host stream of the next call differs from what the GPU made.
TEST_F(DeviceInputs, AnotherCallsStreamDiffers) {
  const Generated got = generate(ref::ExactSpec{9, 4, 2, true}, 0, DType::bf16, 4096);
  const auto other =
      host_bits(ref::exact_input(ref::ExactSpec{9, 5, 2, true}, 0, 1, 4096, DType::bf16));
  EXPECT_NE(first_difference(got.out, other), -1);
  const Generated r = generate(ref::SpecialsSpec{9, 4, 24, false, true}, 0, DType::f16, 4096);
  ref::SpecialsSpec next;
  next.seed = 9;
  next.call_index = 5;
  EXPECT_NE(
      first_difference(r.out, host_bits(ref::random_with_specials(next, 0, 1, 4096, DType::f16))),
      -1);
}

TEST_F(DeviceInputs, Fp32AndNoRanksAreRefused) {
  fg::DeviceBuffer out(64);
  auto* p = static_cast<std::uint16_t*>(out.get());
  EXPECT_THROW(fg::generate_on_device(ref::ExactSpec{}, 0, DType::f32, 8, p, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(fg::generate_on_device(ref::SpecialsSpec{}, 0, DType::f32, 8, p, nullptr, nullptr),
               std::invalid_argument);
  ref::ExactSpec none;
  none.ranks = 0;
  EXPECT_THROW(fg::generate_on_device(none, 0, DType::bf16, 8, p, nullptr, nullptr),
               std::invalid_argument);
}

}  // namespace
