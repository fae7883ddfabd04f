#pragma once
// Stores in flight between ranks, for the models of FlashInfer's PCIe and vLLM's protocols: a
// vector store leaves in pieces of the profile's granularity, and a piece may land once no
// older piece it must follow is still in flight (a release store follows every older store
// of its block; on PCIe a thread's posted writes to one peer land in issue order).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fusioncheck/sim/config.hpp"
#include "fusioncheck/sim/model.hpp"

namespace fusioncheck::sim {

struct PendingStore {
  int thread, kernel, src, dst, block_key;
  std::size_t offset;
  std::vector<std::uint32_t> values;
  bool release;
};

class StoreQueue {
 public:
  StoreQueue() = default;
  StoreQueue(LinkOrder order, int piece_elems) : order_(order), piece_elems_(piece_elems) {}

  // Queues `store` in pieces; returns how many.
  int issue(const PendingStore& store);
  bool deliverable(std::size_t index) const;
  // Removes the piece at `index` (the scheduler's choice) and returns it.
  PendingStore take(std::size_t index);
  // A deliver event per deliverable piece; its actor is the link: first_actor + src * ranks
  // + dst.
  void append_events(std::vector<Event>& events, int first_actor, int ranks) const;
  const std::vector<PendingStore>& pieces() const { return pieces_; }
  void clear() { pieces_.clear(); }

 private:
  LinkOrder order_ = LinkOrder::unordered;
  int piece_elems_ = 1;
  std::vector<PendingStore> pieces_;
};

}  // namespace fusioncheck::sim
