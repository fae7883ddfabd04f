// The example kernel's host rules against the suite: every case `gpu check` draws within its
// traits is one it runs (else the run would discard cases, or a smoke case would fail the
// build), each refusal names its reason, and the sizes it picks hold what a call needs.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <bit>

#include "device_api.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "rules.hpp"
#include "steps.hpp"

namespace {

namespace fg = fusioncheck::gpu;
namespace fk = fusioncheck::kernels;
namespace fp = fusioncheck::protocol;

// A call of a case as the case runner launches it (mpi_launch/gpu/runner/case_runner.cpp).
fk::FusedParams params_of(const fg::GpuCase& c, const fg::CallSpec& call, int rank) {
  fk::FusedParams p;
  p.ranks = c.ranks;
  p.rank = rank;
  p.tokens = call.tokens;
  p.hidden = c.hidden;
  p.dtype = c.dtype;
  p.fp32_lamport = c.fp32_lamport;
  p.fp32_accumulation = c.fp32_accumulation;
  p.pattern = call.pattern;
  p.weight_bias = c.weight_bias;
  p.use_pdl = call.use_pdl;
  p.trigger = call.trigger;
  p.cluster = call.cluster;
  p.delay_seed = c.delay_seed;
  p.delay_max_ns = c.delay_max_ns;
  return p;
}

std::uint64_t max_elems(const fg::GpuCase& c) {
  std::uint64_t most = 0;
  for (const auto& call : c.calls)
    most = std::max<std::uint64_t>(most, static_cast<std::uint64_t>(call.tokens) * c.hidden);
  return most;
}

bool draws_only_what_it_runs(int ranks, fp::Mutant mutant) {
  fg::DrawSettings s;
  s.ranks = ranks;
  s.mutant = mutant;
  s.limits.max_calls = 6;
  const fg::KernelTraits traits = my_kernel::traits();
  return rc::check(
      "ranks " + std::to_string(ranks) + ", mutant " + std::string(fp::mutant_id(mutant)), [&] {
        const fg::GpuCase c = fg::draw_case(s, traits);
        RC_ASSERT(fg::outside_traits(c, traits).empty());
        const std::uint64_t comm_size = my_kernel::comm_size_for(ranks, max_elems(c));
        for (const fg::CallSpec& call : c.calls) {
          RC_ASSERT(!call.unfused);
          const std::string why =
              my_kernel::refusal(params_of(c, call, ranks - 1), call.twoshot, mutant, comm_size);
          RC_ASSERT(why.empty());
        }
      });
}

TEST(Rules, EveryDrawnCaseIsOneTheKernelRuns) {
  for (int ranks : {2, 4, 8, 16})
    EXPECT_TRUE(draws_only_what_it_runs(ranks, fp::Mutant::none)) << ranks;
  for (fp::Mutant m : my_kernel::mutants())
    EXPECT_TRUE(draws_only_what_it_runs(2, m)) << fp::mutant_id(m);
}

TEST(Rules, RefusalsNameTheirReason) {
  fk::FusedParams ok;
  ok.tokens = 3;
  ok.hidden = 64;
  EXPECT_EQ(my_kernel::refusal(ok, false, fp::Mutant::none, 64u << 10), "");
  struct Edit {
    const char* expect;
    void (*edit)(fk::FusedParams&);
  };
  const Edit edits[] = {
      {"16-bit Lamport", [](fk::FusedParams& p) { p.fp32_lamport = true; }},
      {"pattern fp8_static", [](fk::FusedParams& p) { p.pattern = fk::Pattern::fp8_static; }},
      {"cluster path", [](fk::FusedParams& p) { p.cluster = fk::ClusterMode::force_cluster; }},
      {"multiple of 16", [](fk::FusedParams& p) { p.hidden = 24; }},
      {"2 to 16 ranks", [](fk::FusedParams& p) { p.ranks = 17; }},
      {"beyond the prepared",
       [](fk::FusedParams& p) { p.tokens = 1024; }},  // 2 x 1024 x 64 x 2 > 64 KiB
  };
  for (const Edit& e : edits) {
    fk::FusedParams p = ok;
    e.edit(p);
    EXPECT_NE(my_kernel::refusal(p, false, fp::Mutant::none, 64u << 10).find(e.expect),
              std::string::npos)
        << e.expect;
  }
  EXPECT_NE(my_kernel::refusal(ok, true, fp::Mutant::none, 0).find("one-shot only"),
            std::string::npos);
  fk::FusedParams f16 = ok;
  f16.dtype = fk::DType::f16;
  EXPECT_EQ(my_kernel::refusal(f16, false, fp::Mutant::none, 0), "");
  EXPECT_NE(my_kernel::refusal(f16, false, fp::Mutant::float_sentinel, 0).find("bf16 only"),
            std::string::npos);
}

TEST(Rules, MutantsAreTheBuiltOnesFromTheCatalogue) {
  const auto listed = my_kernel::mutants();
  ASSERT_EQ(listed.size(), std::size(my_kernel::kMutants));
  for (std::size_t i = 0; i < listed.size(); ++i) {
    EXPECT_EQ(listed[i], my_kernel::kMutants[i]);
    EXPECT_NE(fp::find_mutant_info(listed[i]), nullptr);
    EXPECT_EQ(std::count(listed.begin(), listed.end(), listed[i]), 1);
  }
}

TEST(Rules, WorkspaceHoldsEveryRanksSlotOfTheLargestCall) {
  for (int ranks : {2, 4, 8, 16})
    for (std::uint64_t elems : {16ull, 4096ull, 1ull << 20, (1ull << 20) + 16, 2048ull * 8192}) {
      const std::uint64_t size = my_kernel::comm_size_for(ranks, elems);
      EXPECT_TRUE(fp::fits_lamport_buffer(ranks, elems, 2, size)) << ranks << " x " << elems;
      EXPECT_TRUE(std::has_single_bit(size));
      EXPECT_GE(size, 64u << 10);
      EXPECT_LE(size, std::max<std::uint64_t>(
                          64u << 10, 4ull * ranks * elems));  // at most twice what it needs
    }
}

TEST(Rules, GridStaysWithinTheRanksShareOfTheGpu) {
  for (int tokens : {1, 7, 132, 65536})
    for (int sharing : {1, 2, 4, 16})
      for (int max_blocks : {0, 1, 5}) {
        const int blocks = my_kernel::grid_blocks(tokens, 132, sharing, max_blocks);
        EXPECT_GE(blocks, 1);
        EXPECT_LE(blocks, tokens);
        EXPECT_LE(blocks, std::max(1, 132 / sharing));
        if (max_blocks > 0) {
          EXPECT_LE(blocks, max_blocks);
        }
      }
  EXPECT_EQ(my_kernel::grid_blocks(7, 132, 1, 0), 7);  // one block per row while rows are few
  for (int hidden = 16; hidden <= 65536; hidden += 16) {
    const int threads = my_kernel::block_threads(hidden);
    ASSERT_EQ(threads % 32, 0) << hidden;
    ASSERT_GE(threads, 32);
    ASSERT_LE(threads, my_kernel::kMaxThreads);
    ASSERT_TRUE(threads >= hidden / 8 || threads == my_kernel::kMaxThreads) << hidden;
  }
}

}  // namespace
