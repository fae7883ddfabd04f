// The input generators must give the same values for the same arguments in every version
// (replay files and seeds name inputs by their numbers), and their fast paths must equal the
// plain definitions: FastRemainder against %, the generators against a plain per-element
// oracle (the definitions as first written) and against hashes of a fixed grid of calls.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "fusioncheck/reference/generator_elements.hpp"
#include "fusioncheck/reference/reference.hpp"
#include "fusioncheck/reference/remainder.hpp"

namespace fusioncheck::reference {
namespace {

// --- FastRemainder

void expect_remainders(std::uint64_t d, std::mt19937_64& rng, int random_values) {
  const FastRemainder fast(d);
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t top = kMax - kMax % d;  // the largest multiple of d
  for (std::uint64_t x : {std::uint64_t{0}, std::uint64_t{1}, d - 1, d, d + 1, 2 * d - 1, 2 * d,
                          top - 1, top, kMax - 1, kMax, kMax / 2, (kMax / 2) + 1})
    ASSERT_EQ(fast(x), x % d) << "d=" << d << " x=" << x;
  for (int k = 0; k < random_values; ++k) {
    const std::uint64_t x = rng();
    ASSERT_EQ(fast(x), x % d) << "d=" << d << " x=" << x;
    const std::uint64_t near =
        top - d * (rng() % 1024) + rng() % 3 - 1;  // next to large multiples of d
    ASSERT_EQ(fast(near), near % d) << "d=" << d << " x=" << near;
  }
}

// Every modulus the exact generator uses: 2 * floor(2^p / (ranks + 1)) + 1 for the
// significand widths p in {8, 11} and any rank count (validate() allows up to 64).
TEST(RefFastRemainder, EqualsPercentForEveryGeneratorModulus) {
  std::mt19937_64 rng(1);
  for (int p : {8, 11})
    for (int ranks = 0; ranks <= 300; ++ranks)
      expect_remainders(2 * static_cast<std::uint64_t>((1 << p) / (ranks + 1)) + 1, rng, 5000);
}

TEST(RefFastRemainder, EqualsPercentForAnyDivisor) {
  std::mt19937_64 rng(2);
  for (std::uint64_t d : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{10},
                          std::uint64_t{64}, std::uint64_t{1} << 32, (std::uint64_t{1} << 32) - 1,
                          (std::uint64_t{1} << 32) + 1, std::uint64_t{1} << 63,
                          (std::uint64_t{1} << 63) + 1, std::numeric_limits<std::uint64_t>::max()})
    expect_remainders(d, rng, 20000);
  for (int k = 0; k < 2000; ++k) expect_remainders(1 + (rng() >> (rng() % 64)), rng, 200);
}

// --- The generators as first written: one draw per element, % and ldexp, Eigen's conversions.
namespace oracle {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
std::uint64_t draw(std::uint64_t seed, std::uint64_t call, int stream, std::uint64_t element,
                   std::uint64_t purpose) {
  std::uint64_t h = splitmix64(seed ^ 0x5eed);
  h = splitmix64(h ^ call);
  h = splitmix64(h ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(stream)));
  h = splitmix64(h ^ element);
  return splitmix64(h ^ purpose);
}
std::uint32_t to_bits(DType t, float v) {
  switch (t) {
    case DType::f16: return std::bit_cast<std::uint16_t>(Eigen::half(v));
    case DType::bf16: return std::bit_cast<std::uint16_t>(Eigen::bfloat16(v));
    case DType::f32: return std::bit_cast<std::uint32_t>(v);
  }
  return 0;
}
int significand_bits(DType t) { return t == DType::f16 ? 11 : t == DType::bf16 ? 8 : 24; }

std::vector<std::uint32_t> exact(const ExactSpec& s, int stream, std::size_t count, DType t) {
  const std::int64_t max_m = (std::int64_t{1} << std::min(significand_bits(t), 11)) / (s.ranks + 1);
  std::vector<std::uint32_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (s.with_neg_zero && stream >= 0 && draw(s.seed, s.call_index, stream, i, 3) % 64 == 0) {
      out[i] = t == DType::f32 ? 0x80000000u : 0x8000u;
      continue;
    }
    const auto e = static_cast<int>(draw(s.seed, s.call_index, 1000, i, 2) % 10) - 6;
    const auto m = static_cast<std::int64_t>(draw(s.seed, s.call_index, stream, i, 1) %
                                             static_cast<std::uint64_t>(2 * max_m + 1)) -
                   max_m;
    out[i] = to_bits(t, std::ldexp(static_cast<float>(m), e));
  }
  return out;
}

float special(DType t, std::uint64_t h, bool with_inf_nan) {
  const float sign = (h & 1) ? -1.0f : 1.0f;
  const float tiny = t == DType::f16    ? 0x1p-24f
                     : t == DType::bf16 ? 0x1p-133f
                                        : std::numeric_limits<float>::denorm_min();
  const float big = t == DType::f16    ? 65504.0f
                    : t == DType::bf16 ? 0x1.fep127f
                                       : std::numeric_limits<float>::max();
  switch ((h >> 1) % static_cast<std::uint64_t>(with_inf_nan ? 8 : 6)) {
    case 0: return sign * 0.0f;
    case 1: return sign * tiny;
    case 2: {
      const int sub_bits = significand_bits(t) - 1;
      return sign * tiny *
             static_cast<float>(1 + (h >> 8) % ((1ULL << std::min(sub_bits, 20)) - 1));
    }
    case 3: return sign * big;
    case 4: return sign * (t == DType::f16 ? 2048.0f : 1048576.0f);
    case 5: return sign * std::ldexp(1.0f + static_cast<float>((h >> 8) % 256) / 256.0f, -20);
    case 6: return sign * std::numeric_limits<float>::infinity();
    default: return std::numeric_limits<float>::quiet_NaN();
  }
}

std::vector<std::uint32_t> random(const SpecialsSpec& s, int stream, std::size_t count, DType t) {
  std::vector<std::uint32_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t h = draw(s.seed, s.call_index, stream, i, 4);
    if (static_cast<int>(h % 256) < s.specials_per_256) {
      const float v = special(t, h >> 8, s.with_inf_nan);
      out[i] = to_bits(t, !s.with_neg_zero && v == 0.0f ? 0.0f : v);
      continue;
    }
    const std::uint64_t v = draw(s.seed, s.call_index, stream, i, 1);
    out[i] = to_bits(t, (static_cast<float>(v & 0xffffff) / 0x1p24f - 0.5f) * 8.0f);
  }
  return out;
}

std::vector<std::uint32_t> gamma(std::uint64_t seed, int hidden, DType t) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(hidden));
  for (std::size_t j = 0; j < out.size(); ++j) {
    const std::uint64_t h = draw(seed, 0, kGammaStream, j, 1);
    out[j] = to_bits(t, static_cast<float>(8 + h % 8) / 8.0f * ((h >> 3) & 1 ? 0.5f : 1.0f));
  }
  return out;
}

}  // namespace oracle

std::vector<std::uint32_t> bits_of(const Tensor& t) {
  std::vector<std::uint32_t> out(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) out[i] = t.bits_at(i);
  return out;
}

// Large enough calls (>= 2^14 elements) take the threaded, blocked paths.
FusedConfig gen_shape() {
  FusedConfig c;
  c.dtype = *rc::gen::element(DType::f16, DType::bf16, DType::f32);
  c.ranks = *rc::gen::inRange(1, 65);
  c.tokens = *rc::gen::element(1, 2, 5, 17);
  c.hidden = *rc::gen::element(1, 7, 16, 100, 512, 1040);
  return c;
}

// Inside a property: any seed and call, a few shares of specials, every flag.
SpecialsSpec gen_specials() {
  SpecialsSpec s;
  s.seed = *rc::gen::arbitrary<std::uint64_t>();
  s.call_index = *rc::gen::arbitrary<std::uint64_t>();
  s.specials_per_256 = *rc::gen::element(0, 24, 128, 256);
  s.with_inf_nan = *rc::gen::arbitrary<bool>();
  s.with_neg_zero = *rc::gen::arbitrary<bool>();
  return s;
}

RC_GTEST_PROP(RefGeneratorOracle, ExactInputsEqualThePlainDefinition, ()) {
  FusedConfig c = gen_shape();
  if (c.ranks > 8) c.ranks = *rc::gen::element(16, 64);  // the moduli of many ranks, few streams
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  const auto call = *rc::gen::arbitrary<std::uint64_t>();
  const bool neg_zero = *rc::gen::arbitrary<bool>();
  const auto count = static_cast<std::size_t>(c.tokens) * static_cast<std::size_t>(c.hidden);
  const ExactSpec spec{seed, call, c.ranks, neg_zero};
  const FusedInputs in = make_exact_inputs(c, seed, call, neg_zero);
  RC_ASSERT(in.rank_inputs.size() == static_cast<std::size_t>(c.ranks));
  for (int r = 0; r < c.ranks; r += std::max(1, c.ranks / 3))
    RC_ASSERT(bits_of(in.rank_inputs[static_cast<std::size_t>(r)]) ==
              oracle::exact(spec, r, count, c.dtype));
  RC_ASSERT(bits_of(in.residual_in) == oracle::exact(spec, kResidualStream, count, c.dtype));
  RC_ASSERT(bits_of(in.gamma) == oracle::gamma(seed, c.hidden, c.dtype));
  const int stream = *rc::gen::element(0, c.ranks - 1, kResidualStream);
  RC_ASSERT(bits_of(exact_input(spec, stream, c.tokens, c.hidden, c.dtype)) ==
            oracle::exact(spec, stream, count, c.dtype));
}

RC_GTEST_PROP(RefGeneratorOracle, RandomInputsEqualThePlainDefinition, ()) {
  FusedConfig c = gen_shape();
  c.ranks = *rc::gen::inRange(1, 4);
  const SpecialsSpec s = gen_specials();
  const auto count = static_cast<std::size_t>(c.tokens) * static_cast<std::size_t>(c.hidden);
  const FusedInputs in = make_random_inputs(c, s);
  for (int r = 0; r < c.ranks; ++r)
    RC_ASSERT(bits_of(in.rank_inputs[static_cast<std::size_t>(r)]) ==
              oracle::random(s, r, count, c.dtype));
  RC_ASSERT(bits_of(in.residual_in) == oracle::random(s, kResidualStream, count, c.dtype));
  RC_ASSERT(bits_of(in.gamma) == oracle::gamma(s.seed, c.hidden, c.dtype));
}

// Partial inputs: the complete ranks as make_*_inputs gives them, the others equal on the
// asked rows and +0 elsewhere; the residual whole, or like the others with
// residual_rows_only; gamma whole.
RC_GTEST_PROP(RefGeneratorPartial, PartialInputsAreTheWholeCallsRows, ()) {
  FusedConfig c = gen_shape();
  c.ranks = *rc::gen::inRange(1, 9);
  const int first = *rc::gen::inRange(0, c.tokens);
  const int rows = *rc::gen::inRange(0, c.tokens - first + 1);
  PartialInputs partial{std::vector<bool>(static_cast<std::size_t>(c.ranks)), first, rows};
  for (int r = 0; r < c.ranks; ++r)
    partial.complete_ranks[static_cast<std::size_t>(r)] = *rc::gen::arbitrary<bool>();
  partial.residual_rows_only = *rc::gen::arbitrary<bool>();
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  const bool exact = *rc::gen::arbitrary<bool>();
  const SpecialsSpec specials{seed, 3, 64, true, true};
  const FusedInputs whole =
      exact ? make_exact_inputs(c, seed, 3, true) : make_random_inputs(c, specials);
  const FusedInputs part = exact ? make_exact_inputs(c, seed, 3, true, partial)
                                 : make_random_inputs(c, specials, partial);
  RC_ASSERT(part.gamma == whole.gamma);
  const auto hidden = static_cast<std::size_t>(c.hidden);
  auto expect_rows = [&](const Tensor& got, const Tensor& want, bool complete) {
    RC_ASSERT(got.size() == want.size());
    if (complete) {
      RC_ASSERT(got == want);
      return;
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      const std::size_t row = i / hidden;
      const bool asked =
          row >= static_cast<std::size_t>(first) && row < static_cast<std::size_t>(first + rows);
      RC_ASSERT(got.bits_at(i) == (asked ? want.bits_at(i) : 0u));
    }
  };
  expect_rows(part.residual_in, whole.residual_in, !partial.residual_rows_only);
  for (int r = 0; r < c.ranks; ++r)
    expect_rows(part.rank_inputs[static_cast<std::size_t>(r)],
                whole.rank_inputs[static_cast<std::size_t>(r)], partial.complete(r));
}

// The per-element forms the GPU runs (generator_elements.hpp), evaluated here on the host,
// against the plain definitions: exact and random elements of any stream, both 16-bit types
// (and fp32, whose host fills use the same pieces).
RC_GTEST_PROP(RefGeneratorOracle, PerElementFormsEqualThePlainDefinition, ()) {
  const DType t = *rc::gen::element(DType::f16, DType::bf16, DType::f32);
  const int ranks = *rc::gen::inRange(1, 65);
  const int stream = *rc::gen::element(0, ranks - 1, kResidualStream);
  const std::size_t count = *rc::gen::inRange<std::size_t>(1, 3000);
  const ExactSpec exact{*rc::gen::arbitrary<std::uint64_t>(), *rc::gen::arbitrary<std::uint64_t>(),
                        ranks, *rc::gen::arbitrary<bool>()};
  const auto want_exact = oracle::exact(exact, stream, count, t);
  const std::uint64_t pre = elements::stream_prefix(exact.seed, exact.call_index, stream);
  const std::uint64_t common =
      elements::stream_prefix(exact.seed, exact.call_index, elements::kCommonStream);
  const std::int64_t max_m = elements::exact_max_m(t, ranks);
  const bool neg_zeros = elements::exact_has_neg_zeros(exact.with_neg_zero, stream);
  for (std::size_t k = 0; k < count; ++k)
    RC_ASSERT(float_to_bits(t, elements::exact_element(pre, common, k, max_m, neg_zeros)) ==
              want_exact[k]);

  const SpecialsSpec s = gen_specials();
  const auto want_random = oracle::random(s, stream, count, t);
  const std::uint64_t rpre = elements::stream_prefix(s.seed, s.call_index, stream);
  for (std::size_t k = 0; k < count; ++k)
    RC_ASSERT(float_to_bits(t, elements::random_element(s, t, rpre, k)) == want_random[k]);
}

// The per-element forms can fail: a draw of the wrong stream or purpose differs from the
// definition (the negative control of the property above).
TEST(RefGeneratorOracle, PerElementFormsOfAnotherStreamDiffer) {
  const ExactSpec exact{7, 3, 2, true};
  const auto want = oracle::exact(exact, 0, 256, DType::bf16);
  const std::uint64_t common = elements::stream_prefix(7, 3, elements::kCommonStream);
  const std::uint64_t other = elements::stream_prefix(7, 3, 1);
  int differ = 0;
  for (std::size_t k = 0; k < want.size(); ++k)
    differ +=
        float_to_bits(DType::bf16, elements::exact_element(other, common, k,
                                                           elements::exact_max_m(DType::bf16, 2),
                                                           true)) != want[k];
  EXPECT_GT(differ, 128);
  SpecialsSpec s;
  s.seed = 7;
  const auto want_random = oracle::random(s, 0, 256, DType::f16);
  differ = 0;
  for (std::size_t k = 0; k < want_random.size(); ++k)
    differ += float_to_bits(DType::f16, elements::random_element(
                                            s, DType::f16, elements::stream_prefix(7, 1, 0), k)) !=
              want_random[k];
  EXPECT_GT(differ, 128);
}

TEST(RefGeneratorPartial, RowsOutsideTheCallAreRefused) {
  FusedConfig c;
  c.tokens = 4;
  const PartialInputs past_the_end{{false, true}, 3, 2};
  EXPECT_THROW(make_exact_inputs(c, 1, 0, true, past_the_end), std::invalid_argument);
  EXPECT_THROW(make_random_inputs(c, SpecialsSpec{}, past_the_end), std::invalid_argument);
  const PartialInputs all_complete{{true, true}, 3, 2};  // rows unused: nothing to refuse
  EXPECT_EQ(make_exact_inputs(c, 1, 0, true, all_complete).rank_inputs,
            make_exact_inputs(c, 1, 0, true).rank_inputs);
}

// --- Hashes of a fixed grid of calls, taken from the generators as first written (before
// any optimisation): any changed value anywhere in the grid changes a hash.
std::uint64_t mix(std::uint64_t h, std::uint64_t v) { return (h ^ v) * 0x100000001b3ull; }
std::uint64_t hash_tensor(std::uint64_t h, const Tensor& t) {
  h = mix(h, t.size());
  for (std::size_t i = 0; i < t.size(); ++i) h = mix(h, t.bits_at(i));
  return h;
}

TEST(RefGeneratorGolden, AFixedGridHashesAsItAlwaysDid) {
  std::uint64_t exact = 1469598103934665603ull, random = exact, gamma = exact;
  for (DType d : {DType::f16, DType::bf16, DType::f32})
    for (int ranks : {1, 2, 3, 8, 64})
      for (int tokens : {1, 5})
        for (int hidden : {16, 100, 512})
          for (std::uint64_t seed : {1ull, 0xdeadbeefcafef00dull}) {
            FusedConfig c;
            c.dtype = d;
            c.ranks = ranks == 64 ? 2 : ranks;
            c.tokens = tokens;
            c.hidden = hidden;
            for (bool nz : {true, false}) {
              const ExactSpec spec{seed, seed % 5 + static_cast<std::uint64_t>(tokens), ranks, nz};
              for (int s : {0, 1, ranks - 1, kResidualStream})
                exact = hash_tensor(exact, exact_input(spec, s, tokens, hidden, d));
            }
            for (int sp : {0, 24, 256})
              for (int flags = 0; flags < 4; ++flags) {
                const SpecialsSpec s{seed, static_cast<std::uint64_t>(hidden), sp, (flags & 1) != 0,
                                     (flags & 2) != 0};
                const FusedInputs in = make_random_inputs(c, s);
                for (const auto& t : in.rank_inputs) random = hash_tensor(random, t);
                random = hash_tensor(random, in.residual_in);
                random = hash_tensor(random, in.gamma);
              }
            gamma = hash_tensor(
                gamma, exact_gamma(seed + static_cast<std::uint64_t>(ranks), hidden + tokens, d));
          }
  for (DType d : {DType::f16, DType::bf16, DType::f32}) {  // the threaded path
    FusedConfig c;
    c.dtype = d;
    c.ranks = 3;
    c.tokens = 9;
    c.hidden = 4096;
    const FusedInputs in = make_exact_inputs(c, 99, 7, true);
    for (const auto& t : in.rank_inputs) exact = hash_tensor(exact, t);
    exact = hash_tensor(exact, in.residual_in);
    exact = hash_tensor(exact, in.gamma);
    const FusedInputs r = make_random_inputs(c, SpecialsSpec{99, 7, 24, true, true});
    for (const auto& t : r.rank_inputs) random = hash_tensor(random, t);
    random = hash_tensor(random, r.residual_in);
  }
  EXPECT_EQ(exact, 0x96ff80fbee68da9bull);
  EXPECT_EQ(random, 0xa37cef4d71f69ebeull);
  EXPECT_EQ(gamma, 0x830b9221f60d5733ull);
}

}  // namespace
}  // namespace fusioncheck::reference
