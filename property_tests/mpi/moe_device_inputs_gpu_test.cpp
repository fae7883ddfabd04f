// The GPU's MoE input generator and reduction (mpi_launch: device_inputs.hpp,
// generate_moe_on_device) against the host's (reference/moe.hpp: make_moe_inputs, moe_combine):
// bit for bit, for both kernels and both 16-bit types, exact and random inputs, the finalize
// kernel's options, sizes around the grid's stride. `gpu check` sums the GPU's reductions in
// its reference, so a difference here would be reported as a kernel bug. Skips (visibly)
// without a CUDA device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fusioncheck/gpu/device_buffer.hpp"
#include "fusioncheck/gpu/device_inputs.hpp"
#include "fusioncheck/reference/moe.hpp"

namespace fg = fusioncheck::gpu;
namespace ref = fusioncheck::reference;
namespace me = fusioncheck::reference::moe_elements;
using fusioncheck::protocol::DType;

namespace {

bool is_nan(DType t, std::uint16_t bits) { return std::isnan(me::bits16_to_float(t, bits)); }

// The index of the first difference, or -1. Two NaNs are equal: inf - inf gives a NaN whose
// sign the host's and the GPU's arithmetic choose differently, and every check reads a NaN as
// a NaN.
long first_difference(DType t, const std::vector<std::uint16_t>& a,
                      const std::vector<std::uint16_t>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && !(is_nan(t, a[i]) && is_nan(t, b[i]))) return static_cast<long>(i);
  return -1;
}

TEST(MoeDeviceInputsCompare, ADifferenceIsFoundAndNaNsOfEitherSignAreEqual) {
  const std::vector<std::uint16_t> a = {0x3f80, 0x7fc0, 0x0000};
  EXPECT_EQ(first_difference(DType::bf16, a, a), -1);
  EXPECT_EQ(first_difference(DType::bf16, a, {0x3f80, 0xffc0, 0x0000}), -1);
  EXPECT_EQ(first_difference(DType::bf16, a, {0x3f80, 0x7fc0, 0x8000}), 2);  // -0 is not +0
  EXPECT_EQ(first_difference(DType::f16, {0x7e00}, {0x7c00}), 0);            // NaN is not inf
  EXPECT_EQ(first_difference(DType::bf16, a, {0x3f80}), 0);
}

std::vector<std::uint16_t> bits_of(const ref::Tensor& t) {
  const auto b = t.bits16();
  return {b.begin(), b.end()};
}

std::vector<std::uint16_t> download(const fg::DeviceBuffer& b, std::size_t elems) {
  std::vector<std::uint16_t> out(elems);
  if (elems > 0) b.download(out.data(), elems * 2);
  return out;
}

struct Call {
  ref::MoeConfig moe;
  DType dtype = DType::bf16;
  int tokens = 1, hidden = 16;
  bool exact = true;
  int ranks = 2, rank = 0;
  int specials = 24;
};

std::string describe(const Call& c) {
  return std::string(c.moe.kind == ref::MoeKind::finalize ? "finalize" : "reduction") +
         " E=" + std::to_string(c.moe.experts) + " " + std::string(ref::dtype_name(c.dtype)) +
         " tokens " + std::to_string(c.tokens) + " hidden " + std::to_string(c.hidden) +
         (c.exact ? " exact" : " random") + " rank " + std::to_string(c.rank) + " scales " +
         std::to_string(c.moe.expert_scales) + " shared " + std::to_string(c.moe.shared_expert) +
         " scaling " + std::to_string(c.moe.routed_scaling);
}

// Generates the call on the GPU from the host's small parts and compares the expert rows, the
// token rows and the reduction with the host's whole inputs and moe_combine. `host_rank`: the
// rank whose host inputs it is compared with (another rank than the GPU's: a control).
void expect_equal_to_host(const Call& c, int host_rank, bool expect_equal) {
  const ref::ExactSpec spec{0x5eedull + static_cast<std::uint64_t>(c.tokens), 3, c.ranks, true};
  ref::SpecialsSpec specials;
  specials.specials_per_256 = c.specials;
  const ref::MoeInputs small =
      ref::make_moe_inputs(c.moe, c.dtype, c.tokens, c.hidden, spec, specials, c.exact, c.rank,
                           ref::MoeParts::small_only);
  const ref::MoeInputs whole =
      ref::make_moe_inputs(c.moe, c.dtype, c.tokens, c.hidden, spec, specials, c.exact, host_rank);
  const ref::Tensor reduction = ref::moe_combine(c.moe, c.dtype, c.tokens, c.hidden, whole);
  const bool finalize = c.moe.kind == ref::MoeKind::finalize;
  const std::size_t elems = static_cast<std::size_t>(c.tokens) * c.hidden;
  const std::size_t row_elems = whole.expert_rows.size();
  fg::DeviceBuffer rows(row_elems * 2 + 16), token_rows(elems * 2 + 16), out(elems * 2 + 16),
      scales(small.reduction_scales.size() * 4 + 16), index(small.permuted_index.size() * 4 + 16),
      topk(small.topk_scales.bytes() + 16);
  const std::vector<int> row_tokens =
      finalize ? ref::moe_row_tokens(c.moe, small) : std::vector<int>{};
  fg::DeviceBuffer tokens_of(row_tokens.size() * sizeof(int) + 16);
  cudaStream_t stream = nullptr;
  fg::cuda_check(cudaStreamCreate(&stream), "cudaStreamCreate");
  scales.upload(small.reduction_scales.data(), small.reduction_scales.size() * 4, stream);
  index.upload(small.permuted_index.data(), small.permuted_index.size() * 4, stream);
  topk.upload(small.topk_scales.data(), small.topk_scales.bytes(), stream);
  tokens_of.upload(row_tokens.data(), row_tokens.size() * sizeof(int), stream);
  fg::MoeOnDevice g;
  g.moe = c.moe;
  g.draws = ref::moe_draws(c.moe, c.dtype, spec, specials, c.exact);
  g.rows_pre = ref::moe_stream_prefix(spec, c.rank, me::Part::expert_rows);
  g.token_rows_pre = ref::moe_stream_prefix(spec, c.rank, me::Part::token_rows);
  g.tokens = c.tokens;
  g.hidden = c.hidden;
  g.rows = small.rows;
  g.expert_rows = static_cast<std::uint16_t*>(rows.get());
  g.token_rows = static_cast<std::uint16_t*>(token_rows.get());
  g.reduction = static_cast<std::uint16_t*>(out.get());
  g.reduction_scales = static_cast<const float*>(scales.get());
  g.permuted_index = static_cast<const std::int32_t*>(index.get());
  g.topk_scales = static_cast<const std::uint16_t*>(topk.get());
  g.row_tokens = static_cast<const int*>(tokens_of.get());
  fg::generate_moe_on_device(g, stream);
  fg::cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaStreamDestroy(stream);
  const long rows_diff =
      first_difference(c.dtype, download(rows, row_elems), bits_of(whole.expert_rows));
  const long sum_diff = first_difference(c.dtype, download(out, elems), bits_of(reduction));
  if (!expect_equal) {
    EXPECT_TRUE(rows_diff >= 0 && sum_diff >= 0)
        << describe(c) << ": rank " << host_rank << "'s inputs compared equal";
    return;
  }
  EXPECT_EQ(rows_diff, -1) << describe(c) << ": expert rows";
  EXPECT_EQ(sum_diff, -1) << describe(c) << ": reduction";
  if (!finalize || c.moe.shared_expert)
    EXPECT_EQ(first_difference(c.dtype, download(token_rows, elems), bits_of(whole.token_rows)), -1)
        << describe(c) << ": token rows";
}

class MoeDeviceInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no usable CUDA device";
  }
};

TEST_F(MoeDeviceInputs, ReductionKernelInputsEqualTheHost) {
  int checked = 0;
  for (DType dtype : {DType::bf16, DType::f16})
    for (bool exact : {true, false})
      for (int experts : {1, 3, 8, 16})
        for (const auto& [tokens, hidden] :
             std::vector<std::pair<int, int>>{{1, 16}, {7, 2880}, {33, 4096}, {130, 8192}}) {
          Call c;
          c.moe.kind = ref::MoeKind::reduction;
          c.moe.experts = experts;
          c.dtype = dtype;
          c.tokens = tokens;
          c.hidden = hidden;
          c.exact = exact;
          c.rank = 1;
          expect_equal_to_host(c, c.rank, true);
          ++checked;
        }
  EXPECT_EQ(checked, 2 * 2 * 4 * 4);
}

TEST_F(MoeDeviceInputs, FinalizeKernelInputsEqualTheHost) {
  int checked = 0;
  for (DType dtype : {DType::bf16, DType::f16})
    for (bool exact : {true, false})
      for (int top_k : {1, 8, 16})
        for (bool scales : {true, false})
          for (bool shared : {false, true})
            for (const auto& [tokens, hidden] :
                 std::vector<std::pair<int, int>>{{1, 16}, {7, 2880}, {200, 7168}}) {
              Call c;
              c.moe.kind = ref::MoeKind::finalize;
              c.moe.experts = top_k;
              c.moe.expert_scales = scales;
              c.moe.shared_expert = shared;
              c.moe.routed_scaling = exact ? 2.0f : 2.5f;
              c.dtype = dtype;
              c.tokens = tokens;
              c.hidden = hidden;
              c.exact = exact;
              c.ranks = 8;
              c.rank = 5;
              expect_equal_to_host(c, c.rank, true);
              ++checked;
            }
  EXPECT_EQ(checked, 2 * 2 * 3 * 2 * 2 * 3);
}

// Random inputs made only of specials (overflow to inf, inf - inf) still agree, up to a NaN's
// sign.
TEST_F(MoeDeviceInputs, SpecialsOnlyEqualTheHost) {
  for (ref::MoeKind kind : {ref::MoeKind::reduction, ref::MoeKind::finalize}) {
    Call c;
    c.moe.kind = kind;
    c.moe.experts = 8;
    c.exact = false;
    c.specials = 256;
    c.tokens = 9;
    c.hidden = 1024;
    expect_equal_to_host(c, 0, true);
  }
}

// The control: the GPU's rank 1 against the host's rank 0 differs (the comparison sees data).
TEST_F(MoeDeviceInputs, AnotherRanksInputsDiffer) {
  Call c;
  c.moe.experts = 4;
  c.tokens = 5;
  c.hidden = 256;
  c.rank = 1;
  expect_equal_to_host(c, 0, false);
}

}  // namespace
