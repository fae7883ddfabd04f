// The reference's sums for FlashInfer's PCIe kernels (fused.hpp): +0 read as -0, the island
// orders of 8 ranks. Checked bit for bit against a straightforward sum written here, on inputs
// of every float class, with controls that show the options change results.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"
#include "fusioncheck/reference/tolerance.hpp"

namespace fusioncheck::reference {
namespace {

// T(a + b) for 16-bit T, as __hadd2 rounds it (float is exact enough for one add).
template <DType T> std::uint16_t add_t(std::uint16_t a, std::uint16_t b) {
  using E = Element<T>;
  return E::from_float(E::to_float(a) + E::to_float(b));
}

template <DType T> std::uint16_t read(std::uint16_t bits, bool sanitise) {
  return sanitise && bits == 0 ? std::uint16_t{0x8000} : bits;
}

// The allreduce one element at a time, in the order the kernels add.
template <DType T>
std::uint16_t straightforward(const std::vector<std::uint16_t>& x, SumOrder order, bool sanitise) {
  auto r = [&](std::size_t i) { return read<T>(x[i], sanitise); };
  if (order == SumOrder::rank_order) {
    std::uint16_t a = r(0);
    for (std::size_t i = 1; i < x.size(); ++i) a = add_t<T>(a, r(i));
    return a;
  }
  std::uint16_t island[2];
  for (int k = 0; k < 2; ++k) {
    const std::size_t b = 4 * static_cast<std::size_t>(k);
    island[k] = order == SumOrder::islands_of_4
                    ? add_t<T>(add_t<T>(add_t<T>(r(b), r(b + 1)), r(b + 2)), r(b + 3))
                    : add_t<T>(add_t<T>(r(b), r(b + 1)), add_t<T>(r(b + 2), r(b + 3)));
  }
  return add_t<T>(island[0], island[1]);
}

FusedConfig pcie_config(DType t, int ranks, SumOrder order, bool sanitise) {
  FusedConfig c;
  c.ranks = ranks;
  c.tokens = 16;
  c.hidden = 512;
  c.dtype = t;
  c.accumulation = Accumulation::per_step;
  c.canonicalize_neg_zero = false;
  c.sanitise_pos_zero = sanitise;
  c.sum_order = order;
  return c;
}

// Inputs with zeros of both signs, subnormals, outliers, infinities and NaN.
FusedInputs every_class(const FusedConfig& c, std::uint64_t seed) {
  SpecialsSpec s;
  s.seed = seed;
  s.specials_per_256 = 96;
  s.with_inf_nan = true;
  return make_random_inputs(c, s);
}

template <DType T> void expect_matches_straightforward(int ranks, SumOrder order, bool sanitise) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const FusedConfig c = pcie_config(T, ranks, order, sanitise);
    const FusedInputs in = every_class(c, seed);
    const FusedOutputs out = compute_fused(c, in);
    const std::size_t n = static_cast<std::size_t>(c.tokens) * c.hidden;
    std::vector<std::uint16_t> x(static_cast<std::size_t>(ranks));
    for (std::size_t j = 0; j < n; ++j) {
      for (int r = 0; r < ranks; ++r)
        x[static_cast<std::size_t>(r)] =
            static_cast<std::uint16_t>(in.rank_inputs[static_cast<std::size_t>(r)].bits_at(j));
      const std::uint16_t want = straightforward<T>(x, order, sanitise);
      const auto got = static_cast<std::uint16_t>(out.allreduce.bits_at(j));
      const bool both_nan =
          std::isnan(Element<T>::to_float(want)) && std::isnan(Element<T>::to_float(got));
      ASSERT_TRUE(got == want || both_nan)
          << "seed " << seed << " element " << j << ": got " << got << " want " << want;
    }
  }
}

TEST(PcieSum, SanitisedRankOrderMatchesTheStraightforwardSum) {
  for (int ranks : {2, 4, 8}) {
    expect_matches_straightforward<DType::bf16>(ranks, SumOrder::rank_order, true);
    expect_matches_straightforward<DType::f16>(ranks, SumOrder::rank_order, true);
  }
}

TEST(PcieSum, IslandOrdersMatchTheStraightforwardSum) {
  for (SumOrder order : {SumOrder::islands_of_4, SumOrder::pairwise_islands_of_4})
    for (bool sanitise : {true, false}) {
      expect_matches_straightforward<DType::bf16>(8, order, sanitise);
      expect_matches_straightforward<DType::f16>(8, order, sanitise);
    }
}

// Controls: each option changes some result, so the tests above can fail.
TEST(PcieSum, SanitisingTurnsAnAllZeroSumNegative) {
  FusedConfig c = pcie_config(DType::bf16, 2, SumOrder::rank_order, true);
  c.tokens = 1;
  c.hidden = 16;
  FusedInputs in;
  for (int r = 0; r < 2; ++r) in.rank_inputs.emplace_back(DType::bf16, 16);  // all +0
  in.residual_in = Tensor(DType::bf16, 16);
  in.gamma = Tensor(DType::bf16, 16);
  EXPECT_EQ(compute_fused(c, in).allreduce.bits_at(0), 0x8000u);
  c.sanitise_pos_zero = false;
  EXPECT_EQ(compute_fused(c, in).allreduce.bits_at(0), 0u);
}

TEST(PcieSum, IslandOrdersDifferFromRankOrderSomewhere) {
  const FusedConfig base = pcie_config(DType::bf16, 8, SumOrder::rank_order, true);
  const FusedInputs in = make_random_inputs(base, SpecialsSpec{5, 0, 0, false});
  const FusedOutputs ranked = compute_fused(base, in);
  for (SumOrder order : {SumOrder::islands_of_4, SumOrder::pairwise_islands_of_4}) {
    FusedConfig c = base;
    c.sum_order = order;
    EXPECT_TRUE(first_bit_mismatch(ranked.allreduce, compute_fused(c, in).allreduce, "x"))
        << static_cast<int>(order);
  }
}

TEST(PcieSum, ValidateRefusesIslandsOffEightRanksAndBothZeroMaps) {
  FusedConfig c = pcie_config(DType::bf16, 4, SumOrder::islands_of_4, true);
  const FusedInputs in4 = make_random_inputs(c, SpecialsSpec{1, 0, 0, false});
  EXPECT_THROW((void)compute_fused(c, in4), std::invalid_argument);
  c = pcie_config(DType::bf16, 4, SumOrder::rank_order, true);
  c.canonicalize_neg_zero = true;
  EXPECT_THROW((void)compute_fused(c, in4), std::invalid_argument);
  c = pcie_config(DType::bf16, 8, SumOrder::islands_of_4, true);
  c.accumulation = Accumulation::fp32;
  const FusedInputs in8 = make_random_inputs(c, SpecialsSpec{1, 0, 0, false});
  EXPECT_THROW((void)compute_fused(c, in8), std::invalid_argument);
}

// A NaN result matches any NaN (IEEE 754 leaves its sign and payload open); a NaN never
// matches a number, and different numbers never match.
TEST(BitMismatch, AnyNanMatchesANanAndNothingElse) {
  Tensor a(DType::f16, 3), b(DType::f16, 3);
  a.bits16()[0] = 0xFE00;  // -NaN, as x86 makes inf - inf
  b.bits16()[0] = 0x7FFF;  // the GPU's canonical NaN
  EXPECT_FALSE(first_bit_mismatch(a, b, "nan"));
  b.bits16()[1] = 0x3C00;  // 1.0 where a has +0
  EXPECT_TRUE(first_bit_mismatch(a, b, "number"));
  b.bits16()[1] = 0;
  a.bits16()[2] = 0x8000;  // -0 against +0 is a mismatch (bitwise)
  EXPECT_TRUE(first_bit_mismatch(a, b, "zero sign"));
  a.bits16()[2] = 0;
  b.bits16()[0] = 0x3C00;  // a number where the reference has a NaN
  EXPECT_TRUE(first_bit_mismatch(a, b, "nan vs number"));
}

}  // namespace
}  // namespace fusioncheck::reference
