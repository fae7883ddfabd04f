// A config of some of a call's rows (FusedConfig::first_row, call_tokens: each GPU rank checks
// its share of the rows) computes what the whole call computes for them, also in the orders
// whose parts or shards are cut from the whole call (vLLM's two-stage kernel, the copy-engine
// ring). The control: the same slice computed as if it were a call of its own differs.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/generators.hpp"

namespace fusioncheck::reference {
namespace {

FusedConfig order_config(SumOrder order, int ranks, int tokens, int hidden) {
  FusedConfig c;
  c.ranks = ranks;
  c.tokens = tokens;
  c.hidden = hidden;
  c.dtype = DType::bf16;
  c.accumulation = order == SumOrder::ring_shards ? Accumulation::per_step : Accumulation::fp32;
  c.canonicalize_neg_zero = false;
  c.sum_order = order;
  return c;
}

Tensor rows_of(const Tensor& t, int first, int count, int hidden) {
  Tensor out(t.dtype(), static_cast<std::size_t>(count) * hidden);
  const std::size_t row_bytes = t.bytes() / t.size() * static_cast<std::size_t>(hidden);
  std::memcpy(out.data(), static_cast<const std::uint8_t*>(t.data()) + row_bytes * first,
              out.bytes());
  return out;
}

FusedInputs slice(const FusedInputs& in, int first, int count, int hidden) {
  FusedInputs s = in;
  for (std::size_t i = 0; i < s.rank_inputs.size(); ++i)
    s.rank_inputs[i] = rows_of(in.rank_inputs[i], first, count, hidden);
  s.residual_in = rows_of(in.residual_in, first, count, hidden);
  return s;
}

// Elements of the slice whose allreduce differs from the whole call's rows.
int differences(const FusedOutputs& whole, const FusedOutputs& part, int first, int hidden) {
  int n = 0;
  for (std::size_t j = 0; j < part.allreduce.size(); ++j)
    n += part.allreduce.bits_at(j) !=
                 whole.allreduce.bits_at(static_cast<std::size_t>(first) * hidden + j)
             ? 1
             : 0;
  return n;
}

void expect_slices_match(SumOrder order) {
  const int ranks = 4, tokens = 7, hidden = 2048;
  const FusedConfig c = order_config(order, ranks, tokens, hidden);
  SpecialsSpec s;
  s.seed = 11;
  const FusedInputs in = make_random_inputs(c, s);
  const FusedOutputs whole = compute_fused(c, in);
  int control = 0;
  for (int first = 0; first < tokens; first += 2) {
    const int count = std::min(2, tokens - first);
    FusedConfig part = c;
    part.tokens = count;
    part.first_row = first;
    part.call_tokens = tokens;
    const FusedInputs rows = slice(in, first, count, hidden);
    EXPECT_EQ(differences(whole, compute_fused(part, rows), first, hidden), 0)
        << "rows " << first << ".." << first + count - 1;
    FusedConfig alone = part;  // the slice as a call of its own: other parts, other orders
    alone.first_row = 0;
    alone.call_tokens = 0;
    control += differences(whole, compute_fused(alone, rows), first, hidden);
  }
  EXPECT_GT(control, 0) << "the slice's place in the call changed nothing: the test shows nothing";
}

TEST(RowSlice, PartOwnerOrderIsTheCallsParts) { expect_slices_match(SumOrder::part_owner_rotated); }
TEST(RowSlice, RingShardOrderIsTheCallsShards) { expect_slices_match(SumOrder::ring_shards); }

TEST(RowSlice, RowsOutsideTheCallAreRefused) {
  FusedConfig c = order_config(SumOrder::rank_order, 2, 2, 64);
  const FusedInputs in = make_random_inputs(c, SpecialsSpec{});
  c.first_row = 1;
  c.call_tokens = 2;  // rows 1..2 of a call of 2
  EXPECT_THROW(compute_fused(c, in), std::invalid_argument);
  c.call_tokens = 0;  // an offset without a call
  EXPECT_THROW(compute_fused(c, in), std::invalid_argument);
  c.first_row = 0;
  c.call_tokens = 3;
  EXPECT_NO_THROW(compute_fused(c, in));
}

}  // namespace
}  // namespace fusioncheck::reference
