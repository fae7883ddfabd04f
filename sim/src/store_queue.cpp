// Stores in flight for the PCIe and vLLM models (store_queue.hpp).
#include "fusioncheck/sim/store_queue.hpp"

#include <algorithm>

namespace fusioncheck::sim {

int StoreQueue::issue(const PendingStore& store) {
  int count = 0;
  const std::size_t step = static_cast<std::size_t>(piece_elems_);
  for (std::size_t first = 0; first < store.values.size(); first += step, ++count) {
    const std::size_t last = std::min(store.values.size(), first + step);
    PendingStore piece = store;
    piece.offset = store.offset + first;
    piece.values.assign(store.values.begin() + static_cast<std::ptrdiff_t>(first),
                        store.values.begin() + static_cast<std::ptrdiff_t>(last));
    pieces_.push_back(std::move(piece));
  }
  return count;
}

bool StoreQueue::deliverable(std::size_t index) const {
  const PendingStore& s = pieces_[index];
  for (std::size_t i = 0; i < index; ++i) {
    const PendingStore& older = pieces_[i];
    if (s.release && older.block_key == s.block_key) return false;
    if (order_ == LinkOrder::per_thread_fifo && s.src != s.dst && older.thread == s.thread &&
        older.dst == s.dst)
      return false;
  }
  return true;
}

PendingStore StoreQueue::take(std::size_t index) {
  PendingStore s = std::move(pieces_[index]);
  pieces_.erase(pieces_.begin() + static_cast<std::ptrdiff_t>(index));
  return s;
}

void StoreQueue::append_events(std::vector<Event>& events, int first_actor, int ranks) const {
  for (std::size_t i = 0; i < pieces_.size(); ++i)
    if (deliverable(i))
      events.push_back({EventKind::deliver, static_cast<std::int32_t>(i),
                        first_actor + pieces_[i].src * ranks + pieces_[i].dst});
}

}  // namespace fusioncheck::sim
