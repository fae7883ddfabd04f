#pragma once
// The one-shot Lamport protocol with its two-shot barrier (docs/design.md, invariants 1-8), as
// a ProtocolChecks over any kernel that reads its state back as kernels::ControlState (our
// kernels, FlashInfer's fusion, MoE and legacy Lamport kernels): the control block's flags,
// counters and clear size, the guard words, and the Lamport buffers' slots.
#include <string>
#include <vector>

#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/gpu/protocol_checks.hpp"
#include "fusioncheck/kernels/workspace.hpp"

namespace fusioncheck::gpu {

class LamportChecks final : public ProtocolChecks {
 public:
  LamportChecks(KernelUnderTest& kernel, int rank) : kernel_(kernel), rank_(rank) {}
  std::string protocol_name() const override { return "lamport"; }
  void start_case() override;
  InputEvidence evidence_needed(const CallSpec& last) const override;
  std::vector<std::string> check_rank(const GpuCase& c, int first, int count,
                                      const CallEvidence& last) override;
  ProtocolWords words() const override;
  void read_words() override;
  std::vector<std::string> check_across_ranks(const std::vector<ProtocolWords>& all) const override;
  std::string describe(const ProtocolWords& words) const override;

 private:
  KernelUnderTest& kernel_;
  int rank_;
  kernels::ControlState state_;  // read after the last calls checked (or before the first)
};

}  // namespace fusioncheck::gpu
