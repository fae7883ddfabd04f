// GPU tests of the kernels' negative controls (label gpu, in kernels_gpu_test with the other
// kernel tests): every compiled kernel mutant must be caught by the rig's checks on the call
// sequence that provokes it, and the correct kernel must pass the same sequence. Skips without
// an sm_90+ GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_rig.hpp"

namespace fk = fusioncheck::kernels;
namespace fp = fusioncheck::protocol;
using fk::testing::CallSpec;
using fk::testing::Findings;
using fk::testing::Path;
using fk::testing::Rig;

// ---- negative controls: every kernel mutant must be caught --------------------------------
namespace {

struct MutantCase {
  fp::Mutant mutant;
  bool caught_on(int cc) const {
    // The arch-guard mutants are wrong only in sm_120 code; elsewhere the audit catches them.
    if (mutant == fp::Mutant::pdl_wait_missing || mutant == fp::Mutant::empty_body)
      return cc >= 120;
    // A missing release/acquire is seldom visible on one GPU's coherent L2; the sim
    // and the audit kill it. Run here for information only.
    if (mutant == fp::Mutant::barrier_no_release) return false;
    // Reading an input before the wait shows only when the kernel before writes it late: the
    // MPI suite's PDL producer does (gpu kill-table); this rig has none. Information only.
    if (mutant == fp::Mutant::no_pdl_wait || mutant == fp::Mutant::inputs_before_wait) return false;
    return true;
  }
};

std::vector<CallSpec> provoking_sequence(fp::Mutant m) {
  std::vector<CallSpec> specs;
  for (int k = 0; k < 9; ++k) {
    CallSpec s;
    s.mutant = m;
    s.hidden = 1024;
    s.tokens = k % 3 == 2 ? 5 : 48;  // shrinking calls expose clear-size bugs
    s.spin_budget_cycles = 1ull << 26;
    s.trigger = fk::Trigger::early;  // lets the next call overlap where the wait is missing
    if (m == fp::Mutant::early_trigger) {
      s.trigger = fk::Trigger::at_end;  // the consumer trusts at-end; the mutant triggers early
      s.consumer_reads_before_wait = true;
      s.peer_launch_delay_us = 1000;  // rank 0 surely unfinished while its consumer may read
    }
    if (m == fp::Mutant::barrier_no_release) s.path = Path::twoshot;
    if (m == fp::Mutant::cluster_one_buffer) {
      // Two exchanges a row (fp8_dynamic: the sum of squares, then the amax) across a forced
      // cluster, with seeded pauses inside the first: a block that is not paused sends its
      // second value into the one buffer before a paused block has read the first.
      s.pattern = fk::Pattern::fp8_dynamic;
      s.cluster = fk::ClusterMode::force_cluster;
      s.hidden = 2048;
      s.tokens = k % 3 == 2 ? 3 : 10;
      s.delay_seed = 1 + static_cast<std::uint32_t>(k);
      s.delay_max_ns = 20000;
    }
    if (m == fp::Mutant::reduce_scratch_unguarded) {
      // Two block reductions a row (fp8_dynamic), with seeded pauses of the warps inside the
      // first: a warp that is not paused writes its part of the second into the scratch before
      // a paused warp has read the first.
      s.pattern = fk::Pattern::fp8_dynamic;
      s.hidden = 2048;
      s.tokens = k % 3 == 2 ? 3 : 10;
      s.delay_seed = 1 + static_cast<std::uint32_t>(k);
      s.delay_max_ns = 20000;
    }
    specs.push_back(s);
  }
  return specs;
}

class GpuMutant : public ::testing::TestWithParam<fp::Mutant> {
 protected:
  void SetUp() override {
    const std::string reason = fk::testing::gpu_skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

class GpuMutantControl : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = fk::testing::gpu_skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

std::vector<fp::Mutant> kernel_mutants() {
  auto m = fk::oneshot_mutants_compiled();
  for (auto t : fk::twoshot_mutants_compiled()) m.push_back(t);
  return m;
}

}  // namespace

// The early-trigger mutant's exact call sequence (consumer, late peer) with the correct
// kernel: any finding here would be an artefact of the rig, not the bug.
TEST_F(GpuMutantControl, EarlyTriggerControlIsCleanForTheCorrectKernel) {
  Rig rig(2, fk::DType::bf16);
  auto specs = provoking_sequence(fp::Mutant::early_trigger);
  for (auto& s : specs) s.mutant = fp::Mutant::none;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const Findings f = rig.call(specs[k]);
    ASSERT_TRUE(f.ok()) << "call " << k << ":\n" << f.summary();
  }
}

TEST_P(GpuMutant, IsCaught) {
  const fp::Mutant m = GetParam();
  const bool expect = MutantCase{m}.caught_on(fk::testing::compute_capability());
  Rig rig(2, fk::DType::bf16, m == fp::Mutant::sentinel_width);
  const auto specs = provoking_sequence(m);
  int caught_at = -1;
  Findings found;
  if (m == fp::Mutant::pdl_wait_missing) {
    // Only back-to-back PDL launches (no host sync between calls) can overlap.
    found = rig.call_sequence(specs);
    if (!found.ok()) caught_at = static_cast<int>(specs.size()) - 1;
  } else if (m == fp::Mutant::twoshot_gather_overlap) {
    // The regression test's sequences, seed by seed, until one is caught.
    for (std::uint32_t seed = 1; seed <= fk::testing::kGrowingTwoShotSeeds && caught_at < 0;
         ++seed) {
      const auto sequence = fk::testing::growing_twoshot_sequence(seed, m);
      found = rig.call_sequence(sequence);
      if (!found.ok()) caught_at = static_cast<int>(sequence.size()) - 1;
    }
  } else {
    for (std::size_t k = 0; k < specs.size() && caught_at < 0; ++k) {
      found = rig.call(specs[k]);  // checked after every call
      if (!found.ok()) caught_at = static_cast<int>(k);
    }
  }
  const std::string id(fp::mutant_id(m));
  if (caught_at >= 0)
    std::printf("[ info ] mutant %s caught at call %d%s:\n%s", id.c_str(), caught_at,
                found.hung ? " (hang record)" : "", found.summary(3).c_str());
  else
    std::printf("[ info ] mutant %s survived %zu calls on sm_%d%s\n", id.c_str(), specs.size(),
                fk::testing::compute_capability(),
                expect ? "" : " (expected here: see MutantCase::caught_on)");
  if (expect) EXPECT_GE(caught_at, 0) << "mutant " << id << " was not caught";
  else if (m == fp::Mutant::pdl_wait_missing || m == fp::Mutant::empty_body)
    EXPECT_LT(caught_at, 0) << "mutant " << id
                            << " is compiled correct below sm_120, yet a check fired";
  if (m == fp::Mutant::early_trigger && caught_at >= 0) {
    // Killed by its own effect, or not at all: a hang record here would be the rig's doing.
    EXPECT_FALSE(found.hung)
        << "early-trigger ended in a hang record, not in a stale consumer read";
    EXPECT_TRUE(found.consumer_read_stale)
        << "early-trigger was caught, but not by the PDL consumer's stale read";
  }
}

INSTANTIATE_TEST_SUITE_P(KernelMutants, GpuMutant, ::testing::ValuesIn(kernel_mutants()),
                         [](const ::testing::TestParamInfo<fp::Mutant>& info) {
                           std::string id(fp::mutant_id(info.param));
                           for (char& c : id)
                             if (c == '-') c = '_';
                           return id;
                         });

// The catalogue's kernel bit and the compiled mutant instances must agree (no GPU needed).
TEST(KernelCatalogue, EveryKernelMutantHasAnInstanceAndNoOtherDoes) {
  auto compiled = fk::oneshot_mutants_compiled();
  for (auto m : fk::twoshot_mutants_compiled()) compiled.push_back(m);
  for (const auto& info : fp::kMutantCatalogue) {
    const bool in_kernel = (info.layers & fp::kInKernel) != 0;
    const bool has_instance =
        std::find(compiled.begin(), compiled.end(), info.mutant) != compiled.end();
    EXPECT_EQ(in_kernel, has_instance)
        << info.id << ": catalogue says kernel=" << in_kernel << " but an instance is "
        << (has_instance ? "" : "not ") << "compiled";
  }
}
