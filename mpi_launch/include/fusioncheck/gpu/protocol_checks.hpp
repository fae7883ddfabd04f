#pragma once
// A synchronisation protocol other than the one-shot Lamport one, as the case runner checks it:
// the kernel under test brings it (KernelUnderTest::own_protocol). The Lamport protocol's
// invariants (docs/design.md) are checked by the case runner itself; a kernel of another
// protocol (FlashInfer's PCIe allreduce: epochs, arrival counters, a +0 sentinel) reads its own
// state back and names what breaks its protocol's invariants, which docs/design.md numbers too.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace fusioncheck::gpu {

struct GpuCase;

// The words of one rank's protocol state that travel to every rank after calls: compared
// across ranks, printed in a hang diagnosis. Their meaning is the protocol's.
struct ProtocolWords {
  std::array<std::uint64_t, 6> words{};
};

class ProtocolChecks {
 public:
  virtual ~ProtocolChecks() = default;
  // The protocol's name in reports and `gpu kernels` ("pcie-sentinel", ...).
  virtual std::string protocol_name() const = 0;
  // Before a case's first call: reads the state the case starts from.
  virtual void start_case() = 0;
  // After calls [first, first + count) of the case finished on this rank (no hang): this rank's
  // violations, one line each. The state read becomes the start of the next calls.
  virtual std::vector<std::string> check_rank(const GpuCase& c, int first, int count) = 0;
  // This rank's words, as read by the last start_case / check_rank / read_words.
  virtual ProtocolWords words() const = 0;
  // Reads the state anew (after a hang, for the diagnosis).
  virtual void read_words() = 0;
  // Violations only visible across ranks (every rank computes the same).
  virtual std::vector<std::string> check_across_ranks(
      const std::vector<ProtocolWords>& all) const = 0;
  // One rank's words, for a hang diagnosis: "epoch 1, arrivals 0, ...".
  virtual std::string describe(const ProtocolWords& words) const = 0;
};

}  // namespace fusioncheck::gpu
