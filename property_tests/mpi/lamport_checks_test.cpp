// The Lamport protocol as a ProtocolChecks (lamport_checks.hpp), over a kernel stand-in whose
// state read-back the test sets: what a correct call leaves passes, and each broken part of the
// state is named by its invariant.
#include "fusioncheck/gpu/lamport_checks.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "fusioncheck/gpu/gpu_case.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = fusioncheck::kernels;

constexpr std::uint64_t kCommSize = 1 << 20;

// A kernel whose state the test writes: `before` is what a case starts from, `after` what a
// call leaves; the Lamport scan reports `slot_mismatches` in slot 1 and records its request.
class StateStandIn final : public KernelUnderTest {
 public:
  std::string name() const override { return "stand-in"; }
  void prepare(std::uint64_t, bool) override {}
  void launch(const k::FusedParams&, bool, cudaStream_t) override {}
  k::ControlState read_state(k::LamportCopy) override { return after; }
  protocol::ControlBlock read_control() override { return before.control; }
  k::LamportScan scan_lamport(const k::LamportScanRequest& request) override {
    requests.push_back(request);
    k::LamportScan scan = k::empty_lamport_scan(request, 2, kCommSize / 2);
    if (slot_mismatches > 0 && scan.slots.size() > 1) {
      scan.slots[1].mismatches = slot_mismatches;
      scan.slots[1].first_value = 0x8000;
    }
    return scan;
  }
  bool scans_my_slot_everywhere() const override { return my_slot_everywhere; }
  k::HangRecord hang_record() override { return {}; }
  void clear_hang_record() override {}
  void reset() override {}

  k::ControlState before = state(0, 0, 0);
  k::ControlState after = state(1, 0, 0);
  std::uint64_t slot_mismatches = 0;
  bool my_slot_everywhere = false;
  std::vector<k::LamportScanRequest> requests;

  static k::ControlState state(std::uint32_t flag, std::uint32_t two_shot_flag,
                               std::uint64_t clear_size) {
    k::ControlState s;
    s.control = protocol::initial_control_block(kCommSize);
    s.control.flag = flag;
    s.control.two_shot_flag = two_shot_flag;
    s.control.clear_size = clear_size;
    s.buffer_guards_intact = true;
    s.comm_size = kCommSize;
    s.ranks = 2;
    return s;
  }
};

GpuCase one_shot_case(int calls) {
  GpuCase c;
  c.ranks = 2;
  c.hidden = 256;
  for (int i = 0; i < calls; ++i) {
    CallSpec spec;
    spec.tokens = 3;
    c.calls.push_back(spec);
  }
  return c;
}

// Every rank's input of the call, on the host, as the case runner hands it over.
struct HostInputs {
  std::vector<std::uint16_t> a = std::vector<std::uint16_t>(3 * 256, 0x3f80);
  std::vector<std::uint16_t> b = std::vector<std::uint16_t>(3 * 256, 0x4000);
  CallEvidence evidence() const {
    CallEvidence e;
    e.every_input = {a, b};
    return e;
  }
};

bool names(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& line : lines)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

TEST(LamportChecks, ACallThatAdvancedTheFlagAndLeftItsSlotsIsClean) {
  StateStandIn kernel;
  kernel.after = StateStandIn::state(1, 0, 2 * 3 * 256);
  LamportChecks checks(kernel, 0);
  checks.start_case();
  const HostInputs inputs;
  EXPECT_EQ(checks.check_rank(one_shot_case(1), 0, 1, inputs.evidence()),
            std::vector<std::string>{});
  ASSERT_EQ(kernel.requests.size(), 1u);
  EXPECT_EQ(kernel.requests[0].data_buffer, 0);  // the buffer of the flag before the call
  EXPECT_EQ(kernel.requests[0].inputs.size(), 2u);
}

// Negative controls: each broken part of the state is named by its invariant.
TEST(LamportChecks, AFlagThatDidNotAdvanceIsInvariant2) {
  StateStandIn kernel;
  kernel.after = StateStandIn::state(0, 0, 2 * 3 * 256);
  LamportChecks checks(kernel, 1);
  checks.start_case();
  const auto lines = checks.check_rank(one_shot_case(1), 0, 1, HostInputs().evidence());
  EXPECT_TRUE(names(lines, "invariant 2: rank 1 flag went 0 -> 0, expected 1")) << lines.size();
}

TEST(LamportChecks, AWrongClearSizeAndAnOverwrittenGuardAreNamed) {
  StateStandIn kernel;
  kernel.after = StateStandIn::state(1, 0, 7);
  kernel.after.buffer_guards_intact = false;
  LamportChecks checks(kernel, 0);
  checks.start_case();
  const auto lines = checks.check_rank(one_shot_case(1), 0, 1, HostInputs().evidence());
  EXPECT_TRUE(names(lines, "clear_size is 7"));
  EXPECT_TRUE(names(lines, "invariant 11"));
}

TEST(LamportChecks, ASlotThatDiffersFromWhatItsRankPushedIsReported) {
  StateStandIn kernel;
  kernel.after = StateStandIn::state(1, 0, 2 * 3 * 256);
  kernel.slot_mismatches = 5;
  LamportChecks checks(kernel, 0);
  checks.start_case();
  const auto lines = checks.check_rank(one_shot_case(1), 0, 1, HostInputs().evidence());
  EXPECT_TRUE(names(lines, "invariant")) << "a slot mismatch went unreported";
  EXPECT_FALSE(lines.empty());
}

// Calls back to back: the last call's buffer is the one after the earlier calls' flags, and
// the state read becomes the start of the next group.
TEST(LamportChecks, AGroupOfCallsScansTheLastCallsBufferAndCarriesTheState) {
  StateStandIn kernel;
  kernel.after = StateStandIn::state(2, 0, 2 * 3 * 256);
  LamportChecks checks(kernel, 0);
  checks.start_case();
  EXPECT_EQ(checks.check_rank(one_shot_case(2), 0, 2, HostInputs().evidence()),
            std::vector<std::string>{});
  EXPECT_EQ(kernel.requests.back().data_buffer, 1);
  kernel.after = StateStandIn::state(0, 0, 2 * 3 * 256);  // 2 -> 0: one more call
  EXPECT_EQ(checks.check_rank(one_shot_case(1), 0, 1, HostInputs().evidence()),
            std::vector<std::string>{});
  EXPECT_EQ(kernel.requests.back().data_buffer, 2);
}

TEST(LamportChecks, ATwoShotCallIsCheckedByItsBarrierFlagAndNeedsNoInputs) {
  StateStandIn kernel;
  GpuCase c = one_shot_case(1);
  c.calls[0].twoshot = true;
  LamportChecks checks(kernel, 0);
  EXPECT_EQ(checks.evidence_needed(c.calls[0]), InputEvidence::none);
  kernel.after = StateStandIn::state(0, 1, 0);
  checks.start_case();
  EXPECT_EQ(checks.check_rank(c, 0, 1, CallEvidence{}), std::vector<std::string>{});
  kernel.after = StateStandIn::state(0, 1, 0);  // the flag stayed where the last call left it
  const auto lines = checks.check_rank(c, 0, 1, CallEvidence{});
  EXPECT_TRUE(names(lines, "invariant 2: rank 0 two-shot flag went 1 -> 1, expected 2"));
  EXPECT_TRUE(kernel.requests.empty());
}

TEST(LamportChecks, TheEvidenceFollowsHowTheKernelScans) {
  StateStandIn kernel;
  LamportChecks checks(kernel, 0);
  const CallSpec one_shot;
  EXPECT_EQ(checks.evidence_needed(one_shot), InputEvidence::every_input_on_host);
  kernel.my_slot_everywhere = true;
  EXPECT_EQ(checks.evidence_needed(one_shot), InputEvidence::own_input_on_gpu);
  // Without the input it needs, the check refuses rather than passing.
  checks.start_case();
  kernel.after = StateStandIn::state(1, 0, 2 * 3 * 256);
  EXPECT_THROW(checks.check_rank(one_shot_case(1), 0, 1, CallEvidence{}), std::logic_error);
  kernel.my_slot_everywhere = false;
  checks.start_case();
  EXPECT_THROW(checks.check_rank(one_shot_case(1), 0, 1, CallEvidence{}), std::logic_error);
}

TEST(LamportChecks, RanksAgreeOnTheirControlBlocksOrInvariant3NamesTheOne) {
  StateStandIn kernel;
  LamportChecks checks(kernel, 0);
  kernel.after = StateStandIn::state(1, 0, 1536);
  checks.read_words();
  const ProtocolWords rank0 = checks.words();
  EXPECT_EQ(checks.check_across_ranks({rank0, rank0}), std::vector<std::string>{});
  kernel.after = StateStandIn::state(2, 0, 1536);
  checks.read_words();
  const ProtocolWords rank1 = checks.words();
  const auto lines = checks.check_across_ranks({rank0, rank1});
  EXPECT_TRUE(names(lines, "invariant 3: control state of rank 1"));
  EXPECT_EQ(checks.describe(rank1), "flag 2, counter 0, clear_size 1536, two-shot flag 0");
}

// The seam the case runner takes a kernel's protocol through: a kernel that keeps the Lamport
// protocol gets LamportChecks (made once, for its rank), and one of another protocol returns its
// own, which also describes its hangs.
class OtherProtocol final : public ProtocolChecks {
 public:
  std::string protocol_name() const override { return "test-protocol"; }
  void start_case() override {}
  std::vector<std::string> check_rank(const GpuCase&, int, int, const CallEvidence&) override {
    return {"invariant T1: the test protocol's violation"};
  }
  ProtocolWords words() const override { return {}; }
  void read_words() override {}
  std::vector<std::string> check_across_ranks(const std::vector<ProtocolWords>&) const override {
    return {};
  }
  std::string describe(const ProtocolWords&) const override { return "test words"; }
  std::string describe_hang(const k::HangRecord& record) const override {
    return "test protocol stuck at block " + std::to_string(record.block);
  }
};

class OtherProtocolKernel final : public KernelUnderTest {
 public:
  std::string name() const override { return "other-protocol stand-in"; }
  void prepare(std::uint64_t, bool) override {}
  void launch(const k::FusedParams&, bool, cudaStream_t) override {}
  k::ControlState read_state(k::LamportCopy) override {
    throw std::logic_error("a kernel of another protocol has no Lamport state");
  }
  k::HangRecord hang_record() override { return {}; }
  void clear_hang_record() override {}
  void reset() override {}
  ProtocolChecks& protocol_checks(int) override { return checks; }
  OtherProtocol checks;
};

TEST(ProtocolSeam, ALamportKernelGetsLamportChecksMadeOnce) {
  StateStandIn kernel;
  ProtocolChecks& first = kernel.protocol_checks(1);
  EXPECT_EQ(first.protocol_name(), "lamport");
  EXPECT_EQ(&first, &kernel.protocol_checks(1));
  EXPECT_NE(dynamic_cast<LamportChecks*>(&first), nullptr);
  k::HangRecord hang{};
  hang.valid = 1;
  hang.what = k::HangSite::lamport_poll;
  EXPECT_EQ(first.describe_hang(hang), k::describe(hang));
}

TEST(ProtocolSeam, AKernelOfAnotherProtocolReturnsItsOwn) {
  OtherProtocolKernel kernel;
  ProtocolChecks& checks = kernel.protocol_checks(0);
  EXPECT_EQ(checks.protocol_name(), "test-protocol");
  EXPECT_EQ(checks.check_rank(one_shot_case(1), 0, 1, {}).front(),
            "invariant T1: the test protocol's violation");
  k::HangRecord hang{};
  hang.block = 7;
  EXPECT_EQ(checks.describe_hang(hang), "test protocol stuck at block 7");
}

}  // namespace
}  // namespace fusioncheck::gpu
