// Invariant checks on read-back protocol state (invariants.hpp).
#include "fusioncheck/kernels/invariants.hpp"

#include "fusioncheck/kernels/lamport_scan.hpp"

namespace fusioncheck::kernels {
namespace {

void check_guards(int r, const ControlState& after, std::vector<std::string>& out) {
  if (!protocol::guards_intact(after.control))
    out.push_back("invariant 11: rank " + std::to_string(r) +
                  " control block guard words overwritten");
  if (!after.buffer_guards_intact)
    out.push_back("invariant 11: rank " + std::to_string(r) +
                  " guard words around the shared buffers overwritten");
}

void check_same_control(const std::vector<protocol::ControlBlock>& blocks,
                        std::vector<std::string>& out) {
  for (std::size_t r = 1; r < blocks.size(); ++r) {
    const auto& a = blocks[0];
    const auto& b = blocks[r];
    if (a.flag != b.flag || a.clear_size != b.clear_size ||
        a.arrival_counter != b.arrival_counter || a.two_shot_flag != b.two_shot_flag ||
        a.two_shot_counter != b.two_shot_counter || a.comm_size != b.comm_size)
      out.push_back("invariant 3: control state of rank " + std::to_string(r) + " (flag " +
                    std::to_string(b.flag) + ", clear_size " + std::to_string(b.clear_size) +
                    ", counter " + std::to_string(b.arrival_counter) + ", two-shot flag " +
                    std::to_string(b.two_shot_flag) + ") differs from rank 0 (flag " +
                    std::to_string(a.flag) + ", clear_size " + std::to_string(a.clear_size) +
                    ", counter " + std::to_string(a.arrival_counter) + ", two-shot flag " +
                    std::to_string(a.two_shot_flag) + ")");
  }
}

}  // namespace

std::vector<std::string> check_oneshot_control_invariants(int r, const ControlState& b,
                                                          const ControlState& a, int n,
                                                          std::uint64_t elems) {
  std::vector<std::string> out;
  check_guards(r, a, out);
  if (a.control.arrival_counter != 0)
    out.push_back("invariant 1: rank " + std::to_string(r) + " arrival counter is " +
                  std::to_string(a.control.arrival_counter) + ", not 0");
  const std::uint32_t expected_flag = (b.control.flag + 1) % protocol::kLamportBuffers;
  if (a.control.flag != expected_flag)
    out.push_back("invariant 2: rank " + std::to_string(r) + " flag went " +
                  std::to_string(b.control.flag) + " -> " + std::to_string(a.control.flag) +
                  ", expected " + std::to_string(expected_flag));
  if (a.control.clear_size != static_cast<std::uint64_t>(n) * elems)
    out.push_back("invariant 2: rank " + std::to_string(r) + " clear_size is " +
                  std::to_string(a.control.clear_size) +
                  ", expected N * size = " + std::to_string(n * elems));
  if (a.control.two_shot_flag != b.control.two_shot_flag ||
      a.control.two_shot_counter != b.control.two_shot_counter)
    out.push_back("invariant 2: rank " + std::to_string(r) +
                  " two-shot state changed during a one-shot call");
  return out;
}

std::vector<std::string> check_oneshot_rank_invariants(
    int r, const ControlState& before, const ControlState& after,
    const std::vector<std::vector<std::uint16_t>>& inputs, DType dtype) {
  std::vector<std::string> out = check_oneshot_control_invariants(
      r, before, after, static_cast<int>(inputs.size()), inputs.empty() ? 0 : inputs[0].size());
  LamportScanRequest request;
  request.data_buffer = static_cast<int>(before.control.flag % protocol::kLamportBuffers);
  request.dtype = dtype;
  for (const auto& input : inputs) request.inputs.emplace_back(input);
  const auto lamport = lamport_violations(r, scan_lamport_on_host(after, request));
  out.insert(out.end(), lamport.begin(), lamport.end());
  return out;
}

std::vector<std::string> check_oneshot_invariants(
    const std::vector<ControlState>& before, const std::vector<ControlState>& after,
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

std::vector<std::string> check_twoshot_rank_invariants(int r, const ControlState& before,
                                                       const ControlState& after) {
  std::vector<std::string> out;
  check_guards(r, after, out);
  const auto& b = before.control;
  const auto& a = after.control;
  const std::uint32_t expected =
      (b.two_shot_flag + static_cast<std::uint32_t>(after.twoshot_flag_steps)) % 3;
  if (a.two_shot_flag != expected)
    out.push_back("invariant 2: rank " + std::to_string(r) + " two-shot flag went " +
                  std::to_string(b.two_shot_flag) + " -> " + std::to_string(a.two_shot_flag) +
                  ", expected " + std::to_string(expected));
  if (a.two_shot_counter != 0)
    out.push_back("invariant 1: rank " + std::to_string(r) + " two-shot counter is " +
                  std::to_string(a.two_shot_counter));
  if (a.flag != b.flag || a.clear_size != b.clear_size || a.arrival_counter != b.arrival_counter)
    out.push_back("invariant 2: rank " + std::to_string(r) +
                  " one-shot state changed during a two-shot call");
  std::uint64_t bad = 0;
  for (std::uint32_t v : after.barrier_flags) bad += v != a.two_shot_flag;
  if (bad > 0)
    out.push_back("invariant 7: rank " + std::to_string(r) + " " + std::to_string(bad) + " of " +
                  std::to_string(after.barrier_flags.size()) +
                  " barrier flags differ from the two-shot flag " +
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

std::vector<std::string> check_same_control_state(
    const std::vector<protocol::ControlBlock>& blocks) {
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
