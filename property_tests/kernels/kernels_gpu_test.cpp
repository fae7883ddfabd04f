// GPU tests of the fused kernels (label gpu): N ranks on N streams of one GPU, in one
// process. Every call is compared with the CPU reference and the protocol invariants are
// read back after it (the mutants: kernel_mutants_gpu_test.cpp). Skips without an sm_90+ GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gpu_rig.hpp"

namespace fk = fusioncheck::kernels;
namespace fp = fusioncheck::protocol;
using fk::testing::CallSpec;
using fk::testing::Findings;
using fk::testing::Path;
using fk::testing::Rig;

namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = fk::testing::gpu_skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

// Token counts that grow and shrink: a shrinking call must still clear the previous size.
const std::vector<int> kTokenSequence = {1, 7, 64, 3, 130, 2, 16};

std::vector<fk::Pattern> patterns_for_device() {
  std::vector<fk::Pattern> p = {fk::Pattern::allreduce, fk::Pattern::residual_rmsnorm,
                                fk::Pattern::fp8_static, fk::Pattern::fp8_dynamic};
  if (fk::testing::compute_capability() >= 100) p.push_back(fk::Pattern::nvfp4);
  return p;
}

void expect_clean_sequence(Rig& rig, CallSpec spec, const std::string& label) {
  for (int tokens : kTokenSequence) {
    spec.tokens = tokens;
    const Findings f = rig.call(spec);
    ASSERT_TRUE(f.ok()) << label << " tokens=" << tokens << " (cluster size " << f.cluster_size
                        << "):\n"
                        << f.summary();
  }
}

}  // namespace

TEST_F(Gpu, OneShotMatchesReferenceForEveryPatternRankCountAndDtype) {
  for (int ranks : {2, 4})
    for (fk::DType dtype : {fk::DType::bf16, fk::DType::f16}) {
      Rig rig(ranks, dtype);
      for (fk::Pattern pattern : patterns_for_device()) {
        CallSpec spec;
        spec.pattern = pattern;
        spec.hidden = 512;
        expect_clean_sequence(rig, spec,
                              std::string("ranks=") + std::to_string(ranks) + " " +
                                  std::string(fk::dtype_name(dtype)) + " " +
                                  std::string(fk::pattern_name(pattern)));
      }
    }
}

TEST_F(Gpu, OneShotVariantsFp32LamportPerStepRoundingWeightBias) {
  for (bool fp32_lamport : {false, true}) {
    Rig rig(2, fk::DType::bf16, fp32_lamport);
    for (bool fp32_acc : {true, false})
      for (float bias : {0.0f, 1.0f}) {
        CallSpec spec;
        spec.hidden = 1024;
        spec.fp32_accumulation = fp32_acc;
        spec.weight_bias = bias;
        expect_clean_sequence(rig, spec,
                              std::string("fp32_lamport=") + (fp32_lamport ? "1" : "0") +
                                  " fp32_acc=" + (fp32_acc ? "1" : "0") +
                                  " weight_bias=" + std::to_string(bias));
      }
  }
  Rig rig8(8, fk::DType::bf16);  // the largest rank count that stays quick on one GPU
  CallSpec spec;
  spec.hidden = 256;
  expect_clean_sequence(rig8, spec, "ranks=8");
}

TEST_F(Gpu, ClusterAndNonClusterRmsNormPathsBothMatchReference) {
  Rig rig(2, fk::DType::bf16);
  CallSpec spec;
  spec.hidden = 4096;
  spec.cluster = fk::ClusterMode::force_no_cluster;
  expect_clean_sequence(rig, spec, "force_no_cluster");
  if (!fk::device_supports_clusters())
    GTEST_SKIP() << "device reports no cluster launch: cluster path not tested";
  spec.cluster = fk::ClusterMode::force_cluster;
  spec.tokens = 4;
  const Findings f = rig.call(spec);
  ASSERT_TRUE(f.ok()) << f.summary();
  EXPECT_GT(f.cluster_size, 1) << "force_cluster launched without a cluster";
  std::printf("[ info ] cluster path: %d blocks per token row\n", f.cluster_size);
  spec.pattern = fk::Pattern::fp8_dynamic;  // two cross-block reductions per row
  expect_clean_sequence(rig, spec, "force_cluster fp8_dynamic");
}

TEST_F(Gpu, BackToBackPdlCallsWithEarlyAndLateTrigger) {
  for (fk::Trigger trigger : {fk::Trigger::at_end, fk::Trigger::early}) {
    Rig rig(2, fk::DType::bf16);
    std::vector<CallSpec> specs;
    for (int k = 0; k < 12; ++k) {
      CallSpec s;
      s.hidden = 1024;
      s.tokens = kTokenSequence[k % kTokenSequence.size()];
      s.trigger = trigger;
      specs.push_back(s);
    }
    const Findings f = rig.call_sequence(specs);
    EXPECT_TRUE(f.ok()) << (trigger == fk::Trigger::early ? "early" : "at_end") << " trigger:\n"
                        << f.summary();
  }
}

TEST_F(Gpu, TwoShotMatchesReferenceAndKeepsItsOwnState) {
  for (int ranks : {2, 4})
    for (fk::DType dtype : {fk::DType::bf16, fk::DType::f16}) {
      Rig rig(ranks, dtype);
      for (fk::Pattern pattern :
           {fk::Pattern::allreduce, fk::Pattern::residual_rmsnorm, fk::Pattern::fp8_dynamic}) {
        CallSpec spec;
        spec.path = Path::twoshot;
        spec.pattern = pattern;
        spec.hidden = 1024;
        expect_clean_sequence(rig, spec,
                              std::string("two-shot ranks=") + std::to_string(ranks) + " " +
                                  std::string(fk::pattern_name(pattern)));
      }
    }
}

// Each fused kernel is compiled with the plain epilogue and with every pattern's (choice.hpp):
// a call must run on the narrowest instance that serves it, and match the reference there.
TEST_F(Gpu, EachCallRunsOnTheNarrowestInstanceThatServesIt) {
  Rig rig(2, fk::DType::bf16);
  for (Path path : {Path::oneshot, Path::twoshot})
    for (fk::Pattern pattern :
         {fk::Pattern::allreduce, fk::Pattern::residual_rmsnorm, fk::Pattern::fp8_static})
      for (bool fp32_sum : {true, false}) {
        CallSpec spec;
        spec.path = path;
        spec.pattern = pattern;
        spec.fp32_accumulation = fp32_sum;
        spec.hidden = 1024;
        spec.tokens = 5;
        const Findings f = rig.call(spec);
        const std::string what = std::string(path == Path::oneshot ? "one-shot " : "two-shot ") +
                                 std::string(fk::pattern_name(pattern)) +
                                 (fp32_sum ? " fp32 sum" : " rounded sum");
        ASSERT_TRUE(f.ok()) << what << ":\n" << f.summary();
        EXPECT_EQ(f.epilogue, fk::epilogue_scope_for(pattern, fp32_sum)) << what;
      }
}

// The plain instances with a 16-bit Lamport element come twice, with and without the cluster
// path (ClusterCode, oneshot_kernel.cuh); a call that takes no cluster runs the twin without
// it, and every call matches the reference whichever build ran it.
TEST_F(Gpu, CallsWithoutAClusterRunTheClusterFreeTwin) {
  struct Case {
    const char* what;
    bool fp32_lamport;
    fk::Pattern pattern;
    fk::ClusterMode cluster;
    int hidden;
    bool expect_twin;
  };
  const Case cases[] = {
      {"plain, automatic, short rows", false, fk::Pattern::residual_rmsnorm,
       fk::ClusterMode::automatic, 1024, true},
      {"plain allreduce, no cluster", false, fk::Pattern::allreduce,
       fk::ClusterMode::force_no_cluster, 4096, true},
      {"plain, cluster forced", false, fk::Pattern::residual_rmsnorm,
       fk::ClusterMode::force_cluster, 4096, false},
      {"fp8 output (full epilogue)", false, fk::Pattern::fp8_static,
       fk::ClusterMode::force_no_cluster, 1024, false},
      {"fp32 Lamport element", true, fk::Pattern::residual_rmsnorm,
       fk::ClusterMode::force_no_cluster, 1024, false},
  };
  Rig rig16(2, fk::DType::bf16);
  Rig rig32(2, fk::DType::bf16, true);
  for (const Case& c : cases) {
    if (c.cluster == fk::ClusterMode::force_cluster && !fk::device_supports_clusters()) continue;
    CallSpec spec;
    spec.pattern = c.pattern;
    spec.cluster = c.cluster;
    spec.hidden = c.hidden;
    spec.tokens = 3;
    const Findings f = (c.fp32_lamport ? rig32 : rig16).call(spec);
    ASSERT_TRUE(f.ok()) << c.what << ":\n" << f.summary();
    EXPECT_EQ(f.cluster_free, c.expect_twin)
        << c.what << " (cluster size " << f.cluster_size << ")";
    if (f.cluster_free) EXPECT_EQ(f.cluster_size, 1) << c.what;
  }
}

TEST_F(Gpu, AlternatingOneShotAndTwoShotCallsStayIndependent) {
  Rig rig(2, fk::DType::bf16);
  for (int k = 0; k < 8; ++k) {
    CallSpec spec;
    spec.path = k % 2 == 0 ? Path::oneshot : Path::twoshot;
    spec.hidden = 2048;
    spec.tokens = kTokenSequence[k % kTokenSequence.size()];
    const Findings f = rig.call(spec);
    ASSERT_TRUE(f.ok()) << "call " << k << " (" << fk::testing::path_name(spec.path) << "):\n"
                        << f.summary();
  }
}

TEST_F(Gpu, UnfusedBaselineMatchesReference) {
  Rig rig(2, fk::DType::bf16);
  CallSpec spec;
  spec.path = Path::unfused;
  spec.hidden = 2048;
  expect_clean_sequence(rig, spec, "unfused (one-shot allreduce + residual/RMSNorm kernel)");
}

// Seeded injected delays (before push, poll and flag update) must not change any result.
TEST_F(Gpu, InjectedDelaysKeepBothKernelsCorrect) {
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    Rig rig(2, fk::DType::bf16);
    for (int k = 0; k < 6; ++k) {
      CallSpec spec;
      spec.path = k % 3 == 2 ? Path::twoshot : Path::oneshot;
      spec.hidden = 1024;
      spec.tokens = kTokenSequence[k % kTokenSequence.size()];
      spec.delay_seed = seed;
      spec.delay_max_ns = 200'000;
      const Findings f = rig.call(spec);
      ASSERT_TRUE(f.ok()) << "seed " << seed << " call " << k << ":\n" << f.summary();
    }
  }
}

namespace {
// Six device buffers (input, residual in, gamma, allreduce, residual and norm out) of
// tokens x hidden 16-bit elements, and the call parameters of rank 0 of two that use them.
struct CallBuffers {
  std::vector<fk::testing::DeviceBuffer> io;
  fk::FusedParams params;
  CallBuffers(int tokens, int hidden) {
    for (int i = 0; i < 6; ++i) io.emplace_back(static_cast<std::size_t>(tokens) * hidden * 2);
    params.ranks = 2;
    params.rank = 0;
    params.tokens = tokens;
    params.hidden = hidden;
    params.input = io[0].get();
    params.residual_in = io[1].get();
    params.gamma = io[2].get();
    params.allreduce_out = io[3].get();
    params.residual_out = io[4].get();
    params.norm_out = io[5].get();
  }
};
}  // namespace

// Regression (found by `fusioncheck gpu smoke` with injected delays): two-shot calls of
// changing size issued back to back; a rank that finishes call k starts call k+1's
// reduce-scatter while a delayed peer still reads call k's gathered rows. The gather region
// must not overlap any call's scatter region.
TEST_F(Gpu, TwoShotCallsOfChangingSizeBackToBackWithDelays) {
  for (std::uint32_t seed = 1; seed <= fk::testing::kGrowingTwoShotSeeds; ++seed) {
    Rig rig(2, fk::DType::bf16);
    const Findings f =
        rig.call_sequence(fk::testing::growing_twoshot_sequence(seed, fp::Mutant::none));
    ASSERT_TRUE(f.ok()) << "seed " << seed << ":\n" << f.summary();
  }
}

// Negative control of the delays: pauses far longer than the spin budget must end in a
// hang record on some call, while the same calls without delays stay clean.
TEST_F(Gpu, InjectedDelaysAreReal) {
  auto run = [](std::uint32_t seed) {
    Rig rig(2, fk::DType::bf16);
    for (int k = 0; k < 6; ++k) {
      CallSpec spec;
      spec.hidden = 1024;
      spec.tokens = 16;
      spec.spin_budget_cycles = 1ull << 23;  // ~4 ms
      spec.delay_seed = seed;
      spec.delay_max_ns = seed == 0 ? 0 : 10'000'000;
      const Findings f = rig.call(spec);
      if (!f.ok()) return f;
    }
    return Findings{};
  };
  const Findings clean = run(0);
  EXPECT_TRUE(clean.ok()) << "without delays:\n" << clean.summary();
  bool hung = false;
  for (std::uint32_t seed = 1; seed <= 4 && !hung; ++seed) hung = run(seed).hung;
  EXPECT_TRUE(hung) << "10 ms delays against a 4 ms spin budget never produced a hang record";
}

// The GPU Lamport scanner (used by `fusioncheck gpu check`) against the host scan, on
// buffers written by hand: clean, then one corruption per invariant line it must produce.
TEST_F(Gpu, DeviceLamportScanAgreesWithTheHostScanAndFindsEachCorruption) {
  for (const bool fp32 : {false, true}) {
    Rig rig(2, fk::DType::bf16, fp32, 64u << 10);
    fk::Workspace& ws = rig.workspaces()[0];
    const int elem_bytes = fp32 ? 4 : 2;
    const std::uint64_t per_buffer = ws.config().comm_size / elem_bytes;
    constexpr std::uint64_t kElems = 300;
    constexpr int kDataBuffer = 1;
    std::vector<std::vector<std::uint16_t>> inputs(2, std::vector<std::uint16_t>(kElems));
    for (int r = 0; r < 2; ++r)
      for (std::uint64_t i = 0; i < kElems; ++i)
        inputs[r][i] = static_cast<std::uint16_t>(0x3f80 + 7 * i + r);  // bf16 bits near 1.0
    inputs[1][11] = 0x8000;                                             // -0: the slot must hold +0
    fk::LamportScanRequest request;
    request.data_buffer = kDataBuffer;
    request.dtype = fk::DType::bf16;
    for (const auto& in : inputs) request.inputs.emplace_back(in);

    auto* lamport = static_cast<std::uint8_t*>(const_cast<void*>(ws.lamport_device()));
    auto write = [&](int buffer, std::uint64_t index, std::uint32_t bits) {
      ASSERT_EQ(cudaMemcpy(lamport + (buffer * per_buffer + index) * elem_bytes, &bits, elem_bytes,
                           cudaMemcpyHostToDevice),
                cudaSuccess);
    };
    for (int r = 0; r < 2; ++r)
      for (std::uint64_t i = 0; i < kElems; ++i)
        write(kDataBuffer, r * kElems + i,
              fk::pushed_lamport_bits(inputs[r][i], fk::DType::bf16, elem_bytes));
    fk::DeviceLamportScanner scanner;
    auto scan = [&] {
      const fk::LamportScan host = fk::scan_lamport_on_host(fk::read_control_state(ws), request);
      const fk::LamportScan device = scanner.scan(ws, request);
      EXPECT_TRUE(host == device) << "fp32=" << fp32 << ": the GPU and host scans differ";
      return fk::lamport_violations(0, device);
    };
    const auto clean = scan();
    EXPECT_TRUE(clean.empty()) << "fp32=" << fp32 << ": " << (clean.empty() ? "" : clean.front());

    struct Corruption {
      const char* what;
      int buffer;
      std::uint64_t index;
      std::uint32_t bits;
      std::string expected;
    };
    const std::uint32_t sentinel = fp32 ? fp::kNegZero32 : fp::kNegZero16;
    std::vector<Corruption> corruptions = {
        {"slot element", kDataBuffer, kElems + 7, 0x1234u,
         "invariant 4: rank 0 buffer 1 slot 1: 1 elements differ"},
        {"-0 not canonicalised", kDataBuffer, kElems + 11, sentinel,
         "slot 1: 1 elements differ from rank 1's input, first at 11"},
        {"past N*size", kDataBuffer, 2 * kElems + 3, 0u,
         "invariant 4 (past N*size): rank 0 buffer 1: 1 elements"},
        {"first element of another buffer", 2, 0, 0x42u,
         "invariant 5: rank 0 buffer 2: 1 elements are not -0, first at element 0 = 0x42"},
        {"last element of another buffer", 0, per_buffer - 1, 0u,
         "invariant 5: rank 0 buffer 0: 1 elements"},
    };
    if (fp32)
      corruptions.push_back({"16-bit sentinel in an fp32 buffer", 0, 5, 0x80008000u,
                             "invariant 6: rank 0 buffer 0: 1 fp32"});
    for (const auto& c : corruptions) {
      std::uint32_t saved = 0;
      ASSERT_EQ(cudaMemcpy(&saved, lamport + (c.buffer * per_buffer + c.index) * elem_bytes,
                           elem_bytes, cudaMemcpyDeviceToHost),
                cudaSuccess);
      write(c.buffer, c.index, c.bits);
      const auto lines = scan();
      const bool found = std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
        return l.find(c.expected) != std::string::npos;
      });
      EXPECT_TRUE(found) << "fp32=" << fp32 << ", " << c.what << ": expected \"" << c.expected
                         << "\", got " << lines.size() << " lines"
                         << (lines.empty() ? "" : ": " + lines.front());
      write(c.buffer, c.index, saved);
    }
    EXPECT_TRUE(scan().empty()) << "fp32=" << fp32 << ": not clean after restoring";
  }
}

// The scan gpu check runs with our kernels: each rank compares the slot it pushed in every
// rank's data buffer (SlotScan::my_slot_everywhere). It must agree with every owner's own
// slot-by-slot scan, transposed, and name the owner of a corrupted slot.
TEST_F(Gpu, MySlotEverywhereScanAgreesWithEachOwnersScan) {
  constexpr int kRanks = 4;
  constexpr std::uint64_t kElems = 200;
  constexpr int kDataBuffer = 2;
  for (const bool fp32 : {false, true}) {
    Rig rig(kRanks, fk::DType::bf16, fp32, 64u << 10);
    const int elem_bytes = fp32 ? 4 : 2;
    const std::uint64_t per_buffer = rig.workspaces()[0].config().comm_size / elem_bytes;
    std::vector<std::vector<std::uint16_t>> inputs(kRanks, std::vector<std::uint16_t>(kElems));
    for (int r = 0; r < kRanks; ++r)
      for (std::uint64_t i = 0; i < kElems; ++i)
        inputs[r][i] = static_cast<std::uint16_t>(0x3f80 + 5 * i + 64 * r);
    inputs[2][9] = 0x8000;  // -0: every slot must hold +0
    auto write_in = [&](int owner, int buffer, std::uint64_t index, std::uint32_t bits) {
      auto* lamport =
          static_cast<std::uint8_t*>(const_cast<void*>(rig.workspaces()[owner].lamport_device()));
      ASSERT_EQ(cudaMemcpy(lamport + (buffer * per_buffer + index) * elem_bytes, &bits, elem_bytes,
                           cudaMemcpyHostToDevice),
                cudaSuccess);
    };
    auto write = [&](int owner, std::uint64_t index, std::uint32_t bits) {
      write_in(owner, kDataBuffer, index, bits);
    };
    for (int owner = 0; owner < kRanks; ++owner)
      for (int r = 0; r < kRanks; ++r)
        for (std::uint64_t i = 0; i < kElems; ++i)
          write(owner, r * kElems + i,
                fk::pushed_lamport_bits(inputs[r][i], fk::DType::bf16, elem_bytes));

    fk::LamportScanRequest every;  // an owner's slot-by-slot scan, on the host
    every.data_buffer = kDataBuffer;
    for (const auto& in : inputs) every.inputs.emplace_back(in);
    auto my_slot_request = [&](int r) {
      fk::LamportScanRequest mine;
      mine.data_buffer = kDataBuffer;
      mine.slots = fk::SlotScan::my_slot_everywhere;
      mine.rank = r;
      mine.ranks = kRanks;
      mine.inputs.emplace_back(inputs[r]);
      return mine;
    };
    // The same requests with each rank's input in GPU memory (what `gpu check` passes).
    std::vector<std::uint16_t*> device_inputs(kRanks, nullptr);
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(cudaMalloc(&device_inputs[r], kElems * 2), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(device_inputs[r], inputs[r].data(), kElems * 2, cudaMemcpyHostToDevice),
                cudaSuccess);
    }
    auto device_request = [&](int r) {
      fk::LamportScanRequest mine = my_slot_request(r);
      mine.inputs.clear();
      mine.device_input = device_inputs[r];
      mine.device_input_elems = kElems;
      return mine;
    };
    fk::DeviceLamportScanner scanner;
    // Its own scanner, whose scratch never holds an input: one that ignored device_input
    // would compare against nothing rather than against the host request's copy.
    fk::DeviceLamportScanner device_scanner;
    auto agree = [&](const char* when) {
      std::vector<fk::LamportScan> owners;
      for (auto& ws : rig.workspaces())
        owners.push_back(fk::scan_lamport_on_host(fk::read_control_state(ws), every));
      for (int r = 0; r < kRanks; ++r) {
        const fk::LamportScan mine = scanner.scan(rig.workspaces()[r], my_slot_request(r));
        EXPECT_TRUE(device_scanner.scan(rig.workspaces()[r], device_request(r)) == mine)
            << when << ", fp32=" << fp32 << ": rank " << r << ", input in GPU memory";
        ASSERT_EQ(mine.slots.size(), static_cast<std::size_t>(kRanks));
        for (int owner = 0; owner < kRanks; ++owner)
          EXPECT_TRUE(mine.slots[owner] == owners[owner].slots[r])
              << when << ", fp32=" << fp32 << ": rank " << r << "'s slot in rank " << owner
              << "'s buffer";
        EXPECT_TRUE(mine.buffers == owners[r].buffers)
            << when << ", fp32=" << fp32 << ": rank " << r;
      }
    };
    agree("clean");
    for (int r = 0; r < kRanks; ++r)
      EXPECT_TRUE(
          fk::lamport_violations(r, scanner.scan(rig.workspaces()[r], my_slot_request(r))).empty())
          << "fp32=" << fp32 << ": rank " << r;

    write(3, 1 * kElems + 7, 0x1234u);  // rank 1's slot in rank 3's buffer
    write(0, 2 * kElems + 9,
          fp32 ? fp::kNegZero32 : fp::kNegZero16);  // rank 2's -0, not canonicalised
    agree("corrupted");
    const auto one =
        fk::lamport_violations(1, scanner.scan(rig.workspaces()[1], my_slot_request(1)));
    ASSERT_EQ(one.size(), 1u) << "fp32=" << fp32;
    EXPECT_NE(
        one[0].find(
            "invariant 4: rank 3 buffer 2 slot 1: 1 elements differ from rank 1's input, first at 7: 0x1234"),
        std::string::npos)
        << one[0];
    const auto two =
        fk::lamport_violations(2, scanner.scan(rig.workspaces()[2], my_slot_request(2)));
    ASSERT_EQ(two.size(), 1u) << "fp32=" << fp32;
    EXPECT_NE(
        two[0].find(
            "invariant 4: rank 0 buffer 2 slot 2: 1 elements differ from rank 2's input, first at 9"),
        std::string::npos)
        << two[0];
    EXPECT_TRUE(
        fk::lamport_violations(3, scanner.scan(rig.workspaces()[3], my_slot_request(3))).empty())
        << "fp32=" << fp32
        << ": rank 3 pushed nothing wrong; its buffer's slots are its peers' to check";

    // Outside the slots each rank scans its own buffers: past N * size of its data buffer,
    // and the other two buffers.
    write(1, kRanks * kElems + 3, 0x42u);
    write_in(2, 0, 5, 0x43u);
    agree("corrupted outside the slots");
    const auto past =
        fk::lamport_violations(1, scanner.scan(rig.workspaces()[1], my_slot_request(1)));
    EXPECT_TRUE(std::any_of(
        past.begin(), past.end(),
        [](const std::string& l) {
          return l.find(
                     "invariant 4 (past N*size): rank 1 buffer 2: 1 elements are not -0, first at element 803") !=
                 std::string::npos;
        }))
        << "fp32=" << fp32 << ": " << past.size() << " lines";
    const auto other =
        fk::lamport_violations(2, scanner.scan(rig.workspaces()[2], my_slot_request(2)));
    EXPECT_TRUE(std::any_of(
        other.begin(), other.end(),
        [](const std::string& l) {
          return l.find(
                     "invariant 5: rank 2 buffer 0: 1 elements are not -0, first at element 5 = 0x43") !=
                 std::string::npos;
        }))
        << "fp32=" << fp32 << ": " << other.size() << " lines";
    EXPECT_TRUE(
        fk::lamport_violations(3, scanner.scan(rig.workspaces()[3], my_slot_request(3))).empty())
        << "fp32=" << fp32 << ": rank 3's buffers are clean";
    for (std::uint16_t* p : device_inputs) cudaFree(p);
  }
}

TEST_F(Gpu, MissingPeerEndsInAHangRecordNotAHang) {
  // One block a row, and a row split over a cluster: there every block of the cluster gives
  // up its polls and then meets the others in the exchange of partial sums, which must end
  // too, without a second record and without a block leaving while a value is on its way.
  struct Shape {
    int tokens, hidden;
    fk::ClusterMode cluster;
  };
  for (const Shape shape : {Shape{64, 256, fk::ClusterMode::automatic},
                            Shape{2, 8192, fk::ClusterMode::force_cluster}}) {
    const std::string what = std::to_string(shape.tokens) + " x " + std::to_string(shape.hidden);
    Rig rig(2, fk::DType::bf16);
    CallBuffers call(shape.tokens, shape.hidden);
    fk::FusedParams& p = call.params;
    p.spin_budget_cycles = 1ull << 24;  // ~10 ms
    p.cluster = shape.cluster;
    call.io[0].fill(0x3f);                            // non-sentinel input
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the fill runs on the legacy stream
    const auto start = std::chrono::steady_clock::now();
    const fk::LaunchInfo info =
        fk::launch_oneshot(p, rig.workspaces()[0], rig.stream(0));  // rank 1 never launches
    ASSERT_EQ(cudaStreamSynchronize(rig.stream(0)), cudaSuccess) << what;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (shape.cluster == fk::ClusterMode::force_cluster) EXPECT_GT(info.cluster_size, 1) << what;
    const fk::HangRecord h = rig.workspaces()[0].hang_record();
    ASSERT_EQ(h.valid, 1u) << what << ": rank 0 waited for an absent peer but left no hang record";
    EXPECT_EQ(h.rank, 0u) << what;
    EXPECT_EQ(h.awaited_slot, 1u) << what;
    EXPECT_EQ(h.what, fk::HangSite::lamport_poll) << what;
    EXPECT_EQ(h.flag, 0u) << what;
    EXPECT_LT(seconds, 5.0) << what;
    std::printf("[ info ] %s: %s (returned after %.3f s)\n", what.c_str(), fk::describe(h).c_str(),
                seconds);
    EXPECT_THROW(rig.workspaces()[0].throw_if_hung(), fk::KernelHang) << what;
  }
}

TEST_F(Gpu, WaitProfileShowsTheLatePeer) {
  Rig rig(2, fk::DType::bf16);
  std::vector<std::vector<fk::testing::DeviceBuffer>> io(2);
  std::vector<fk::FusedParams> params(2);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 6; ++i) io[r].emplace_back(16 * 1024 * 2);
    io[r][0].fill(0x3f);
    io[r][2].fill(0x3f);
    fk::FusedParams& p = params[r];
    p.ranks = 2;
    p.rank = r;
    p.tokens = 16;
    p.hidden = 1024;
    p.input = io[r][0].get();
    p.residual_in = io[r][1].get();
    p.gamma = io[r][2].get();
    p.allreduce_out = io[r][3].get();
    p.residual_out = io[r][4].get();
    p.norm_out = io[r][5].get();
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // fills run on the legacy stream
  const fk::LaunchInfo info =
      fk::launch_oneshot_wait_profile(params[0], rig.workspaces()[0], rig.stream(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // rank 1 arrives late
  fk::launch_oneshot_wait_profile(params[1], rig.workspaces()[1], rig.stream(1));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rig.workspaces()[0].throw_if_hung();
  const auto profile = rig.workspaces()[0].wait_profile(info.grid);
  std::uint64_t on_peer0 = 0, on_peer1 = 0, work = 0;
  for (const auto& e : profile) {
    on_peer0 += e.poll_cycles_by_peer[0];
    on_peer1 += e.poll_cycles_by_peer[1];
    work += e.work_cycles;
  }
  std::printf(
      "[ info ] rank 0 wait profile over %d blocks: polled peer 0 %llu, peer 1 %llu cycles; work %llu\n",
      info.grid, static_cast<unsigned long long>(on_peer0),
      static_cast<unsigned long long>(on_peer1), static_cast<unsigned long long>(work));
  EXPECT_GT(on_peer1, 10 * (on_peer0 + 1)) << "the late peer 1 should dominate rank 0's polling";
  EXPECT_GT(work, 0u);
}

// The benchmark-only unbounded-polls instances (gpu bench) exist for bf16, 16-bit Lamport,
// 2/4/8 ranks; anything else is refused before a kernel is enqueued. Nothing here launches
// one: a hang in them would spin for ever.
TEST_F(Gpu, UnboundedPollsInstancesRefuseWhatTheyLack) {
  for (int ranks : {2, 4, 8}) EXPECT_TRUE(fk::oneshot_unbounded_polls_compiled(ranks)) << ranks;
  EXPECT_FALSE(fk::oneshot_unbounded_polls_compiled(16));
  for (bool fp32_lamport : {false, true}) {
    const fk::DType dtype =
        fp32_lamport ? fk::DType::bf16 : fk::DType::f16;  // each lacks an instance
    Rig rig(2, dtype, fp32_lamport);
    CallBuffers call(16, 1024);
    fk::FusedParams& p = call.params;
    p.dtype = dtype;
    p.fp32_lamport = fp32_lamport;
    try {
      fk::launch_oneshot_unbounded_polls(p, rig.workspaces()[0], rig.stream(0));
      ADD_FAILURE() << "launched an unbounded-polls instance with fp32_lamport=" << fp32_lamport;
    } catch (const fk::InvalidLaunch& e) {
      EXPECT_NE(std::string(e.what()).find("unbounded-polls"), std::string::npos) << e.what();
    }
  }
  // The instances have the plain epilogue only: a rounded sum is refused, not computed wrong.
  Rig rig(2, fk::DType::bf16);
  CallBuffers call(16, 1024);
  call.params.fp32_accumulation = false;
  try {
    fk::launch_oneshot_unbounded_polls(call.params, rig.workspaces()[0], rig.stream(0));
    ADD_FAILURE() << "launched an unbounded-polls instance for a rounded sum";
  } catch (const fk::InvalidLaunch& e) {
    EXPECT_NE(std::string(e.what()).find("fp32 accumulation"), std::string::npos) << e.what();
  }
}
