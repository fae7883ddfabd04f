// CPU tests of the kernels' host side: launch validation (what a launch refuses, without a
// device) and the invariant checker on synthetic states, with a perturbation for every
// invariant it must catch (negative controls).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fusioncheck/kernels/choice.hpp"
#include "fusioncheck/kernels/invariants.hpp"
#include "fusioncheck/kernels/lamport_scan.hpp"
#include "fusioncheck/kernels/validate.hpp"

namespace fk = fusioncheck::kernels;
namespace fp = fusioncheck::protocol;

namespace {

alignas(16) unsigned char fake_device_memory[6][64];

fk::FusedParams valid_params() {
  fk::FusedParams p;
  p.ranks = 2;
  p.rank = 1;
  p.tokens = 4;
  p.hidden = 64;
  p.pattern = fk::Pattern::residual_rmsnorm;
  p.input = fake_device_memory[0];
  p.residual_in = fake_device_memory[1];
  p.gamma = fake_device_memory[2];
  p.residual_out = fake_device_memory[3];
  p.norm_out = fake_device_memory[4];
  return p;
}

fk::LaunchLimits limits() { return fk::LaunchLimits{2, 1u << 16, false, 1u << 16, 90}; }

std::string refusal(const fk::FusedParams& p, const fk::LaunchLimits& l, bool twoshot = false) {
  try {
    if (twoshot) fk::validate_twoshot(p, l);
    else fk::validate_oneshot(p, l);
  } catch (const fk::InvalidLaunch& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(KernelValidation, AcceptsAValidLaunch) {
  EXPECT_EQ(refusal(valid_params(), limits()), "");
  EXPECT_EQ(refusal(valid_params(), limits(), true), "");
}

TEST(KernelValidation, RefusesUnsupportedRankCounts) {
  for (int ranks : {1, 3, 5, 6, 12, 32}) {
    auto p = valid_params();
    p.ranks = ranks;
    p.rank = 0;
    auto l = limits();
    l.workspace_ranks = ranks;
    EXPECT_NE(refusal(p, l).find("ranks=" + std::to_string(ranks) + " is not supported"),
              std::string::npos)
        << refusal(p, l);
  }
  for (int ranks : {2, 4, 8, 16}) {
    auto p = valid_params();
    p.ranks = ranks;
    auto l = limits();
    l.workspace_ranks = ranks;
    l.comm_size = 1u << 20;
    EXPECT_EQ(refusal(p, l), "") << ranks;
  }
}

TEST(KernelValidation, RefusesHiddenNotAMultipleOfTheVectorWidth) {
  for (int hidden : {0, 4, 12, 100}) {
    auto p = valid_params();
    p.hidden = hidden;
    EXPECT_NE(refusal(p, limits()).find("hidden="), std::string::npos) << hidden;
  }
  auto p = valid_params();
  p.pattern = fk::Pattern::nvfp4;
  p.hidden = 24;  // multiple of 8, not of 16
  p.quant_out = fake_device_memory[5];
  p.scale_out = fake_device_memory[5];
  auto l = limits();
  l.compute_capability = 100;
  EXPECT_NE(refusal(p, l).find("multiple of 16"), std::string::npos);
}

TEST(KernelValidation, RefusesSizesBeyondTheWorkspace) {
  auto p = valid_params();
  auto l = limits();
  // 2 ranks x tokens x 64 x 2 B must fit 64 KiB: 256 tokens fit exactly, 257 do not.
  p.tokens = 256;
  EXPECT_EQ(refusal(p, l), "");
  p.tokens = 257;
  EXPECT_NE(refusal(p, l).find("exceeds the Lamport buffer"), std::string::npos);
  p.tokens = 1024;
  EXPECT_NE(refusal(p, l, true).find("two-shot needs"), std::string::npos);
}

TEST(KernelValidation, RefusesNvfp4BelowSm100AndAcceptsItAbove) {
  auto p = valid_params();
  p.pattern = fk::Pattern::nvfp4;
  p.quant_out = fake_device_memory[5];
  p.scale_out = fake_device_memory[5];
  EXPECT_NE(refusal(p, limits()).find("nvfp4 needs sm_100 or sm_120"), std::string::npos);
  for (int cc : {100, 120}) {
    auto l = limits();
    l.compute_capability = cc;
    EXPECT_EQ(refusal(p, l), "") << cc;
  }
}

TEST(KernelValidation, RefusesTheBlockScaledFp8PatternsOnEveryArchitecture) {
  for (fk::Pattern pattern : {fk::Pattern::mxfp8, fk::Pattern::group_fp8})
    for (int cc : {90, 100, 120}) {
      auto p = valid_params();
      p.pattern = pattern;
      p.quant_out = fake_device_memory[5];
      p.scale_out = fake_device_memory[5];
      auto l = limits();
      l.compute_capability = cc;
      EXPECT_NE(refusal(p, l).find("is not implemented by these kernels"), std::string::npos)
          << fk::pattern_name(pattern) << " sm_" << cc;
    }
}

TEST(KernelValidation, RefusesLamportWidthMismatchAndBadPointers) {
  auto p = valid_params();
  p.fp32_lamport = true;
  EXPECT_NE(refusal(p, limits()).find("sentinel width"), std::string::npos);
  p = valid_params();
  p.gamma = nullptr;
  EXPECT_NE(refusal(p, limits()).find("gamma is null"), std::string::npos);
  p = valid_params();
  p.input = fake_device_memory[0] + 2;
  EXPECT_NE(refusal(p, limits()).find("16-byte aligned"), std::string::npos);
  p = valid_params();
  p.rank = 2;
  EXPECT_NE(refusal(p, limits()).find("rank=2"), std::string::npos);
  p = valid_params();
  p.ranks = 4;
  EXPECT_NE(refusal(p, limits()).find("workspace was built for 2"), std::string::npos);
}

// ---- invariant checker ---------------------------------------------------------------
namespace {

constexpr std::uint64_t kComm = 256;  // bytes per buffer: 128 bf16 elements
constexpr std::uint64_t kElems = 16;  // per rank

// State after one correct call with flag 0 -> 1 on `ranks` ranks, 16-bit Lamport.
struct Synthetic {
  std::vector<fk::ControlState> before, after;
  std::vector<std::vector<std::uint16_t>> inputs;
};

Synthetic correct_call(int ranks, int elem_bytes = 2) {
  Synthetic s;
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::uint16_t> in(kElems);
    for (std::uint64_t i = 0; i < kElems; ++i)
      in[i] = static_cast<std::uint16_t>(0x3f80 + r * 64 + i);
    in[3] = 0x8000;  // -0 must arrive as +0
    s.inputs.push_back(in);
  }
  for (int r = 0; r < ranks; ++r) {
    fk::ControlState st;
    st.control = fp::initial_control_block(kComm);
    st.comm_size = kComm;
    st.elem_bytes = elem_bytes;
    st.ranks = ranks;
    st.twoshot_blocks = 1;
    st.buffer_guards_intact = true;
    st.barrier_flags.assign(2 * ranks, 0u);
    st.lamport.resize(3 * kComm);
    for (std::uint64_t i = 0; i < 3 * kComm; i += elem_bytes) {
      const std::uint32_t neg = elem_bytes == 4 ? fp::kNegZero32 : fp::kNegZero16;
      std::memcpy(&st.lamport[i], &neg, elem_bytes);
    }
    s.before.push_back(st);
    fk::ControlState after = st;
    after.control.flag = 1;
    after.control.clear_size = ranks * kElems;
    for (int src = 0; src < ranks; ++src)
      for (std::uint64_t i = 0; i < kElems; ++i) {
        const std::uint32_t bits =
            fk::pushed_lamport_bits(s.inputs[src][i], fk::DType::bf16, elem_bytes);
        std::memcpy(&after.lamport[(src * kElems + i) * elem_bytes], &bits, elem_bytes);
      }
    s.after.push_back(after);
  }
  return s;
}

bool mentions(const std::vector<std::string>& v, const std::string& prefix) {
  for (const auto& line : v)
    if (line.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> check(const Synthetic& s) {
  return fk::check_oneshot_invariants(s.before, s.after, s.inputs, fk::DType::bf16);
}

}  // namespace

TEST(InvariantChecker, CorrectCallHasNoViolations) {
  for (int elem_bytes : {2, 4}) {
    const auto v = check(correct_call(2, elem_bytes));
    EXPECT_TRUE(v.empty()) << v.front();
  }
}

TEST(InvariantChecker, CatchesEveryPerturbation) {
  struct Case {
    const char* what;
    const char* expect;
    void (*perturb)(Synthetic&);
  };
  const Case cases[] = {
      {"counter left", "invariant 1", [](Synthetic& s) { s.after[0].control.arrival_counter = 3; }},
      {"flag not advanced", "invariant 2",
       [](Synthetic& s) {
         for (auto& a : s.after) a.control.flag = 0;
       }},
      {"clear size of one rank", "invariant 2",
       [](Synthetic& s) {
         for (auto& a : s.after) a.control.clear_size = kElems;
       }},
      {"ranks disagree", "invariant 3", [](Synthetic& s) { s.after[1].control.flag = 2; }},
      {"stale element in slot", "invariant 4",
       [](Synthetic& s) { s.after[1].lamport[2 * (kElems + 5)] ^= 1; }},
      {"-0 not canonicalised", "invariant 4",
       [](Synthetic& s) {
         s.after[0].lamport[2 * 3] = 0x00;
         s.after[0].lamport[2 * 3 + 1] = 0x80;
       }},
      {"leftover past N*size", "invariant 4",
       [](Synthetic& s) { s.after[0].lamport[2 * (2 * kElems + 1) + 1] = 0; }},
      {"other buffer not cleared", "invariant 5",
       [](Synthetic& s) { s.after[1].lamport[kComm * 2 + 10] = 0x12; }},
      {"control guard", "invariant 11", [](Synthetic& s) { s.after[0].control.guard_back = 0; }},
      {"buffer guard", "invariant 11",
       [](Synthetic& s) { s.after[1].buffer_guards_intact = false; }},
  };
  for (const auto& c : cases) {
    Synthetic s = correct_call(2);
    c.perturb(s);
    EXPECT_TRUE(mentions(check(s), c.expect)) << c.what;
  }
}

TEST(InvariantChecker, CatchesA16BitSentinelInAnFp32Buffer) {
  Synthetic s = correct_call(2, 4);
  const std::uint32_t narrow = 0x80008000u;
  std::memcpy(&s.after[0].lamport[kComm + 8], &narrow, 4);
  const auto v = check(s);
  EXPECT_TRUE(mentions(v, "invariant 6"));
  EXPECT_TRUE(mentions(v, "invariant 5"));
}

// The GPU scanner is compared with this one on the H200 (kernels_gpu_test), so its counts
// and first offenders must be exact: several bad elements, the lowest index reported.
TEST(InvariantChecker, HostLamportScanCountsAndReportsTheFirstOffender) {
  Synthetic s = correct_call(2);
  fk::ControlState& a = s.after[1];
  auto put = [&](int buffer, std::uint64_t index, std::uint16_t bits) {
    std::memcpy(&a.lamport[buffer * kComm + index * 2], &bits, 2);
  };
  put(0, kElems + 9, 0x1111);   // slot 1
  put(0, kElems + 4, 0x2222);   // slot 1, lower index
  put(0, 2 * kElems + 7, 0x0);  // past N * size
  put(2, 60, 0x4444);
  put(2, 5, 0x5555);
  put(2, 127, 0x6666);
  fk::LamportScanRequest request;
  request.data_buffer = 0;
  request.dtype = fk::DType::bf16;
  for (const auto& in : s.inputs) request.inputs.emplace_back(in);
  const fk::LamportScan scan = fk::scan_lamport_on_host(a, request);
  EXPECT_EQ(scan.slot_elems, kElems);
  EXPECT_EQ(scan.slots[0].mismatches, 0u);
  EXPECT_EQ(scan.slots[1].mismatches, 2u);
  EXPECT_EQ(scan.slots[1].first_index, 4u);
  EXPECT_EQ(scan.slots[1].first_value, 0x2222u);
  EXPECT_EQ(scan.slots[1].first_expected,
            0x3fc4u);  // rank 1's element 4 (correct_call), pushed unchanged
  EXPECT_EQ(scan.buffers[0].not_sentinel, 1u);
  EXPECT_EQ(scan.buffers[0].first_index, 2 * kElems + 7);
  EXPECT_EQ(scan.buffers[1].not_sentinel, 0u);
  EXPECT_EQ(scan.buffers[2].not_sentinel, 3u);
  EXPECT_EQ(scan.buffers[2].first_index, 5u);
  EXPECT_EQ(scan.buffers[2].first_value, 0x5555u);
  const auto lines = fk::lamport_violations(1, scan);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(
      lines[0],
      "invariant 4: rank 1 buffer 0 slot 1: 2 elements differ from rank 1's input, first at 4: "
      "0x2222 instead of 0x3fc4");
  EXPECT_TRUE(mentions(
      lines,
      "invariant 4 (past N*size): rank 1 buffer 0: 1 elements are not -0, first at element 39"));
  EXPECT_TRUE(mentions(
      lines, "invariant 5: rank 1 buffer 2: 3 elements are not -0, first at element 5 = 0x5555"));
}

// Requests and states a scanner cannot use are refused, not read past their end.
TEST(InvariantChecker, LamportScanRefusesWhatItCannotScan) {
  Synthetic s = correct_call(2);
  fk::LamportScanRequest request;
  request.dtype = fk::DType::bf16;
  for (const auto& in : s.inputs) request.inputs.emplace_back(in);
  EXPECT_NO_THROW(fk::scan_lamport_on_host(s.after[0], request));
  fk::ControlState without = s.after[0];
  without.lamport.clear();  // as read with LamportCopy::without_buffers
  EXPECT_THROW(fk::scan_lamport_on_host(without, request), std::invalid_argument);
  fk::LamportScanRequest bad_buffer = request;
  bad_buffer.data_buffer = 3;
  EXPECT_THROW(fk::scan_lamport_on_host(s.after[0], bad_buffer), std::invalid_argument);
  fk::LamportScanRequest ragged = request;
  ragged.inputs[1] = ragged.inputs[1].first(kElems - 1);
  EXPECT_THROW(fk::scan_lamport_on_host(s.after[0], ragged), std::invalid_argument);
}

// A my_slot_everywhere scan (each rank compares the slot it pushed, in every rank's buffer)
// is shaped by the rank count, names the rank whose buffer is wrong, and needs exactly one
// input and a rank inside the job; the host scanner, which sees one rank's buffers, refuses it.
TEST(InvariantChecker, MySlotEverywhereScanNamesTheBufferOwner) {
  Synthetic s = correct_call(4);
  fk::LamportScanRequest request;
  request.dtype = fk::DType::bf16;
  request.slots = fk::SlotScan::my_slot_everywhere;
  request.rank = 2;
  request.ranks = 4;
  request.inputs.emplace_back(s.inputs[2]);
  const fk::LamportScan empty = fk::empty_lamport_scan(request, 2, 1u << 20);
  EXPECT_EQ(empty.slots.size(), 4u);
  EXPECT_EQ(empty.slot_elems, s.inputs[2].size());
  EXPECT_TRUE(empty.slots_fit);
  EXPECT_FALSE(fk::empty_lamport_scan(request, 2, 4 * s.inputs[2].size() - 1).slots_fit);

  fk::LamportScan scan = empty;
  EXPECT_TRUE(fk::lamport_violations(2, scan).empty());
  scan.slots[3].mismatches = 5;  // rank 3's buffer holds rank 2's slot wrong
  scan.slots[3].first_index = 4;
  scan.slots[3].first_value = 0x2222;
  // Rank 2's element 4 is 0x3f80 + 2 * 64 + 4 (correct_call), pushed unchanged.
  scan.slots[3].first_expected = fk::pushed_lamport_bits(s.inputs[2][4], fk::DType::bf16, 2);
  const auto lines = fk::lamport_violations(2, scan);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(
      lines[0],
      "invariant 4: rank 3 buffer 0 slot 2: 5 elements differ from rank 2's input, first at 4: "
      "0x2222 instead of 0x4004");

  EXPECT_THROW(fk::scan_lamport_on_host(s.after[2], request), std::invalid_argument);
  fk::LamportScanRequest two_inputs = request;
  two_inputs.inputs.emplace_back(s.inputs[3]);
  EXPECT_THROW(fk::empty_lamport_scan(two_inputs, 2, 1u << 20), std::invalid_argument);
  // This rank's input in GPU memory instead: shaped by its length, refused beside a host
  // input, outside my_slot_everywhere and by the host scanner.
  const std::uint16_t fake_device_word = 0;
  fk::LamportScanRequest on_device = request;
  on_device.inputs.clear();
  on_device.device_input = &fake_device_word;  // never dereferenced by the host-side checks
  on_device.device_input_elems = 3 * s.inputs[2].size();
  EXPECT_EQ(fk::empty_lamport_scan(on_device, 2, 1u << 20).slot_elems, 3 * s.inputs[2].size());
  EXPECT_THROW(fk::scan_lamport_on_host(s.after[2], on_device), std::invalid_argument);
  fk::LamportScanRequest both = on_device;
  both.inputs.emplace_back(s.inputs[2]);
  EXPECT_THROW(fk::empty_lamport_scan(both, 2, 1u << 20), std::invalid_argument);
  fk::LamportScanRequest every_slot = on_device;
  every_slot.slots = fk::SlotScan::every_slot_here;
  EXPECT_THROW(fk::empty_lamport_scan(every_slot, 2, 1u << 20), std::invalid_argument);
  for (const auto& [rank, ranks] :
       {std::pair{4, 4}, std::pair{-1, 4}, std::pair{0, 0}, std::pair{0, 17}}) {
    fk::LamportScanRequest bad = request;
    bad.rank = rank;
    bad.ranks = ranks;
    EXPECT_THROW(fk::empty_lamport_scan(bad, 2, 1u << 20), std::invalid_argument)
        << rank << " of " << ranks;
  }
}

TEST(InvariantChecker, TwoShotFlagsAndStateSeparation) {
  Synthetic s = correct_call(2);
  for (auto& a : s.after) {
    a.control = s.before[0].control;
    a.control.two_shot_flag = 1;
    a.barrier_flags.assign(a.barrier_flags.size(), 1u);
  }
  EXPECT_TRUE(fk::check_twoshot_invariants(s.before, s.after).empty());
  s.after[1].barrier_flags[2] = 0;
  EXPECT_TRUE(mentions(fk::check_twoshot_invariants(s.before, s.after), "invariant 7"));
  s.after[1].barrier_flags[2] = 1;
  s.after[0].control.flag = 1;  // one-shot state moved during a two-shot call
  EXPECT_TRUE(mentions(fk::check_twoshot_invariants(s.before, s.after), "invariant 2"));
}

// A kernel with two barrier rounds per two-shot call (FlashInfer's) advances the flag by 2:
// its state says so, and then a step of 1 is the violation.
TEST(InvariantChecker, TwoShotFlagStepsFollowTheKernelsState) {
  Synthetic s = correct_call(2);
  for (auto& a : s.after) {
    a.control = s.before[0].control;
    a.control.two_shot_flag = 2;
    a.barrier_flags.assign(a.barrier_flags.size(), 2u);
    a.twoshot_flag_steps = 2;
  }
  EXPECT_TRUE(fk::check_twoshot_invariants(s.before, s.after).empty());
  for (auto& a : s.after) a.twoshot_flag_steps = 1;  // ours: 0 -> 2 is wrong
  EXPECT_TRUE(mentions(fk::check_twoshot_invariants(s.before, s.after),
                       "invariant 2: rank 0 two-shot flag went 0 -> 2, expected 1"));
}

// ---- CommBootstrap forwards to an MpiComm-shaped communicator ------------------------------
// ---- hang records (types.hpp: describe) -------------------------------------------------
TEST(HangRecordText, SaysWhatWasAwaited) {
  fk::HangRecord r{};
  r.valid = 1;
  r.rank = 1;
  r.block = 3;
  r.token = 2;
  r.awaited_slot = 0;
  r.flag = 1;
  r.counter = 8;
  r.what = fk::HangSite::lamport_poll;
  EXPECT_NE(fk::describe(r).find("polling the Lamport slot of peer 0"), std::string::npos)
      << fk::describe(r);
  r.what = fk::HangSite::cluster_exchange;
  const std::string exchange = fk::describe(r);
  EXPECT_NE(exchange.find("rank 1 block 3"), std::string::npos) << exchange;
  EXPECT_NE(exchange.find("partial sums of the other blocks of its cluster"), std::string::npos)
      << exchange;
  EXPECT_NE(exchange.find("counter/awaited 8"), std::string::npos) << exchange;  // blocks a row
  EXPECT_EQ(exchange.find("cluster (counter: blocks a row) 0"), std::string::npos)
      << exchange;  // no peer slot
}

#include "fusioncheck/kernels/comm_bootstrap.hpp"

namespace {
struct FakeComm {
  int gathers = 0, barriers = 0;
  int rank() const { return 1; }
  int size() const { return 2; }
  void all_gather(const void* send, void* recv, std::size_t bytes, const char*) {
    ++gathers;
    std::memcpy(static_cast<char*>(recv) + bytes, send, bytes);  // as rank 1 of 2
  }
  void barrier(const char*) { ++barriers; }
};
}  // namespace

TEST(CommBootstrap, ForwardsEveryCall) {
  FakeComm comm;
  fk::CommBootstrap<FakeComm> boot(comm);
  fk::Bootstrap& b = boot;
  EXPECT_EQ(b.rank(), 1);
  EXPECT_EQ(b.size(), 2);
  int mine = 7, all[2] = {0, 0};
  b.all_gather(&mine, all, sizeof mine, "test");
  b.barrier("test");
  EXPECT_EQ(all[1], 7);
  EXPECT_EQ(comm.gathers, 1);
  EXPECT_EQ(comm.barriers, 1);
}

// ---- peer access between the ranks' GPUs --------------------------------------------------
namespace {

fk::GpuUuid gpu(unsigned char id) {
  fk::GpuUuid u{};
  u[0] = id;
  return u;
}

}  // namespace

TEST(PeerAccess, RanksOnOneGpuNeedNone) {
  const auto never = [](const fk::GpuUuid&) -> std::optional<int> { return std::nullopt; };
  EXPECT_EQ(fk::peer_access_problem(0, 0, {gpu(1), gpu(1), gpu(1), gpu(1)}, never,
                                    [](int) { return false; }),
            "");
}

TEST(PeerAccess, ReachablePeersPass) {
  const auto ordinal = [](const fk::GpuUuid& u) -> std::optional<int> { return u[0]; };
  EXPECT_EQ(fk::peer_access_problem(1, 1, {gpu(0), gpu(1), gpu(2), gpu(3)}, ordinal,
                                    [](int) { return true; }),
            "");
}

TEST(PeerAccess, InvisiblePeerGpuIsNamed) {
  const auto ordinal = [](const fk::GpuUuid& u) -> std::optional<int> {
    return u[0] == 2 ? std::nullopt : std::optional<int>(u[0]);
  };
  const std::string why = fk::peer_access_problem(0, 0, {gpu(0), gpu(1), gpu(2), gpu(3)}, ordinal,
                                                  [](int) { return true; });
  EXPECT_NE(why.find("rank 2's GPU is not visible to rank 0"), std::string::npos) << why;
  EXPECT_NE(why.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << why;
}

TEST(PeerAccess, MissingP2PNamesThePair) {
  const auto ordinal = [](const fk::GpuUuid& u) -> std::optional<int> { return u[0]; };
  const std::string why = fk::peer_access_problem(1, 1, {gpu(0), gpu(1), gpu(2), gpu(3)}, ordinal,
                                                  [](int peer) { return peer != 3; });
  EXPECT_NE(why.find("GPU 1 (rank 1) has no peer access to GPU 3 (rank 3)"), std::string::npos)
      << why;
}

// ---- the automatic one-/two-shot choice (choice.hpp) --------------------------------------
TEST(AutomaticChoice, TwoRanksOnTwoGpusAlwaysOneShot) {
  // At 2 ranks both kernels move the same bytes; one-shot was faster at every measured size.
  for (std::uint64_t bytes = 16; bytes <= (std::uint64_t{1} << 40); bytes *= 2)
    EXPECT_FALSE(fk::twoshot_preferred(2, bytes, 1)) << bytes << " bytes per rank";
}

TEST(AutomaticChoice, TwoRanksSharingAGpuSwitchAtTwoMiB) {
  // Under MPS on one H200 two-shot is the faster from 2 MiB per rank (gpu bench).
  EXPECT_FALSE(fk::twoshot_preferred(2, (2u << 20) - 1, 2));
  EXPECT_TRUE(fk::twoshot_preferred(2, 2u << 20, 2));
  EXPECT_FALSE(fk::twoshot_preferred(2, 2u << 20, 1));  // the same size on two GPUs
}

TEST(AutomaticChoice, SwitchesAtTheCrossoverOfEachRankCount) {
  const struct {
    int ranks;
    std::uint64_t from;
  } crossover[] = {{4, 2u << 20}, {8, 256u << 10}, {16, 128u << 10}};
  for (const auto& c : crossover) {
    EXPECT_FALSE(fk::twoshot_preferred(c.ranks, c.from - 1, 1)) << c.ranks << " ranks";
    EXPECT_TRUE(fk::twoshot_preferred(c.ranks, c.from, 1)) << c.ranks << " ranks";
  }
}

// ---- the co-residency bound of the grids (choice.hpp) -------------------------------------
TEST(CoResidency, EveryRanksResidentKernelsFitTogether) {
  for (int sms = 1; sms <= 200; ++sms)
    for (int sharers : {1, 2, 4, 8, 16})
      for (int kernels : {1, fk::kResidentKernelsPerSharingRank}) {
        const int share = fk::co_resident_blocks(sms, sharers, kernels);
        EXPECT_GE(share, 1);
        // Whenever the SMs allow more than one block each, all of them fit at once.
        if (share > 1)
          EXPECT_LE(sharers * kernels * share, sms) << sms << " SMs, " << sharers << " sharers";
        // And no SM is left idle that a whole block per kernel could use.
        EXPECT_GT(sharers * kernels * (share + 1), sms) << sms << " SMs, " << sharers << " sharers";
      }
}

TEST(CoResidency, EightRanksOnOneH200LeaveRoomForThreeKernelsEach) {
  // 132 SMs: 5 blocks per kernel, 8 x 3 x 5 = 120 SMs at most. With room for two kernels
  // each (8 blocks, 128 SMs) 8 ranks under MPS hang: the grids are not co-resident.
  EXPECT_EQ(fk::kResidentKernelsPerSharingRank, 3);
  EXPECT_EQ(fk::co_resident_blocks(132, 8, fk::kResidentKernelsPerSharingRank), 5);
  EXPECT_EQ(fk::co_resident_blocks(132, 1, 1), 132);
  EXPECT_EQ(fk::co_resident_blocks(8, 16, 3), 1);
}

// ---- the one-shot cluster size (choice.hpp) -------------------------------------------------
fk::ClusterChoice long_rows(int tokens) {  // hidden 8192, bf16: 1024 vectors a row, 132 SMs
  fk::ClusterChoice in;
  in.row_vectors = 1024;
  in.hidden = 8192;
  in.tokens = tokens;
  in.max_blocks = 528;
  in.sm_share = 132;
  return in;
}
const auto any_cluster = [](int) { return true; };

TEST(ClusterChoice, AutomaticTakesTheLargestSplitThatFitsTheShare) {
  EXPECT_EQ(fk::choose_cluster(long_rows(1), any_cluster), 8);
  EXPECT_EQ(fk::choose_cluster(long_rows(16), any_cluster), 8);  // 128 blocks
  EXPECT_EQ(fk::choose_cluster(long_rows(17), any_cluster), 4);  // 136 > 132: four a row
  EXPECT_EQ(fk::choose_cluster(long_rows(33), any_cluster), 4);
  EXPECT_EQ(fk::choose_cluster(long_rows(34), any_cluster),
            1);  // 2 a row measured slower than none
  EXPECT_EQ(fk::choose_cluster(long_rows(66), any_cluster), 1);
  for (int tokens = 1; tokens <= 300; ++tokens) {
    const int c = fk::choose_cluster(long_rows(tokens), any_cluster);
    EXPECT_TRUE(c == 1 || tokens * c <= 132)
        << tokens << " tokens: " << c << " blocks a row overfill the share";
  }
}

TEST(ClusterChoice, ShortRowsTheDeviceAndTheModeDecide) {
  fk::ClusterChoice short_rows = long_rows(1);
  short_rows.row_vectors =
      512;  // hidden 4096: blocks of 128 vectors, as many rows as the share holds
  short_rows.hidden = 4096;
  EXPECT_EQ(fk::choose_cluster(short_rows, any_cluster), 4);
  short_rows.tokens = 33;
  EXPECT_EQ(fk::choose_cluster(short_rows, any_cluster), 4);
  short_rows.tokens = 34;
  EXPECT_EQ(fk::choose_cluster(short_rows, any_cluster), 1);
  short_rows.tokens = 1;
  short_rows.row_vectors = 384;  // hidden 3072: 4 blocks would hold 96 vectors
  short_rows.hidden = 3072;
  EXPECT_EQ(fk::choose_cluster(short_rows, any_cluster), 1);
  short_rows.row_vectors = 512;
  short_rows.hidden = 4096;
  short_rows.mode = fk::ClusterMode::force_cluster;
  EXPECT_EQ(fk::choose_cluster(short_rows, any_cluster), 8);  // 64 vectors a block
  fk::ClusterChoice forced = long_rows(128);
  forced.mode = fk::ClusterMode::force_cluster;
  EXPECT_EQ(fk::choose_cluster(forced, any_cluster), 8);  // forced: the share does not limit it
  forced.max_blocks = 4;
  EXPECT_EQ(fk::choose_cluster(forced, any_cluster), 4);
  forced.mode = fk::ClusterMode::force_no_cluster;
  EXPECT_EQ(fk::choose_cluster(forced, any_cluster), 1);
  // The device's answer: no cluster launch, or the occupancy query refusing 8 (or 8 and 4).
  EXPECT_EQ(fk::choose_cluster(long_rows(1), [](int) { return false; }), 1);
  EXPECT_EQ(fk::choose_cluster(long_rows(1), [](int c) { return c <= 4; }), 4);
  EXPECT_EQ(fk::choose_cluster(long_rows(1), [](int c) { return c <= 2; }), 1);
  forced = long_rows(1);
  forced.mode = fk::ClusterMode::force_cluster;
  EXPECT_EQ(fk::choose_cluster(forced, [](int c) { return c <= 2; }), 2);
  // NVFP4: every block holds whole 16-element groups. Hidden 8256 has 516 groups (4 divide
  // them, 8 do not), hidden 8208 has 513 (2 does not divide them).
  fk::ClusterChoice nvfp4 = long_rows(1);
  nvfp4.row_vectors = 1032;
  nvfp4.hidden = 8256;
  EXPECT_EQ(fk::choose_cluster(nvfp4, any_cluster), 8);
  nvfp4.nvfp4 = true;
  EXPECT_EQ(fk::choose_cluster(nvfp4, any_cluster), 4);
  nvfp4.mode = fk::ClusterMode::force_cluster;
  nvfp4.row_vectors = 1026;
  nvfp4.hidden = 8208;
  EXPECT_EQ(fk::choose_cluster(nvfp4, any_cluster), 1);
  nvfp4.nvfp4 = false;
  EXPECT_EQ(fk::choose_cluster(nvfp4, any_cluster), 2);
  // Blocks of fewer than 32 vectors are never made.
  fk::ClusterChoice narrow = long_rows(1);
  narrow.mode = fk::ClusterMode::force_cluster;
  narrow.row_vectors = 96;
  EXPECT_EQ(fk::choose_cluster(narrow, any_cluster), 2);  // 48 a block; 4 would make 24
}

TEST(AutomaticChoice, OnceTwoShotAlwaysTwoShotForLargerCalls) {
  for (int ranks : {2, 4, 8, 16})
    for (int on_device : {1, 2}) {
      bool seen_twoshot = false;
      for (std::uint64_t bytes = 16; bytes <= (std::uint64_t{1} << 34); bytes += bytes / 3 + 16) {
        const bool two = fk::twoshot_preferred(ranks, bytes, on_device);
        EXPECT_FALSE(seen_twoshot && !two)
            << ranks << " ranks: back to one-shot at " << bytes << " bytes";
        seen_twoshot |= two;
      }
      EXPECT_EQ(seen_twoshot, ranks > 2 || on_device > 1)
          << ranks << " ranks, " << on_device << " on a GPU";
    }
}

TEST(EpilogueScope, PlainServesTheUnquantisedPatternsWithFp32SumsOnly) {
  const fk::Pattern all[] = {fk::Pattern::allreduce, fk::Pattern::residual_rmsnorm,
                             fk::Pattern::fp8_static, fk::Pattern::fp8_dynamic, fk::Pattern::nvfp4};
  for (fk::Pattern pattern : all)
    for (bool fp32_sum : {true, false}) {
      const bool plain_ok = fp32_sum && (pattern == fk::Pattern::allreduce ||
                                         pattern == fk::Pattern::residual_rmsnorm);
      const std::string what =
          std::string(fk::pattern_name(pattern)) + (fp32_sum ? " fp32 sum" : " rounded sum");
      EXPECT_TRUE(fk::epilogue_serves(fk::EpilogueScope::full, pattern, fp32_sum)) << what;
      EXPECT_EQ(fk::epilogue_serves(fk::EpilogueScope::plain, pattern, fp32_sum), plain_ok) << what;
      // The launchers take the narrowest scope that serves the call, and it must serve it.
      const fk::EpilogueScope picked = fk::epilogue_scope_for(pattern, fp32_sum);
      EXPECT_EQ(picked, plain_ok ? fk::EpilogueScope::plain : fk::EpilogueScope::full) << what;
      EXPECT_TRUE(fk::epilogue_serves(picked, pattern, fp32_sum)) << what;
    }
}

TEST(EpilogueScope, DispatchTakesThePlainInstanceOnlyForPlainCalls) {
  struct Instance {
    fk::EpilogueScope scope;
  };
  const Instance plain{fk::EpilogueScope::plain}, full{fk::EpilogueScope::full};
  // Whichever comes first in a table, a plain call gets the plain instance...
  for (bool plain_first : {true, false}) {
    const Instance* a = plain_first ? &plain : &full;
    const Instance* b = plain_first ? &full : &plain;
    const Instance* got = fk::narrower_instance(
        fk::narrower_instance<Instance>(nullptr, *a, fk::Pattern::residual_rmsnorm, true), *b,
        fk::Pattern::residual_rmsnorm, true);
    EXPECT_EQ(got, &plain) << "plain first: " << plain_first;
    // ... and a call the plain instance cannot compute gets the full one.
    for (auto [pattern, fp32_sum] : {std::pair{fk::Pattern::fp8_dynamic, true},
                                     std::pair{fk::Pattern::residual_rmsnorm, false}}) {
      got = fk::narrower_instance(fk::narrower_instance<Instance>(nullptr, *a, pattern, fp32_sum),
                                  *b, pattern, fp32_sum);
      EXPECT_EQ(got, &full) << fk::pattern_name(pattern) << " fp32 sum " << fp32_sum
                            << " plain first: " << plain_first;
    }
  }
  // With only a plain instance (the wait-profile and unbounded-polls tables) nothing serves
  // a quantised call: the launcher then refuses it.
  EXPECT_EQ(fk::narrower_instance<Instance>(nullptr, plain, fk::Pattern::fp8_static, true),
            nullptr);
}
