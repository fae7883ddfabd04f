// The model of vLLM's custom allreduce barrier protocol: layout, launches, stores in flight,
// the invariants V1-V4 and the scheduler's interface (vllm_model.hpp). Thread steps:
// vllm_steps.cpp.
#include "fusioncheck/sim/vllm_model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "fusioncheck/sim/values.hpp"
#include "vllm_model_internal.hpp"

namespace fusioncheck::sim {

using namespace vllm;

VllmModel::VllmModel(const SimConfig& config, const Profile& profile, Mutant mutant)
    : ThreadModel(config.ranks), config_(config), profile_(profile), mutant_(mutant) {
  require_model_input(config, profile, mutant, SimProtocol::vllm);
  calls_ = expanded_calls(config);
  max_vectors_ = max_vectors(config);
  piece_elems_ = std::max(1, profile.store_granularity_bytes / 4);
  in_flight_ = StoreQueue(profile.link_order, piece_elems_);
  // The Signal's two counter sets first, then the registered input, then the temporary
  // buffer the header places right after the Signal.
  const std::size_t vector_words =
      static_cast<std::size_t>(max_vectors_) * static_cast<std::size_t>(config.elems_per_vector);
  input_base_ =
      2 * static_cast<std::size_t>(config.blocks) * static_cast<std::size_t>(config.ranks);
  tmp_base_ = input_base_ + vector_words;
  words_ = tmp_base_ + vector_words;
  reset();
}

std::size_t VllmModel::counter_offset(int set, int block, int peer) const {
  return static_cast<std::size_t>((set * config_.blocks + block) * config_.ranks + peer);
}
std::size_t VllmModel::input_offset(int idx) const {
  return input_base_ + static_cast<std::size_t>(idx * config_.elems_per_vector);
}
std::size_t VllmModel::tmp_offset(int idx) const {
  return tmp_base_ + static_cast<std::size_t>(idx * config_.elems_per_vector);
}

void VllmModel::reset() {
  const int n = config_.ranks;
  const int calls = static_cast<int>(calls_.size());
  memory_.assign(static_cast<std::size_t>(n), std::vector<std::uint32_t>(words_, 0u));
  for (auto& m : memory_)
    std::fill(m.begin() + static_cast<std::ptrdiff_t>(tmp_base_), m.end(), kPoison);
  own_count_.assign(static_cast<std::size_t>(n),
                    std::vector<std::uint32_t>(static_cast<std::size_t>(config_.blocks * n), 0u));
  block_flag_.assign(static_cast<std::size_t>(n),
                     std::vector<std::uint32_t>(static_cast<std::size_t>(config_.blocks), 0u));
  flag_seen_.assign(static_cast<std::size_t>(n * calls),
                    std::vector<std::optional<std::uint32_t>>(
                        static_cast<std::size_t>(config_.blocks * 2), std::nullopt));
  kernels_.clear();
  threads_.clear();
  in_flight_.clear();
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < calls; ++c) {
      Kernel k;
      k.spec = calls_[static_cast<std::size_t>(c)];
      k.grid = (k.spec.vectors + config_.vectors_per_block - 1) / config_.vectors_per_block;
      k.block_threads.assign(static_cast<std::size_t>(k.grid), config_.vectors_per_block + n);
      k.synced.assign(static_cast<std::size_t>(k.grid), std::vector<int>(kSyncPoints, 0));
      const int kernel = kernel_index(r, c);
      for (int b = 0; b < k.grid; ++b) {
        for (int tid = 0; tid < config_.vectors_per_block; ++tid)
          threads_.push_back({kernel, r, c, b, -1, b * config_.vectors_per_block + tid});
        for (int lane = 0; lane < n; ++lane) threads_.push_back({kernel, r, c, b, lane, -1});
      }
      k.threads = k.grid * (config_.vectors_per_block + n);
      kernels_.push_back(std::move(k));
    }
  for (int r = 0; r < n; ++r) write_inputs(r, 0);
  start_run(threads_.size());
}

// The host's copy of a call's input into the registered buffer, on the rank's stream: right
// after the rank's previous kernel completed.
void VllmModel::write_inputs(int rank, int call) {
  const CallSpec& spec = calls_[static_cast<std::size_t>(call)];
  for (int idx = 0; idx < spec.vectors; ++idx)
    for (int e = 0; e < config_.elems_per_vector; ++e)
      memory_[static_cast<std::size_t>(rank)][input_offset(idx) + static_cast<std::size_t>(e)] =
          data_tag(call, rank, idx, e);
  if (call > 0) trace(fmt::format("rank {}: host writes call {}'s input", rank, call));
}

int VllmModel::actor_count() const {
  return static_cast<int>(threads_.size()) + config_.ranks * config_.ranks;
}

bool VllmModel::all_done() const {
  return std::all_of(kernels_.begin(), kernels_.end(), [](const Kernel& k) { return k.complete; });
}

// ---- stores in flight ----

void VllmModel::issue(const Thread& t, int dst, std::size_t offset,
                      std::vector<std::uint32_t> values, bool release) {
  const int pieces =
      in_flight_.issue({static_cast<int>(&t - threads_.data()), t.kernel, t.rank, dst,
                        t.kernel * config_.blocks + t.block, offset, std::move(values), release});
  kernels_[static_cast<std::size_t>(t.kernel)].in_flight += pieces;
}

void VllmModel::deliver(std::size_t index) {
  const PendingStore s = in_flight_.take(index);
  for (std::size_t i = 0; i < s.values.size(); ++i)
    memory_[static_cast<std::size_t>(s.dst)][s.offset + i] = s.values[i];
  ++memory_events_;
  if (trace_)
    trace(fmt::format("deliver rank {} -> rank {}: {} = {}", s.src, s.dst, describe_word(s.offset),
                      s.offset < input_base_ ? std::to_string(s.values.front())
                                             : describe_value(s.values.front())));
  Kernel& k = kernels_[static_cast<std::size_t>(s.kernel)];
  --k.in_flight;
  complete_if_done(s.kernel);
}

void VllmModel::complete_if_done(int kernel) {
  Kernel& k = kernels_[static_cast<std::size_t>(kernel)];
  if (k.complete || k.done != k.threads || k.in_flight != 0) return;
  k.complete = true;
  const int calls = static_cast<int>(calls_.size());
  if (kernel % calls + 1 < calls) write_inputs(kernel / calls, kernel % calls + 1);
}

// ---- reporting ----

std::string VllmModel::who(const Thread& t) const {
  const std::string kind = format_calls({kernel_of(t).spec});
  if (t.lane >= 0)
    return fmt::format("rank {} call {} ({}) block {} lane {}", t.rank, t.call, kind, t.block,
                       t.lane);
  return fmt::format("rank {} call {} ({}) block {} thread {}", t.rank, t.call, kind, t.block,
                     t.slot);
}

std::string VllmModel::describe_word(std::size_t offset) const {
  const std::size_t e = static_cast<std::size_t>(config_.elems_per_vector);
  if (offset >= tmp_base_) return fmt::format("temporary vector {}", (offset - tmp_base_) / e);
  if (offset >= input_base_) return fmt::format("input vector {}", (offset - input_base_) / e);
  const std::size_t n = static_cast<std::size_t>(config_.ranks);
  const std::size_t blocks = static_cast<std::size_t>(config_.blocks);
  if (start_end())
    return fmt::format("{} counter of block {} from rank {}",
                       offset / (blocks * n) == 0 ? "start" : "end", offset / n % blocks,
                       offset % n);
  return fmt::format("counter set {} of block {} from rank {}", offset / (blocks * n),
                     offset / n % blocks, offset % n);
}

void VllmModel::finish() {
  if (violation_) return;
  if (!all_done()) {
    std::string text = "no event enabled and not every kernel completed:";
    int shown = 0;
    for (const Thread& t : threads_) {
      if (t.pc == kWait || t.pc >= kDone || shown == 3) continue;
      text += " " + who(t) + " " + awaited(t) + ";";
      ++shown;
    }
    fail(ViolationKind::deadlock, text);
    return;
  }
  check_invariants();
}

std::string VllmModel::awaited(const Thread& t) const {
  if (is_poll(t.pc))
    return fmt::format("waits for count {} from rank {} in {} (holds {})", t.awaited, t.lane,
                       describe_word(counter_offset(t.set, t.block, t.lane)),
                       word(t.rank, counter_offset(t.set, t.block, t.lane)));
  return fmt::format("waits at __syncthreads {}", sync_index(t.pc) + 1);
}

// V1 every lane of a block counted the same barriers, on every rank; V2 each counter holds
// what its peer's last two barriers wrote; V3 after a two-stage call the temporary buffer
// holds the rank's reduced part; V4 the registered input still holds the last call's input.
void VllmModel::check_invariants() {
  const int n = config_.ranks;
  for (int b = 0; b < config_.blocks; ++b) {
    const std::uint32_t count = own_count_[0][static_cast<std::size_t>(b * n)];
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p)
        if (own_count_[static_cast<std::size_t>(r)][static_cast<std::size_t>(b * n + p)] != count)
          return fail(
              ViolationKind::invariant,
              fmt::format(
                  "invariant V1: rank {} block {} lane {} counted {} barriers, "
                  "rank 0 lane 0 {}",
                  r, b, p,
                  own_count_[static_cast<std::size_t>(r)][static_cast<std::size_t>(b * n + p)],
                  count));
    if (count == 0) continue;  // no call's grid reached this block
    // start-end: thread 0 published the flag of the block's last barrier on every rank.
    for (int r = 0; r < n && start_end(); ++r)
      if (const std::uint32_t flag =
              block_flag_[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)];
          flag != count)
        return fail(ViolationKind::invariant,
                    fmt::format("invariant V1: rank {} block {} flag is {}, its lanes counted {}",
                                r, b, flag, count));
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p)
        for (std::uint32_t k : {count, count - 1}) {
          if (k == 0 || (k != count && counter_set(k) == counter_set(count))) continue;
          const std::uint32_t held = word(r, counter_offset(counter_set(k), b, p));
          if (held != k)
            return fail(
                ViolationKind::invariant,
                fmt::format("invariant V2: rank {} {} holds {}, expected {} (barrier {})", r,
                            describe_word(counter_offset(counter_set(k), b, p)), held, k, k));
        }
  }
  const int last = static_cast<int>(calls_.size()) - 1;
  const CallSpec& spec = calls_.back();
  for (int r = 0; r < n; ++r)
    for (int e = 0; e < config_.elems_per_vector; ++e) {
      for (int idx = 0; idx < spec.vectors; ++idx)
        if (const std::uint32_t v = word(r, input_offset(idx) + static_cast<std::size_t>(e));
            v != data_tag(last, r, idx, e))
          return fail(ViolationKind::invariant,
                      fmt::format("invariant V4: rank {} input vector {} element {} holds {}, "
                                  "expected the last call's input",
                                  r, idx, e, describe_value(v)));
      if (spec.kind != CallKind::vllm_2stage) continue;
      const int start = part_start(r, spec.vectors);
      for (int idx = start; idx < part_end(r, spec.vectors); ++idx)
        if (const std::uint32_t v = word(r, tmp_offset(idx - start) + static_cast<std::size_t>(e));
            v != reduced_tag(last, idx, e))
          return fail(ViolationKind::invariant,
                      fmt::format("invariant V3: rank {} temporary vector {} element {} holds "
                                  "{}, expected the sum of vector {}",
                                  r, idx - start, e, describe_value(v), idx));
    }
}

}  // namespace fusioncheck::sim
