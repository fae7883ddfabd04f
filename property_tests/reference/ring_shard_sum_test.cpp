// The reference's sum for FlashInfer's copy-engine ring (fused.hpp, "shards"): the flat tensor
// in N shards, shard c summed from rank c with every add rounded to the element type. Checked
// bit for bit against a straightforward sum written here over every float class, and a
// constructed input whose result depends on the shard's starting rank (the control that the
// order is used).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"

namespace fusioncheck::reference {
namespace {

FusedConfig ring_config(DType t, int ranks, int tokens, int hidden) {
  FusedConfig c;
  c.ranks = ranks;
  c.tokens = tokens;
  c.hidden = hidden;
  c.dtype = t;
  c.accumulation = Accumulation::per_step;
  c.canonicalize_neg_zero = false;  // no sentinel: the inputs are summed as they are
  c.sum_order = SumOrder::ring_shards;
  return c;
}

template <DType T> void expect_matches_straightforward(int ranks, int tokens, int hidden) {
  using E = Element<T>;
  const FusedConfig c = ring_config(T, ranks, tokens, hidden);
  SpecialsSpec s;
  s.seed = 11 + static_cast<std::uint64_t>(ranks);
  s.specials_per_256 = 64;
  s.with_inf_nan = true;
  const FusedInputs in = make_random_inputs(c, s);
  const FusedOutputs out = compute_fused(c, in);
  const std::size_t numel = static_cast<std::size_t>(tokens) * hidden;
  const std::size_t shard = numel / static_cast<std::size_t>(ranks);
  for (std::size_t j = 0; j < numel; ++j) {
    const int first = static_cast<int>(j / shard);
    auto acc = static_cast<typename E::Bits>(in.rank_inputs[first].bits_at(j));
    for (int k = 1; k < ranks; ++k) {
      const auto x = static_cast<typename E::Bits>(in.rank_inputs[(first + k) % ranks].bits_at(j));
      acc = E::from_float(E::to_float(acc) + E::to_float(x));
    }
    const auto got = static_cast<typename E::Bits>(out.allreduce.bits_at(j));
    const bool both_nan = std::isnan(E::to_float(acc)) && std::isnan(E::to_float(got));
    ASSERT_TRUE(got == acc || both_nan) << ranks << " ranks, " << tokens << "x" << hidden
                                        << ", element " << j << " (shard " << first << ")";
  }
}

TEST(RingShardSum, MatchesTheStraightforwardSumOnEveryFloatClass) {
  for (int ranks : {2, 3, 4, 8}) {
    expect_matches_straightforward<DType::bf16>(ranks, 3, 4096);  // shards cross rows
    expect_matches_straightforward<DType::f16>(ranks, 6, 2880);
  }
}

// 1, 2^-8, 2^-8 and 2^-8 in bf16, every add rounded: from rank 0 each small term ties away
// (1 + 2^-8 rounds to 1, three times: 1.0); from rank 1 the small terms meet first
// (2^-8 + 2^-8 + 2^-8 = 3 * 2^-8, then + 1 = 1 + 2^-7 after rounding).
TEST(RingShardSum, TheShardsStartingRankChangesTheResult) {
  FusedConfig c = ring_config(DType::bf16, 4, 1, 64);  // 4 shards of 16 elements
  FusedInputs in = make_random_inputs(c, SpecialsSpec{});
  const std::uint16_t values[4] = {0x3F80, 0x3B80, 0x3B80, 0x3B80};  // 1, 2^-8, 2^-8, 2^-8
  for (std::size_t j = 0; j < 64; ++j)
    for (int r = 0; r < 4; ++r) in.rank_inputs[r].bits16()[j] = values[r];
  const FusedOutputs out = compute_fused(c, in);
  EXPECT_EQ(out.allreduce.bits16()[0], 0x3F80);   // shard 0: 1 first
  EXPECT_EQ(out.allreduce.bits16()[16], 0x3F82);  // shard 1: the small terms first
  c.sum_order = SumOrder::rank_order;  // the control: rank order rounds every shard alike
  const FusedOutputs ranks = compute_fused(c, in);
  EXPECT_EQ(ranks.allreduce.bits16()[16], 0x3F80);
}

TEST(RingShardSum, RefusesShardsThatAreNotWholePacks) {
  FusedConfig c = ring_config(DType::bf16, 4, 1, 40);  // 10 elements a shard: 20 bytes
  const FusedInputs in = make_random_inputs(c, SpecialsSpec{});
  EXPECT_THROW((void)compute_fused(c, in), std::invalid_argument);
  c.accumulation = Accumulation::fp32;
  c.hidden = 64;
  EXPECT_THROW((void)compute_fused(c, make_random_inputs(c, SpecialsSpec{})),
               std::invalid_argument);
}

}  // namespace
}  // namespace fusioncheck::reference
