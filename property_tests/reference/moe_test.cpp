// The MoE reduction of the reference (moe.hpp): its inputs as the kernels read them (routing
// rows, dropped pairs, unreferenced rows), exact inputs against an exact sum in double, and
// hand-made cases where the kernels' rounding points decide the result, each with the
// alternative that must differ (negative controls).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/moe.hpp"

namespace fusioncheck::reference {
namespace {

MoeInputs inputs(const MoeConfig& moe, DType dtype, int tokens, int hidden, int ranks,
                 std::uint64_t seed, bool exact, int rank) {
  const ExactSpec spec{seed, 3, ranks, true};
  SpecialsSpec specials;
  return make_moe_inputs(moe, dtype, tokens, hidden, spec, specials, exact, rank);
}

// The value of element i of the combined input, summed exactly in double.
double exact_combine(const MoeConfig& moe, DType t, int tokens, int hidden, const MoeInputs& in,
                     std::size_t i) {
  const auto h = static_cast<std::size_t>(hidden);
  const auto elems = static_cast<std::size_t>(tokens) * h;
  const std::size_t token = i / h, j = i % h;
  double sum = 0;
  if (moe.kind == MoeKind::reduction) {
    for (int e = 0; e < moe.experts; ++e)
      sum += double(in.expert_rows.value_at(e * elems + i)) *
             in.reduction_scales[e * static_cast<std::size_t>(tokens) + token];
    return sum + in.token_rows.value_at(i);
  }
  for (int k = 0; k < moe.experts; ++k) {
    const std::int32_t p = in.permuted_index[token * moe.experts + k];
    if (p == -1) continue;
    const double w = moe.expert_scales ? in.topk_scales.value_at(token * moe.experts + k) : 1.0;
    sum += double(in.expert_rows.value_at(static_cast<std::size_t>(p) * h + j)) * w;
  }
  sum *= moe.routed_scaling;
  if (moe.shared_expert) sum += in.token_rows.value_at(i);
  (void)t;
  return sum;
}

TEST(MoeReference, ExactInputsGiveTheExactSumInEveryShape) {
  int checked = 0;
  for (DType t : {DType::bf16, DType::f16})
    for (MoeKind kind : {MoeKind::reduction, MoeKind::finalize})
      for (int experts : {1, 2, 6, 8, 16})
        for (int ranks : {2, 4, 8})
          for (std::uint64_t seed = 1; seed <= 3; ++seed) {
            MoeConfig moe{kind, experts, seed != 2, seed != 3, seed == 1 ? 2.0f : 1.0f};
            const int tokens = 5, hidden = 2880 / 16;
            const MoeInputs in = inputs(moe, t, tokens, hidden, ranks, seed, true, ranks - 1);
            const Tensor got = moe_combine(moe, t, tokens, hidden, in);
            for (std::size_t i = 0; i < got.size(); ++i) {
              const double want = exact_combine(moe, t, tokens, hidden, in, i);
              ASSERT_EQ(double(got.value_at(i)), want) << "element " << i << " experts " << experts;
              ASSERT_FALSE(is_neg_zero(t, got.bits_at(i)));
              ++checked;
            }
          }
  EXPECT_GT(checked, 10000);
}

TEST(MoeReference, RanksExactValuesKeepTheAllreduceExact) {
  // Every rank's reduced value within generators.hpp's bound: the per-step sum over the ranks in
  // T equals the exact sum (so an exact call stays exact after the MoE part).
  for (DType t : {DType::bf16, DType::f16})
    for (int ranks : {2, 4, 8})
      for (int experts : {1, 4, 8}) {
        MoeConfig moe{MoeKind::finalize, experts, true, true, 2.0f};
        const int tokens = 3, hidden = 64;
        std::vector<Tensor> reduced;
        for (int r = 0; r < ranks; ++r)
          reduced.push_back(moe_combine(moe, t, tokens, hidden,
                                        inputs(moe, t, tokens, hidden, ranks, 9, true, r)));
        for (std::size_t i = 0; i < reduced[0].size(); ++i) {
          double exact = 0;
          float step = 0;
          for (const Tensor& x : reduced) {
            exact += x.value_at(i);
            step = round_to(t, step + x.value_at(i));
          }
          ASSERT_EQ(double(step), exact) << "ranks " << ranks << " element " << i;
        }
      }
}

TEST(MoeReference, RoutingRowsAreAPermutationWithDropsAndUnreferencedNaNRows) {
  MoeConfig moe{MoeKind::finalize, 8, true, false, 1.0f};
  const int tokens = 40, hidden = 16;
  const MoeInputs in = inputs(moe, DType::bf16, tokens, hidden, 4, 5, false, 1);
  ASSERT_EQ(in.permuted_index.size(), static_cast<std::size_t>(tokens * 8));
  ASSERT_GE(in.rows, tokens * 8);
  ASSERT_LE(in.rows, tokens * 8 + kMaxMoePaddedRows);
  std::set<std::int32_t> seen;
  int dropped = 0;
  for (std::int32_t p : in.permuted_index) {
    if (p == -1) {
      ++dropped;
      continue;
    }
    ASSERT_GE(p, 0);
    ASSERT_LT(p, in.rows);
    ASSERT_TRUE(seen.insert(p).second) << "row " << p << " referenced twice";
  }
  EXPECT_GT(dropped, 10);  // about one pair in eight
  EXPECT_LT(dropped, 100);
  for (int p = 0; p < in.rows; ++p)
    if (!seen.count(p))
      for (int j = 0; j < hidden; ++j)
        ASSERT_TRUE(std::isnan(in.expert_rows.value_at(static_cast<std::size_t>(p) * hidden + j)));
  // Different ranks route differently; the same rank the same way.
  EXPECT_NE(inputs(moe, DType::bf16, tokens, hidden, 4, 5, false, 2).permuted_index,
            in.permuted_index);
  EXPECT_EQ(inputs(moe, DType::bf16, tokens, hidden, 4, 5, false, 1).permuted_index,
            in.permuted_index);
}

TEST(MoeReference, RandomInputsStayFiniteWhereTheInputsAre) {
  // A NaN output would mean an unreferenced (NaN) row was read.
  for (DType t : {DType::bf16, DType::f16}) {
    MoeConfig moe{MoeKind::finalize, 6, true, true, 2.5f};
    const MoeInputs in = inputs(moe, t, 30, 128, 2, 11, false, 0);
    const Tensor got = moe_combine(moe, t, 30, 128, in);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_FALSE(std::isnan(got.value_at(i))) << i;
  }
}

// One token, one element: the inputs by hand.
MoeInputs by_hand_reduction(const std::vector<float>& x, const std::vector<float>& s, float fc2) {
  MoeInputs in;
  in.expert_rows = Tensor(DType::bf16, x.size());
  for (std::size_t e = 0; e < x.size(); ++e) in.expert_rows.set_value(e, x[e]);
  in.reduction_scales = s;
  in.token_rows = Tensor(DType::bf16, 1);
  in.token_rows.set_value(0, fc2);
  return in;
}

TEST(MoeReference, ReductionRoundsAfterEveryExpert) {
  // bf16 ulp at 1 is 2^-7: 1 + 2^-8 is a tie to even (1), twice; summed in fp32 first, the two
  // halves would make 1 + 2^-7.
  const MoeConfig moe{MoeKind::reduction, 3, true, false, 1.0f};
  const MoeInputs in = by_hand_reduction({1.0f, 0x1p-8f, 0x1p-8f}, {1.0f, 1.0f, 1.0f}, 0.0f);
  EXPECT_EQ(moe_combine(moe, DType::bf16, 1, 1, in).value_at(0), 1.0f);
  EXPECT_EQ(round_to(DType::bf16, 1.0f + 0x1p-8f + 0x1p-8f), 1.0f + 0x1p-7f);  // the alternative
}

TEST(MoeReference, ReductionRoundsTheScaledTermToTBeforeAdding) {
  // 1 * (2^-8 + 2^-20) rounds to 2^-8 in bf16; 1 + 2^-8 is then a tie to even (1). The fp32
  // product added unrounded would be above the tie: 1 + 2^-7.
  const MoeConfig moe{MoeKind::reduction, 2, true, false, 1.0f};
  const float s = 0x1p-8f + 0x1p-20f;
  const MoeInputs in = by_hand_reduction({1.0f, 1.0f}, {1.0f, s}, 0.0f);
  EXPECT_EQ(moe_combine(moe, DType::bf16, 1, 1, in).value_at(0), 1.0f);
  EXPECT_EQ(round_to(DType::bf16, 1.0f + s), 1.0f + 0x1p-7f);  // the alternative
}

TEST(MoeReference, FinalizeScalesOnceAfterTheExpertsThenAddsTheSharedExpert) {
  MoeConfig moe{MoeKind::finalize, 2, false, true, 3.0f};
  MoeInputs in;
  in.rows = 3;
  in.expert_rows = Tensor(DType::bf16, 3);
  in.expert_rows.set_value(0, std::nanf(""));  // unreferenced
  in.expert_rows.set_value(1, 0x1p-8f);
  in.expert_rows.set_value(2, 1.0f);
  in.permuted_index = {2, 1};
  in.token_rows = Tensor(DType::bf16, 1);
  in.token_rows.set_value(0, 0x1p-6f);
  // (1 + 2^-8 -> 1) * 3 = 3, + 2^-6 = 3 + 2^-6.
  EXPECT_EQ(moe_combine(moe, DType::bf16, 1, 1, in).value_at(0), 3.0f + 0x1p-6f);
  // Alternatives that must differ: scaling every expert (3 + 3 * 2^-8 rounds up), the shared
  // expert added before the scaling.
  EXPECT_NE(round_to(DType::bf16, round_to(DType::bf16, 3.0f + 3 * 0x1p-8f) + 0x1p-6f),
            3.0f + 0x1p-6f);
  EXPECT_NE(round_to(DType::bf16, (1.0f + 0x1p-6f) * 3.0f), 3.0f + 0x1p-6f);
  // A dropped pair (-1) is skipped: only the shared expert is left.
  in.permuted_index = {-1, -1};
  EXPECT_EQ(moe_combine(moe, DType::bf16, 1, 1, in).value_at(0), 0x1p-6f);
  // Reading row 0 for it instead would give NaN.
  in.permuted_index = {0, -1};
  EXPECT_TRUE(std::isnan(moe_combine(moe, DType::bf16, 1, 1, in).value_at(0)));
}

TEST(MoeReference, NegativeZeroTermsNeverMakeANegativeZeroInput) {
  MoeConfig moe{MoeKind::reduction, 2, true, false, 1.0f};
  const MoeInputs in = by_hand_reduction({-0.0f, -0.0f}, {1.0f, 1.0f}, -0.0f);
  EXPECT_EQ(moe_combine(moe, DType::bf16, 1, 1, in).bits_at(0), 0u);  // +0
}

TEST(MoeReference, RejectsWhatNoCallHas) {
  EXPECT_THROW(validate(MoeConfig{MoeKind::reduction, 0}, DType::bf16), std::invalid_argument);
  EXPECT_THROW(validate(MoeConfig{MoeKind::reduction, kMaxMoeExperts + 1}, DType::bf16),
               std::invalid_argument);
  EXPECT_THROW(validate(MoeConfig{MoeKind::finalize, 2, true, false, 0.0f}, DType::bf16),
               std::invalid_argument);
  EXPECT_THROW(validate(MoeConfig{MoeKind::finalize, 2, true, false, NAN}, DType::bf16),
               std::invalid_argument);
  EXPECT_THROW(validate(MoeConfig{MoeKind::reduction, 2}, DType::f32), std::invalid_argument);
}

}  // namespace
}  // namespace fusioncheck::reference

namespace fusioncheck::reference {
namespace {

namespace me = moe_elements;

// The per-element functions the host and the GPU share (moe_elements.hpp) against the
// reference's element conversions (element.hpp): every 16-bit pattern widens to the same
// float bits (NaN payloads included), and a sum or product of two patterns rounds to the same
// bits, for a sweep of pairs with specials among them.
TEST(MoeElements, ConversionsAndRoundingAgreeWithTheReferenceElements) {
  for (DType t : {DType::bf16, DType::f16}) {
    for (std::uint32_t b = 0; b <= 0xffffu; ++b) {
      const float got = me::bits16_to_float(t, static_cast<std::uint16_t>(b));
      const float want = bits_to_float(t, b);
      ASSERT_EQ(elements::float_bits(got), elements::float_bits(want)) << dtype_name(t) << " " << b;
    }
    std::uint64_t h = 0x5eed;
    int compared = 0;
    for (int i = 0; i < 200000; ++i) {
      h = elements::splitmix64(h);
      const auto a = static_cast<std::uint16_t>(h), c = static_cast<std::uint16_t>(h >> 16);
      const float s = elements::bits_float(static_cast<std::uint32_t>(h >> 32));
      if (std::isnan(bits_to_float(t, a)) || std::isnan(bits_to_float(t, c)) || std::isnan(s))
        continue;  // a NaN's bits are the arithmetic's choice (moe_device_inputs_gpu_test)
      const auto sum =
          static_cast<std::uint16_t>(float_to_bits(t, bits_to_float(t, a) + bits_to_float(t, c)));
      const auto product = static_cast<std::uint16_t>(float_to_bits(t, bits_to_float(t, a) * s));
      if (!std::isnan(bits_to_float(t, sum))) ASSERT_EQ(me::add_t(t, a, c), sum) << a << " " << c;
      if (!std::isnan(bits_to_float(t, product)))
        ASSERT_EQ(me::scaled_t(t, a, s), product) << a << " " << s;
      ++compared;
    }
    EXPECT_GT(compared, 100000);
  }
}

// The negative control: a rounding that truncates instead (what a wrong conversion would do)
// differs from add_t on some of the same pairs.
TEST(MoeElements, ATruncatingSumDiffers) {
  int differ = 0;
  std::uint64_t h = 0x5eed;
  for (int i = 0; i < 1000; ++i) {
    h = elements::splitmix64(h);
    const auto a = static_cast<std::uint16_t>(h & 0x3fff),
               c = static_cast<std::uint16_t>((h >> 16) & 0x3fff);
    const float sum = bits_to_float(DType::bf16, a) + bits_to_float(DType::bf16, c);
    const auto truncated = static_cast<std::uint16_t>(elements::float_bits(sum) >> 16);
    differ += me::add_t(DType::bf16, a, c) != truncated;
  }
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace fusioncheck::reference
