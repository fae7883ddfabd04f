#include "fusioncheck/sim/thread_model.hpp"

#include <fmt/core.h>

#include <utility>

namespace fusioncheck::sim {

std::span<const Event> ThreadModel::enabled() {
  events_.clear();
  if (violation_) return events_;
  const int threads = thread_count();
  in_flight_.append_events(events_, threads, ranks_);
  for (int i = 0; i < threads; ++i)
    if (thread_enabled_at(i)) events_.push_back({EventKind::thread_step, i, i});
  return events_;
}

void ThreadModel::execute(Event event) {
  ++steps_;
  if (event.kind == EventKind::deliver) deliver(static_cast<std::size_t>(event.id));
  else step_thread(event.id);
  if (!violation_ && steps_ > step_bound_)
    fail(ViolationKind::step_bound, fmt::format("more than {} steps", step_bound_));
}

void ThreadModel::start_run(std::size_t threads) {
  steps_ = memory_events_ = 0;
  violation_.reset();
  const auto n = static_cast<std::uint64_t>(ranks_);
  step_bound_ = step_bound_override_ != 0 ? step_bound_override_
                                          : 64 * static_cast<std::uint64_t>(threads) * (n + 8) * n;
}

void ThreadModel::fail(ViolationKind kind, std::string text) {
  if (violation_) return;
  if (trace_) trace("VIOLATION (" + std::string(violation_kind_name(kind)) + "): " + text);
  violation_ = Violation{kind, std::move(text)};
}

void ThreadModel::trace(const std::string& line) {
  if (trace_) trace_->push_back(fmt::format("{:>5}  {}", steps_, line));
}

}  // namespace fusioncheck::sim
