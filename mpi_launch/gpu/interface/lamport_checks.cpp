#include "fusioncheck/gpu/lamport_checks.hpp"

#include <fmt/core.h>

#include <cstring>
#include <stdexcept>

#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/kernels/invariants.hpp"

namespace fusioncheck::gpu {

namespace k = fusioncheck::kernels;

static_assert(sizeof(protocol::ControlBlock) == sizeof(ProtocolWords::words),
              "a rank's Lamport words are its control block");

namespace {

protocol::ControlBlock control_of(const ProtocolWords& words) {
  protocol::ControlBlock block{};
  std::memcpy(&block, words.words.data(), sizeof(block));
  return block;
}

}  // namespace

void LamportChecks::start_case() {
  state_ = k::ControlState{};  // the control block is all the first checks need
  state_.control = kernel_.read_control();
}

// The Lamport scan after a one-shot call compares each slot with what its rank pushed: this
// rank's slot everywhere, on the GPU, where the kernel scans so; else every rank's input here.
InputEvidence LamportChecks::evidence_needed(const CallSpec& last) const {
  if (last.twoshot) return InputEvidence::none;
  return kernel_.scans_my_slot_everywhere() ? InputEvidence::own_input_on_gpu
                                            : InputEvidence::every_input_on_host;
}

// Every rank checks its own state (the Lamport buffers stay where they are); only the control
// blocks travel (words), for the cross-rank invariant 3.
std::vector<std::string> LamportChecks::check_rank(const GpuCase& c, int first, int count,
                                                   const CallEvidence& last) {
  const k::ControlState before_sequence = std::move(state_);
  state_ = kernel_.read_state(k::LamportCopy::without_buffers);
  const k::ControlState& after = state_;
  // The state before the last call, derived from the state before the sequence: one-shot
  // calls advance the Lamport flag and set clear_size, two-shot calls advance their flag (by
  // the kernel's steps per call, which its state gives).
  k::ControlState before = before_sequence;
  const std::size_t last_position = static_cast<std::size_t>(first + count - 1);
  for (std::size_t i = static_cast<std::size_t>(first); i < last_position; ++i) {
    if (c.calls[i].twoshot) {
      before.control.two_shot_flag =
          (before.control.two_shot_flag + static_cast<std::uint32_t>(after.twoshot_flag_steps)) % 3;
    } else {
      before.control.flag = (before.control.flag + 1) % protocol::kLamportBuffers;
      before.control.clear_size =
          static_cast<std::uint64_t>(c.ranks) * c.calls[i].tokens * c.hidden;
    }
  }
  if (c.calls[last_position].twoshot) return k::check_twoshot_rank_invariants(rank_, before, after);
  const std::size_t elems = static_cast<std::size_t>(c.calls[last_position].tokens) * c.hidden;
  std::vector<std::string> violations =
      k::check_oneshot_control_invariants(rank_, before, after, c.ranks, elems);
  k::LamportScanRequest request;
  request.data_buffer = static_cast<int>(before.control.flag % protocol::kLamportBuffers);
  request.dtype = c.dtype;
  if (kernel_.scans_my_slot_everywhere()) {
    if (last.own_input_on_gpu == nullptr || last.own_input_elems < elems)
      throw std::logic_error("the Lamport scan needs the GPU's copy of this rank's input");
    request.slots = k::SlotScan::my_slot_everywhere;
    request.rank = rank_;
    request.ranks = c.ranks;
    request.device_input = last.own_input_on_gpu;
    request.device_input_elems = elems;
  } else {
    if (last.every_input.size() != static_cast<std::size_t>(c.ranks))
      throw std::logic_error("the Lamport scan needs every rank's whole input of the last call");
    for (const auto& input : last.every_input) request.inputs.push_back(input.first(elems));
  }
  const auto lamport = k::lamport_violations(rank_, kernel_.scan_lamport(request));
  violations.insert(violations.end(), lamport.begin(), lamport.end());
  return violations;
}

ProtocolWords LamportChecks::words() const {
  ProtocolWords words;
  std::memcpy(words.words.data(), &state_.control, sizeof(state_.control));
  return words;
}

void LamportChecks::read_words() { state_ = kernel_.read_state(k::LamportCopy::without_buffers); }

std::vector<std::string> LamportChecks::check_across_ranks(
    const std::vector<ProtocolWords>& all) const {
  std::vector<protocol::ControlBlock> blocks;
  for (const ProtocolWords& words : all) blocks.push_back(control_of(words));
  return k::check_same_control_state(blocks);
}

std::string LamportChecks::describe(const ProtocolWords& words) const {
  const protocol::ControlBlock b = control_of(words);
  return fmt::format("flag {}, counter {}, clear_size {}, two-shot flag {}", b.flag,
                     b.arrival_counter, b.clear_size, b.two_shot_flag);
}

}  // namespace fusioncheck::gpu
