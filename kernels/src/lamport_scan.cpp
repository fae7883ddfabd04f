// The host Lamport scanner and the invariant 4-6 lines (lamport_scan.hpp).
#include "fusioncheck/kernels/lamport_scan.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "fusioncheck/kernels/workspace.hpp"

namespace fusioncheck::kernels {
namespace {

float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1F;
  const std::uint32_t man = h & 0x3FFu;
  float mag;
  if (exp == 0) mag = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) mag = man == 0 ? INFINITY : NAN;
  else mag = std::ldexp(static_cast<float>(man | 0x400u), exp - 25);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(mag) | sign);
}

// Fixed-size copies (the compiler makes them plain loads): a copy of run-time size per
// element made the scan of a few MiB take milliseconds.
std::uint32_t read_elem(const std::vector<std::uint8_t>& bytes, std::uint64_t index,
                        int elem_bytes) {
  if (elem_bytes == 4) {
    std::uint32_t v;
    std::memcpy(&v, &bytes[index * 4], 4);
    return v;
  }
  std::uint16_t v;
  std::memcpy(&v, &bytes[index * 2], 2);
  return v;
}

bool is_sentinel(std::uint32_t bits, int elem_bytes) {
  return elem_bytes == 4 ? protocol::is_neg_zero_bits32(bits)
                         : protocol::is_neg_zero_bits16(static_cast<std::uint16_t>(bits));
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// Elements [first, per_buffer) of buffer b must be the sentinel.
LamportBufferScan scan_sentinel(const ControlState& s, int b, std::uint64_t first) {
  const std::uint64_t per_buffer = s.comm_size / s.elem_bytes;
  LamportBufferScan out;
  for (std::uint64_t i = first; i < per_buffer; ++i) {
    const std::uint32_t v = read_elem(s.lamport, b * per_buffer + i, s.elem_bytes);
    if (is_sentinel(v, s.elem_bytes)) continue;
    if (s.elem_bytes == 4 && v == 0x80008000u) ++out.narrow;
    if (out.not_sentinel++ == 0) {
      out.first_index = i;
      out.first_value = v;
    }
  }
  return out;
}

void validate_lamport_request(const LamportScanRequest& request) {
  if (request.data_buffer < 0 || request.data_buffer >= protocol::kLamportBuffers)
    throw std::invalid_argument("Lamport scan: data buffer " + std::to_string(request.data_buffer) +
                                " is not one of the " + std::to_string(protocol::kLamportBuffers));
  if (request.inputs.size() > static_cast<std::size_t>(protocol::kMaxRanks))
    throw std::invalid_argument("Lamport scan: more inputs than kMaxRanks");
  for (const auto& input : request.inputs)
    if (input.size() != request.inputs.front().size())
      throw std::invalid_argument("Lamport scan: the ranks' inputs differ in length");
  const bool on_device = request.device_input != nullptr;
  if (request.slots != SlotScan::my_slot_everywhere) {
    if (on_device)
      throw std::invalid_argument(
          "Lamport scan: a device input is for a scan of my slot everywhere");
    return;
  }
  const std::size_t inputs = request.inputs.size() + (on_device ? 1 : 0);
  if (inputs != 1)
    throw std::invalid_argument("Lamport scan of my slot everywhere: " + std::to_string(inputs) +
                                " inputs, expected this rank's alone");
  if (request.ranks < 1 || request.ranks > protocol::kMaxRanks || request.rank < 0 ||
      request.rank >= request.ranks)
    throw std::invalid_argument("Lamport scan of my slot everywhere: rank " +
                                std::to_string(request.rank) + " of " +
                                std::to_string(request.ranks) + " ranks");
}

}  // namespace

std::uint32_t pushed_lamport_bits(std::uint16_t input_bits, DType dtype, int elem_bytes) {
  if (elem_bytes == 2) return protocol::canonicalize_bits16(input_bits);
  const float f = dtype == DType::bf16 ? std::bit_cast<float>(std::uint32_t{input_bits} << 16)
                                       : half_bits_to_float(input_bits);
  return protocol::canonicalize_bits32(std::bit_cast<std::uint32_t>(f));
}

LamportScan empty_lamport_scan(const LamportScanRequest& request, int elem_bytes,
                               std::uint64_t per_buffer) {
  validate_lamport_request(request);
  const bool mine = request.slots == SlotScan::my_slot_everywhere;
  const std::size_t n = mine ? static_cast<std::size_t>(request.ranks) : request.inputs.size();
  LamportScan scan;
  scan.slot_scan = request.slots;
  scan.rank = mine ? request.rank : 0;
  scan.data_buffer = request.data_buffer;
  scan.elem_bytes = elem_bytes;
  scan.slot_elems = request.device_input != nullptr ? request.device_input_elems
                    : request.inputs.empty()        ? 0
                                                    : request.inputs[0].size();
  scan.slots_fit = n * scan.slot_elems <= per_buffer;
  scan.slots.resize(n);
  return scan;
}

LamportScan scan_lamport_on_host(const ControlState& a, const LamportScanRequest& request) {
  if (a.lamport.size() != protocol::kLamportBuffers * a.comm_size)
    throw std::invalid_argument(
        "Lamport scan on the host: the state was read without its Lamport buffers");
  if (request.slots == SlotScan::my_slot_everywhere)
    throw std::invalid_argument(
        "Lamport scan on the host: my_slot_everywhere needs the peers' buffers (device scanner)");
  if (request.device_input != nullptr)
    throw std::invalid_argument(
        "Lamport scan on the host: the input is in GPU memory (device scanner)");
  const int n = static_cast<int>(request.inputs.size());
  const std::uint64_t per_buffer = a.comm_size / a.elem_bytes;
  LamportScan scan = empty_lamport_scan(request, a.elem_bytes, per_buffer);
  for (int src = 0; src < n && scan.slots_fit; ++src) {
    LamportSlotScan& slot = scan.slots[static_cast<std::size_t>(src)];
    const auto input = request.inputs[static_cast<std::size_t>(src)];
    for (std::uint64_t i = 0; i < scan.slot_elems; ++i) {
      const std::uint32_t want = pushed_lamport_bits(input[i], request.dtype, a.elem_bytes);
      const std::uint32_t got = read_elem(
          a.lamport, request.data_buffer * per_buffer + src * scan.slot_elems + i, a.elem_bytes);
      if (got != want && slot.mismatches++ == 0) {
        slot.first_index = i;
        slot.first_value = got;
        slot.first_expected = want;
      }
    }
  }
  for (int b = 0; b < protocol::kLamportBuffers; ++b)
    scan.buffers[b] = scan_sentinel(
        a, b, b == request.data_buffer ? std::min(per_buffer, n * scan.slot_elems) : 0);
  return scan;
}

std::vector<std::string> lamport_violations(int r, const LamportScan& scan) {
  std::vector<std::string> out;
  const std::string rank = std::to_string(r);
  // Invariant 4: the data buffer holds every rank's canonicalised input, then -0.
  // In a my_slot_everywhere scan, slots[i] is slot `scan.rank` of rank i's buffer.
  const bool mine = scan.slot_scan == SlotScan::my_slot_everywhere;
  for (std::size_t i = 0; i < scan.slots.size(); ++i) {
    const LamportSlotScan& slot = scan.slots[i];
    if (slot.mismatches == 0) continue;
    const std::size_t owner = mine ? i : static_cast<std::size_t>(r);
    const std::size_t pusher = mine ? static_cast<std::size_t>(scan.rank) : i;
    out.push_back("invariant 4: rank " + std::to_string(owner) + " buffer " +
                  std::to_string(scan.data_buffer) + " slot " + std::to_string(pusher) + ": " +
                  std::to_string(slot.mismatches) + " elements differ from rank " +
                  std::to_string(pusher) + "'s input, first at " +
                  std::to_string(slot.first_index) + ": " + hex(slot.first_value) + " instead of " +
                  hex(slot.first_expected));
  }
  // Invariant 4 past N * size, and invariant 5 (the other two buffers): all -0; invariant 6:
  // no fp32 element holds the 16-bit sentinel pair.
  for (int b = 0; b < protocol::kLamportBuffers; ++b) {
    const LamportBufferScan& buf = scan.buffers[b];
    if (buf.narrow > 0)
      out.push_back("invariant 6: rank " + rank + " buffer " + std::to_string(b) + ": " +
                    std::to_string(buf.narrow) +
                    " fp32 elements hold the 16-bit sentinel pattern 0x80008000");
    if (buf.not_sentinel > 0)
      out.push_back(
          std::string(b == scan.data_buffer ? "invariant 4 (past N*size)" : "invariant 5") +
          ": rank " + rank + " buffer " + std::to_string(b) + ": " +
          std::to_string(buf.not_sentinel) + " elements are not -0, first at element " +
          std::to_string(buf.first_index) + " = " + hex(buf.first_value));
  }
  return out;
}

}  // namespace fusioncheck::kernels
