// Invariant checks on read-back protocol state (invariants.hpp).
#include "fusioncheck/kernels/invariants.hpp"

#include <bit>
#include <cmath>
#include <cstring>

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
std::uint32_t read_elem(const std::vector<std::uint8_t>& bytes, std::uint64_t index, int elem_bytes) {
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

// Invariants 5 and 6 over [first, last) elements of buffer `b`: all sentinel.
void check_all_sentinel(const ControlState& s, int rank, int b, std::uint64_t first, std::vector<std::string>& out,
                        const char* invariant) {
  const std::uint64_t per_buffer = s.comm_size / s.elem_bytes;
  std::uint64_t bad = 0, first_bad = 0, narrow = 0;
  std::uint32_t first_value = 0;
  for (std::uint64_t i = first; i < per_buffer; ++i) {
    const std::uint32_t v = read_elem(s.lamport, b * per_buffer + i, s.elem_bytes);
    if (is_sentinel(v, s.elem_bytes)) continue;
    if (s.elem_bytes == 4 && v == 0x80008000u) ++narrow;
    if (bad++ == 0) {
      first_bad = i;
      first_value = v;
    }
  }
  if (narrow > 0)
    out.push_back("invariant 6: rank " + std::to_string(rank) + " buffer " + std::to_string(b) + ": " +
                  std::to_string(narrow) + " fp32 elements hold the 16-bit sentinel pattern 0x80008000");
  if (bad > 0)
    out.push_back(std::string(invariant) + ": rank " + std::to_string(rank) + " buffer " + std::to_string(b) + ": " +
                  std::to_string(bad) + " elements are not -0, first at element " + std::to_string(first_bad) +
                  " = " + hex(first_value));
}

void check_guards(int r, const ControlState& after, std::vector<std::string>& out) {
  if (!protocol::guards_intact(after.control))
    out.push_back("invariant 11: rank " + std::to_string(r) + " control block guard words overwritten");
  if (!after.buffer_guards_intact)
    out.push_back("invariant 11: rank " + std::to_string(r) + " guard words around the shared buffers overwritten");
}

void check_same_control(const std::vector<protocol::ControlBlock>& blocks, std::vector<std::string>& out) {
  for (std::size_t r = 1; r < blocks.size(); ++r) {
    const auto& a = blocks[0];
    const auto& b = blocks[r];
    if (a.flag != b.flag || a.clear_size != b.clear_size || a.arrival_counter != b.arrival_counter ||
        a.two_shot_flag != b.two_shot_flag || a.two_shot_counter != b.two_shot_counter || a.comm_size != b.comm_size)
      out.push_back("invariant 3: control state of rank " + std::to_string(r) + " (flag " + std::to_string(b.flag) +
                    ", clear_size " + std::to_string(b.clear_size) + ", counter " + std::to_string(b.arrival_counter) +
                    ", two-shot flag " + std::to_string(b.two_shot_flag) + ") differs from rank 0 (flag " +
                    std::to_string(a.flag) + ", clear_size " + std::to_string(a.clear_size) + ", counter " +
                    std::to_string(a.arrival_counter) + ", two-shot flag " + std::to_string(a.two_shot_flag) + ")");
  }
}

}  // namespace

std::uint32_t pushed_lamport_bits(std::uint16_t input_bits, DType dtype, int elem_bytes) {
  if (elem_bytes == 2) return protocol::canonicalize_bits16(input_bits);
  const float f = dtype == DType::bf16 ? std::bit_cast<float>(std::uint32_t{input_bits} << 16)
                                       : half_bits_to_float(input_bits);
  return protocol::canonicalize_bits32(std::bit_cast<std::uint32_t>(f));
}

std::vector<std::string> check_oneshot_rank_invariants(int r, const ControlState& b, const ControlState& a,
                                                       const std::vector<std::vector<std::uint16_t>>& inputs,
                                                       DType dtype) {
  std::vector<std::string> out;
  const int n = static_cast<int>(inputs.size());
  check_guards(r, a, out);
  const std::uint64_t elems = inputs[r].size();
  if (a.control.arrival_counter != 0)
    out.push_back("invariant 1: rank " + std::to_string(r) + " arrival counter is " +
                  std::to_string(a.control.arrival_counter) + ", not 0");
  const std::uint32_t expected_flag = (b.control.flag + 1) % protocol::kLamportBuffers;
  if (a.control.flag != expected_flag)
    out.push_back("invariant 2: rank " + std::to_string(r) + " flag went " + std::to_string(b.control.flag) +
                  " -> " + std::to_string(a.control.flag) + ", expected " + std::to_string(expected_flag));
  if (a.control.clear_size != static_cast<std::uint64_t>(n) * elems)
    out.push_back("invariant 2: rank " + std::to_string(r) + " clear_size is " +
                  std::to_string(a.control.clear_size) + ", expected N * size = " + std::to_string(n * elems));
  if (a.control.two_shot_flag != b.control.two_shot_flag || a.control.two_shot_counter != b.control.two_shot_counter)
    out.push_back("invariant 2: rank " + std::to_string(r) + " two-shot state changed during a one-shot call");

  // Invariant 4: the data buffer holds every rank's canonicalised input, then -0.
  const int data = static_cast<int>(b.control.flag % protocol::kLamportBuffers);
  const std::uint64_t per_buffer = a.comm_size / a.elem_bytes;
  for (int src = 0; src < n; ++src) {
    std::uint64_t bad = 0, first_bad = 0;
    std::uint32_t got_first = 0, want_first = 0;
    for (std::uint64_t i = 0; i < elems && (src + 1) * elems <= per_buffer; ++i) {
      const std::uint32_t want = pushed_lamport_bits(inputs[src][i], dtype, a.elem_bytes);
      const std::uint32_t got = read_elem(a.lamport, data * per_buffer + src * elems + i, a.elem_bytes);
      if (got != want && bad++ == 0) {
        first_bad = i;
        got_first = got;
        want_first = want;
      }
    }
    if (bad > 0)
      out.push_back("invariant 4: rank " + std::to_string(r) + " buffer " + std::to_string(data) + " slot " +
                    std::to_string(src) + ": " + std::to_string(bad) + " elements differ from rank " +
                    std::to_string(src) + "'s input, first at " + std::to_string(first_bad) + ": " + hex(got_first) +
                    " instead of " + hex(want_first));
  }
  check_all_sentinel(a, r, data, std::min<std::uint64_t>(per_buffer, n * elems), out, "invariant 4 (past N*size)");
  // Invariant 5: the other two buffers are entirely -0.
  for (int other = 0; other < protocol::kLamportBuffers; ++other)
    if (other != data) check_all_sentinel(a, r, other, 0, out, "invariant 5");
  return out;
}

std::vector<std::string> check_oneshot_invariants(const std::vector<ControlState>& before,
                                                  const std::vector<ControlState>& after,
                                                  const std::vector<std::vector<std::uint16_t>>& inputs, DType dtype) {
  std::vector<std::string> out;
  const int n = static_cast<int>(after.size());
  if (before.size() != after.size() || inputs.size() != after.size()) {
    out.push_back("invariant check: before/after/inputs hold different rank counts");
    return out;
  }
  out = check_same_control_state(control_blocks(after));
  for (int r = 0; r < n; ++r) {
    auto rank = check_oneshot_rank_invariants(r, before[r], after[r], inputs, dtype);
    out.insert(out.end(), rank.begin(), rank.end());
  }
  return out;
}

std::vector<std::string> check_twoshot_rank_invariants(int r, const ControlState& before, const ControlState& after) {
  std::vector<std::string> out;
  check_guards(r, after, out);
  const auto& b = before.control;
  const auto& a = after.control;
  const std::uint32_t expected = (b.two_shot_flag + 1) % 3;
  if (a.two_shot_flag != expected)
    out.push_back("invariant 2: rank " + std::to_string(r) + " two-shot flag went " + std::to_string(b.two_shot_flag) +
                  " -> " + std::to_string(a.two_shot_flag) + ", expected " + std::to_string(expected));
  if (a.two_shot_counter != 0)
    out.push_back("invariant 1: rank " + std::to_string(r) + " two-shot counter is " + std::to_string(a.two_shot_counter));
  if (a.flag != b.flag || a.clear_size != b.clear_size || a.arrival_counter != b.arrival_counter)
    out.push_back("invariant 2: rank " + std::to_string(r) + " one-shot state changed during a two-shot call");
  std::uint64_t bad = 0;
  for (std::uint32_t v : after.barrier_flags) bad += v != a.two_shot_flag;
  if (bad > 0)
    out.push_back("invariant 7: rank " + std::to_string(r) + " " + std::to_string(bad) + " of " +
                  std::to_string(after.barrier_flags.size()) + " barrier flags differ from the two-shot flag " +
                  std::to_string(a.two_shot_flag));
  return out;
}

std::vector<std::string> check_twoshot_invariants(const std::vector<ControlState>& before,
                                                  const std::vector<ControlState>& after) {
  std::vector<std::string> out = check_same_control_state(control_blocks(after));
  for (std::size_t r = 0; r < after.size() && r < before.size(); ++r) {
    auto rank = check_twoshot_rank_invariants(static_cast<int>(r), before[r], after[r]);
    out.insert(out.end(), rank.begin(), rank.end());
  }
  return out;
}

std::vector<std::string> check_same_control_state(const std::vector<protocol::ControlBlock>& blocks) {
  std::vector<std::string> out;
  check_same_control(blocks, out);
  return out;
}

std::vector<protocol::ControlBlock> control_blocks(const std::vector<ControlState>& states) {
  std::vector<protocol::ControlBlock> blocks;
  for (const auto& s : states) blocks.push_back(s.control);
  return blocks;
}

}  // namespace fusioncheck::kernels
