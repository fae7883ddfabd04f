// The reference's sum for vLLM's two-stage custom allreduce (fused.hpp, "parts"): each element
// summed in fp32 from the owner of its part, rounded once. Checked bit for bit against a
// straightforward sum written here, over every float class, part shapes with a remainder, and
// a constructed input whose result depends on the order (the control that the order is used).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"

namespace fusioncheck::reference {
namespace {

FusedConfig vllm_config(DType t, int ranks, int tokens, int hidden, SumOrder order) {
  FusedConfig c;
  c.ranks = ranks;
  c.tokens = tokens;
  c.hidden = hidden;
  c.dtype = t;
  c.accumulation = Accumulation::fp32;
  c.canonicalize_neg_zero = false;  // no sentinel: the inputs are summed as they are
  c.sum_order = order;
  return c;
}

// Which rank owns flat element j, as cross_device_reduce_2stage cuts the packs.
int owner(const FusedConfig& c, std::size_t j) {
  const std::size_t pack = 16 / static_cast<std::size_t>(protocol::dtype_bytes(c.dtype));
  const std::size_t packs = static_cast<std::size_t>(c.tokens) * c.hidden / pack;
  const std::size_t part = packs / static_cast<std::size_t>(c.ranks);
  const std::size_t o = part == 0 ? c.ranks - 1 : j / pack / part;
  return static_cast<int>(std::min<std::size_t>(o, static_cast<std::size_t>(c.ranks - 1)));
}

template <DType T> void expect_matches_straightforward(int ranks, int tokens, int hidden) {
  using E = Element<T>;
  const FusedConfig c = vllm_config(T, ranks, tokens, hidden, SumOrder::part_owner_rotated);
  SpecialsSpec s;
  s.seed = 3 + static_cast<std::uint64_t>(ranks);
  s.specials_per_256 = 64;
  s.with_inf_nan = true;
  const FusedInputs in = make_random_inputs(c, s);
  const FusedOutputs out = compute_fused(c, in);
  for (std::size_t j = 0; j < static_cast<std::size_t>(tokens) * hidden; ++j) {
    const int o = owner(c, j);
    float acc = E::to_float(static_cast<typename E::Bits>(in.rank_inputs[o].bits_at(j)));
    for (int k = 1; k < ranks; ++k)
      acc += E::to_float(static_cast<typename E::Bits>(in.rank_inputs[(o + k) % ranks].bits_at(j)));
    const auto want = E::from_float(acc);
    const auto got = static_cast<typename E::Bits>(out.allreduce.bits_at(j));
    const bool both_nan = std::isnan(E::to_float(want)) && std::isnan(E::to_float(got));
    ASSERT_TRUE(got == want || both_nan) << ranks << " ranks, " << tokens << "x" << hidden
                                         << ", element " << j << " (owner " << o << ")";
  }
}

TEST(PartOwnerSum, MatchesTheStraightforwardSumOnEveryFloatClass) {
  for (int ranks : {2, 4, 6, 8}) {
    expect_matches_straightforward<DType::bf16>(ranks, 3, 4096);
    expect_matches_straightforward<DType::f16>(ranks, 5, 2880);  // parts with a remainder
    expect_matches_straightforward<DType::f32>(ranks, 1, 40);
  }
}

// 1 + 2^-8 + 2^-24 + 2^-24 in bf16 through fp32: summed from rank 0 the fp32 sum is the bf16
// tie 1 + 2^-8 (rounded to even: 1.0); summed from rank 2 it is 1 + 2^-8 + 2^-23 (1 + 2^-7).
TEST(PartOwnerSum, TheOwnersOrderChangesTheResultWhereTheRankOrderWouldNot) {
  FusedConfig c = vllm_config(DType::bf16, 4, 1, 40, SumOrder::part_owner_rotated);
  FusedInputs in = make_random_inputs(c, SpecialsSpec{});
  const std::uint16_t values[4] = {0x3F80, 0x3B80, 0x3380, 0x3380};  // 1, 2^-8, 2^-24, 2^-24
  for (std::size_t j = 0; j < 40; ++j)
    for (int r = 0; r < 4; ++r) in.rank_inputs[r].bits16()[j] = values[r];
  const FusedOutputs parts = compute_fused(c, in);
  c.sum_order = SumOrder::rank_order;
  const FusedOutputs ranks = compute_fused(c, in);
  // 5 packs of 8: a pack per part, the last rank's part two. Owners 1 and 2 add the small
  // terms before 1 (1 + 2^-7); owners 0 and 3 reach the tie (1.0), as rank order does.
  for (std::size_t j = 0; j < 40; ++j) {
    const std::uint16_t want = j / 8 == 1 || j / 8 == 2 ? 0x3F81 : 0x3F80;
    EXPECT_EQ(parts.allreduce.bits16()[j], want) << "element " << j;
    EXPECT_EQ(ranks.allreduce.bits16()[j], 0x3F80) << "element " << j;
  }
}

TEST(PartOwnerSum, RefusesWhatTheKernelCannotDo) {
  FusedConfig c = vllm_config(DType::bf16, 4, 1, 40, SumOrder::part_owner_rotated);
  c.accumulation = Accumulation::per_step;
  EXPECT_THROW(compute_fused(c, make_random_inputs(c, SpecialsSpec{})), std::invalid_argument);
  c = vllm_config(DType::bf16, 4, 1, 36, SumOrder::part_owner_rotated);  // 72 bytes
  EXPECT_THROW(compute_fused(c, make_random_inputs(c, SpecialsSpec{})), std::invalid_argument);
}

}  // namespace
}  // namespace fusioncheck::reference
