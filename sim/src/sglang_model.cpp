// The model of SGLang's push plane: layout, launches, stores in flight, the invariants S1-S3
// and the scheduler's interface (sglang_model.hpp). Thread steps: sglang_steps.cpp.
#include "fusioncheck/sim/sglang_model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "fusioncheck/sim/values.hpp"
#include "sglang_model_internal.hpp"

namespace fusioncheck::sim {

using namespace sglang;

namespace {
// The vectors a call occupies in each slot: one-shot its vectors; two-shot two chunks (the
// partial the owner receives, then the owner's sum); fused two vectors per token.
int slot_vectors_of(const CallSpec& spec, int ranks) {
  switch (spec.kind) {
    case CallKind::sglang_push2: return 2 * ((spec.vectors + ranks - 1) / ranks);
    case CallKind::sglang_fused: return 2 * spec.vectors;
    default: return spec.vectors;
  }
}
}  // namespace

SglangModel::SglangModel(const SimConfig& config, const Profile& profile, Mutant mutant)
    : ThreadModel(config.ranks), config_(config), profile_(profile), mutant_(mutant) {
  require_model_input(config, profile, mutant, SimProtocol::sglang);
  calls_ = expanded_calls(config);
  for (const CallSpec& spec : calls_)
    slot_vectors_ = std::max(slot_vectors_, slot_vectors_of(spec, config.ranks));
  piece_elems_ = std::max(1, profile.store_granularity_bytes / 4);
  in_flight_ = StoreQueue(profile.link_order, piece_elems_);
  plane_words_ = 2 * static_cast<std::size_t>(config.ranks) *
                 static_cast<std::size_t>(slot_vectors_) *
                 static_cast<std::size_t>(config.elems_per_vector);
  reset();
}

std::size_t SglangModel::slot_offset(int phase, int src, int idx) const {
  return static_cast<std::size_t>(((phase * config_.ranks + src) * slot_vectors_ + idx) *
                                  config_.elems_per_vector);
}

void SglangModel::reset() {
  const int n = config_.ranks;
  const int calls = static_cast<int>(calls_.size());
  plane_.assign(static_cast<std::size_t>(n), std::vector<std::uint32_t>(plane_words_, 0u));
  counters_.assign(static_cast<std::size_t>(n),
                   std::vector<std::uint32_t>(static_cast<std::size_t>(config_.blocks), 0u));
  kernels_.clear();
  threads_.clear();
  in_flight_.clear();
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < calls; ++c) {
      Kernel k;
      k.spec = calls_[static_cast<std::size_t>(c)];
      const int kernel = kernel_index(r, c);
      const std::size_t first = threads_.size();
      if (k.spec.kind == CallKind::sglang_fused) {
        // A cluster of two blocks per token, each moving one vector of its row; the bumper
        // cluster when counters are left over.
        const int tokens = k.spec.vectors;
        const bool bumper = tokens < config_.blocks && mutant_ != Mutant::sglang_no_bumper;
        for (int row = 0; row < tokens + (bumper ? 1 : 0); ++row)
          for (int cr = 0; cr < 2; ++cr) {
            Thread t{kernel, r, c, 2 * row + cr, 0, row < tokens ? 2 * row + cr : -1};
            t.row = row;
            t.cluster_rank = cr;
            threads_.push_back(t);
          }
        k.cluster_arrived.assign(static_cast<std::size_t>(tokens + 1), 0);
        k.outputs.assign(static_cast<std::size_t>(2 * tokens), 0);
      } else {
        // The grid is the counter array: vector idx goes to block idx % blocks.
        for (int b = 0; b < config_.blocks; ++b)
          for (int tid = 0; tid < config_.vectors_per_block; ++tid) {
            const int idx = tid * config_.blocks + b;
            threads_.push_back({kernel, r, c, b, tid, idx < k.spec.vectors ? idx : -1});
          }
        k.outputs.assign(static_cast<std::size_t>(k.spec.vectors), 0);
      }
      int blocks = 0;
      for (std::size_t i = first; i < threads_.size(); ++i)
        blocks = std::max(blocks, threads_[i].block + 1);
      k.block_threads.assign(static_cast<std::size_t>(blocks), 0);
      for (std::size_t i = first; i < threads_.size(); ++i)
        ++k.block_threads[static_cast<std::size_t>(threads_[i].block)];
      k.synced.assign(static_cast<std::size_t>(blocks), 0);
      k.threads = static_cast<int>(threads_.size() - first);
      kernels_.push_back(std::move(k));
    }
  start_run(threads_.size());
}

int SglangModel::actor_count() const {
  return static_cast<int>(threads_.size()) + config_.ranks * config_.ranks;
}

bool SglangModel::all_done() const {
  return std::all_of(kernels_.begin(), kernels_.end(), [](const Kernel& k) { return k.complete; });
}

// ---- stores in flight ----

// A thread's stores to one address land in its program order (coherence): an older store of
// the thread still in flight to a word this one writes lands first.
void SglangModel::issue(const Thread& t, int dst, std::size_t offset,
                        std::vector<std::uint32_t> values) {
  const int self = static_cast<int>(&t - threads_.data());
  for (std::size_t i = in_flight_.pieces().size(); i-- > 0;) {
    const PendingStore& p = in_flight_.pieces()[i];
    if (p.thread == self && p.dst == dst && p.offset < offset + values.size() &&
        offset < p.offset + p.values.size())
      deliver(i);
  }
  const int pieces =
      in_flight_.issue({static_cast<int>(&t - threads_.data()), t.kernel, t.rank, dst,
                        t.kernel * 2 * kMaxBlocks + t.block, offset, std::move(values), false});
  kernels_[static_cast<std::size_t>(t.kernel)].in_flight += pieces;
}

void SglangModel::deliver(std::size_t index) {
  const PendingStore s = in_flight_.take(index);
  for (std::size_t i = 0; i < s.values.size(); ++i)
    plane_[static_cast<std::size_t>(s.dst)][s.offset + i] = s.values[i];
  ++memory_events_;
  if (trace_)
    trace(fmt::format("deliver rank {} -> rank {}: {} = {}", s.src, s.dst, describe_word(s.offset),
                      s.values.front() == 0 ? "+0 (empty)" : describe_value(s.values.front())));
  --kernels_[static_cast<std::size_t>(s.kernel)].in_flight;
  complete_if_done(s.kernel);
}

void SglangModel::complete_if_done(int kernel) {
  Kernel& k = kernels_[static_cast<std::size_t>(kernel)];
  if (k.complete || k.done != k.threads || k.in_flight != 0) return;
  k.complete = true;
  const int calls = static_cast<int>(calls_.size());
  trace(fmt::format("rank {}: kernel of call {} completed", kernel / calls, kernel % calls));
}

// ---- reporting ----

std::string SglangModel::who(const Thread& t) const {
  const std::string kind = format_calls({kernel_of(t).spec});
  if (t.row >= 0)
    return fmt::format("rank {} call {} ({}) {} block {}", t.rank, t.call, kind,
                       t.idx < 0 ? std::string("bumper") : fmt::format("token {}", t.row),
                       t.cluster_rank);
  return fmt::format("rank {} call {} ({}) block {} thread {}", t.rank, t.call, kind, t.block,
                     t.tid);
}

std::string SglangModel::describe_word(std::size_t offset) const {
  const std::size_t e = static_cast<std::size_t>(config_.elems_per_vector);
  const std::size_t v = offset / e;
  const std::size_t slot = v / static_cast<std::size_t>(slot_vectors_);
  return fmt::format("phase {} slot of rank {} vector {}.{}",
                     slot / static_cast<std::size_t>(config_.ranks),
                     slot % static_cast<std::size_t>(config_.ranks),
                     v % static_cast<std::size_t>(slot_vectors_), offset % e);
}

void SglangModel::finish() {
  if (violation_) return;
  if (!all_done()) {
    std::string text = "no event enabled and not every kernel completed:";
    int shown = 0;
    for (const Thread& t : threads_) {
      if (t.pc >= kDone || shown == 3) continue;
      if (t.pc == kWait && t.call > 0 && !kernels_[static_cast<std::size_t>(t.kernel - 1)].complete)
        continue;  // behind its rank's previous call, not the cause
      text += " " + who(t) + " " + awaited(t) + ";";
      ++shown;
    }
    fail(ViolationKind::deadlock, text);
    return;
  }
  check_invariants();
}

// S1 every phase counter of every rank has the parity of the number of calls (each call flips
// each counter once); S2 every slot of both phases holds the +0 marker again; S3 every call
// output each of its vectors once on every rank.
void SglangModel::check_invariants() {
  const int n = config_.ranks;
  const auto parity = static_cast<std::uint32_t>(calls_.size() % 2);
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < config_.blocks; ++b)
      if (const std::uint32_t held =
              counters_[static_cast<std::size_t>(r)][static_cast<std::size_t>(b)];
          held != parity)
        return fail(ViolationKind::invariant,
                    fmt::format("invariant S1: rank {} phase counter {} holds {}, expected {} "
                                "after {} calls",
                                r, b, held, parity, calls_.size()));
  for (int r = 0; r < n; ++r)
    for (std::size_t w = 0; w < plane_words_; ++w)
      if (const std::uint32_t v = word(r, w); v != 0)
        return fail(ViolationKind::invariant,
                    fmt::format("invariant S2: rank {} {} holds {}, not the +0 marker", r,
                                describe_word(w), describe_value(v)));
  for (std::size_t k = 0; k < kernels_.size(); ++k)
    for (std::size_t idx = 0; idx < kernels_[k].outputs.size(); ++idx)
      if (const int times = kernels_[k].outputs[idx]; times != 1)
        return fail(ViolationKind::invariant,
                    fmt::format("invariant S3: rank {} call {} output vector {} {} times",
                                k / calls_.size(), k % calls_.size(), idx, times));
}

}  // namespace fusioncheck::sim
