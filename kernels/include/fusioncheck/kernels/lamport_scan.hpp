#pragma once
// Invariants 4-6 (docs/design.md) over one rank's three Lamport buffers after a one-shot call,
// reduced to counts and first offenders. Two scanners produce the same LamportScan: the
// host one over buffers copied back (ControlState::lamport), and the device one
// (DeviceLamportScanner, CUDA builds) that reads them where they are, so that only the
// counts cross PCIe. lamport_violations turns either into the invariant lines.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fusioncheck/kernels/types.hpp"
#include "fusioncheck/protocol/protocol.hpp"

namespace fusioncheck::kernels {

struct ControlState;
class Workspace;

// Which slots a scan compares, and against what.
enum class SlotScan {
  // Slot by slot, this rank's data buffer against every rank's input (`inputs`: one per rank).
  every_slot_here,
  // Slot [rank] of every rank's data buffer against this rank's input (`inputs`: this rank's
  // alone; `ranks` slots per buffer). Each rank checks the slot it pushed everywhere, so no
  // rank needs a peer's whole input. The device scanner only (it reads the peers' buffers).
  my_slot_everywhere,
};

// What to compare: the data buffer of the call (its flag before the call) holds one slot
// per rank with that rank's canonicalised input; everything else must be the sentinel.
struct LamportScanRequest {
  int data_buffer = 0;
  std::vector<std::span<const std::uint16_t>> inputs;  // the call's input(s) as T bits (SlotScan)
  DType dtype = DType::bf16;
  SlotScan slots = SlotScan::every_slot_here;
  int rank = 0;   // my_slot_everywhere: this rank
  int ranks = 0;  // my_slot_everywhere: the ranks (slots per buffer)
  // my_slot_everywhere, instead of `inputs`: this rank's input already in GPU memory
  // (device_input_elems T elements, on the scanned workspace's device), compared where it
  // is. The device scanner only.
  const std::uint16_t* device_input = nullptr;
  std::uint64_t device_input_elems = 0;
};

struct LamportBufferScan {  // elements that are not the sentinel (data buffer: past N * size)
  std::uint64_t not_sentinel = 0;
  std::uint64_t first_index = 0;  // element index within the buffer
  std::uint32_t first_value = 0;
  std::uint64_t narrow = 0;  // fp32 elements holding the 16-bit sentinel pair 0x80008000
  bool operator==(const LamportBufferScan&) const = default;
};

struct LamportSlotScan {  // elements of a slot that differ from the rank's pushed input
  std::uint64_t mismatches = 0;
  std::uint64_t first_index = 0;     // element index within the slot
  std::uint32_t first_value = 0;     // what the buffer holds there
  std::uint32_t first_expected = 0;  // what the rank pushed there (pushed_lamport_bits)
  bool operator==(const LamportSlotScan&) const = default;
};

struct LamportScan {
  SlotScan slot_scan = SlotScan::every_slot_here;
  int rank = 0;  // my_slot_everywhere: the slot compared
  int data_buffer = 0;
  int elem_bytes = 2;
  std::uint64_t slot_elems = 0;  // the call's tokens * hidden
  bool slots_fit = true;  // N * slot_elems fits in a buffer (else the slots are not compared)
  std::array<LamportBufferScan, protocol::kLamportBuffers> buffers{};
  // One per rank. every_slot_here: slot i of this rank's data buffer; my_slot_everywhere:
  // slot `rank` of rank i's data buffer.
  std::vector<LamportSlotScan> slots;
  bool operator==(const LamportScan&) const = default;
};

// A scan with nothing found yet, shaped for the request: the slot length, whether the slots
// fit in a buffer of per_buffer elements, one slot per rank. Throws std::invalid_argument
// when the request cannot be scanned: data_buffer outside [0, kLamportBuffers), more than
// kMaxRanks inputs, inputs of different lengths, a device_input outside my_slot_everywhere
// or beside `inputs`, or (my_slot_everywhere) not exactly one input (host or device), ranks
// outside [1, kMaxRanks] or rank outside [0, ranks).
LamportScan empty_lamport_scan(const LamportScanRequest& request, int elem_bytes,
                               std::uint64_t per_buffer);

// Over the Lamport bytes of a ControlState read back with the buffers (throws
// std::invalid_argument for a state read without them, a bad request, or
// my_slot_everywhere, which needs the peers' buffers, or a device_input).
LamportScan scan_lamport_on_host(const ControlState& after, const LamportScanRequest& request);

// The "invariant 4/5/6: ..." lines of rank r's scan (empty when the buffers are as they must
// be). A my_slot_everywhere scan names the rank whose buffer holds the wrong slot.
std::vector<std::string> lamport_violations(int r, const LamportScan& scan);

// The Lamport element a rank pushes for an input element (T bits): -0 becomes +0; with an
// fp32 Lamport buffer the value is widened first. Returned in the low elem_bytes bytes.
std::uint32_t pushed_lamport_bits(std::uint16_t input_bits, DType dtype, int elem_bytes);

// Where a rank's three Lamport buffers lie in its GPU's memory (comm_size bytes each, one
// after the other), and, for my_slot_everywhere, every rank's (mapped here; [rank] is own).
// Our Workspace and other projects' workspaces alike.
struct LamportBuffersOnDevice {
  const void* own = nullptr;
  std::uint64_t comm_size = 0;
  int elem_bytes = 2;
  std::array<const void*, protocol::kMaxRanks> ranks{};
};

// Scans a workspace's Lamport buffers on its GPU (defined in fusioncheck_kernels, CUDA
// builds only). Keeps device and pinned scratch between scans; synchronises the device.
// Errors throw CudaError (types.hpp).
class DeviceLamportScanner {
 public:
  DeviceLamportScanner();
  ~DeviceLamportScanner();
  DeviceLamportScanner(const DeviceLamportScanner&) = delete;
  DeviceLamportScanner& operator=(const DeviceLamportScanner&) = delete;

  LamportScan scan(const Workspace& workspace, const LamportScanRequest& request);
  // std::invalid_argument for buffers missing where the request reads them.
  LamportScan scan(const LamportBuffersOnDevice& buffers, const LamportScanRequest& request);

 private:
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace fusioncheck::kernels
