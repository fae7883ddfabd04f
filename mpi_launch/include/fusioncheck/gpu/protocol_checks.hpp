#pragma once
// A synchronisation protocol as the case runner checks it: the state read back after calls,
// the invariants it names (docs/design.md numbers each protocol's), the words every rank's
// state shows in a hang diagnosis and across ranks. The case runner speaks only this
// interface, and takes it from the kernel (KernelUnderTest::protocol_checks). The Lamport
// protocol of our kernels and FlashInfer's Lamport kernels is LamportChecks
// (lamport_checks.hpp), made over any kernel that reads its Lamport state back; a kernel of
// another protocol (FlashInfer's PCIe allreduce: epochs, arrival counters, a +0 sentinel)
// returns its own.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fusioncheck/kernels/types.hpp"

namespace fusioncheck::gpu {

struct GpuCase;
struct CallSpec;

// What a protocol's per-rank check needs of the last call of a checked group, so that the
// case runner makes it while it makes the call's inputs.
enum class InputEvidence {
  none,
  own_input_on_gpu,  // this rank's input, as generated on the GPU, in memory the kernel never sees
  every_input_on_host,  // every rank's whole input, on the host
};

// The last call's inputs as InputEvidence asked for them (the rest empty).
struct CallEvidence {
  std::uint64_t call_index = 0;
  const std::uint16_t* own_input_on_gpu = nullptr;
  std::size_t own_input_elems = 0;
  std::vector<std::span<const std::uint16_t>> every_input;  // one per rank
};

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
  // What check_rank needs of a group's last call.
  virtual InputEvidence evidence_needed(const CallSpec& last) const {
    (void)last;
    return InputEvidence::none;
  }
  // After calls [first, first + count) of the case finished on this rank (no hang): this rank's
  // violations, one line each. The state read becomes the start of the next calls.
  virtual std::vector<std::string> check_rank(const GpuCase& c, int first, int count,
                                              const CallEvidence& last) = 0;
  // This rank's words, as read by the last start_case / check_rank / read_words.
  virtual ProtocolWords words() const = 0;
  // Reads the state anew (after a hang, for the diagnosis).
  virtual void read_words() = 0;
  // Violations only visible across ranks (every rank computes the same).
  virtual std::vector<std::string> check_across_ranks(
      const std::vector<ProtocolWords>& all) const = 0;
  // One rank's words, for a hang diagnosis: "epoch 1, arrivals 0, ...".
  virtual std::string describe(const ProtocolWords& words) const = 0;
  // What a hang record says (the site the kernel or the host's bound wrote, what it awaited);
  // a protocol whose sites the kernels layer does not name describes its own.
  virtual std::string describe_hang(const kernels::HangRecord& record) const {
    return kernels::describe(record);
  }
};

}  // namespace fusioncheck::gpu
