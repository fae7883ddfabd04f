#pragma once
// What the models of thread-level protocols share (the PCIe and vLLM models): the stores in
// flight, the events a scheduler may pick (deliverable stores first, in issue order, then the
// threads that can step, by index), the step count and its bound, the violation, the trace.
// A model adds its threads, their steps and its memory.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fusioncheck/sim/model.hpp"
#include "fusioncheck/sim/store_queue.hpp"

namespace fusioncheck::sim {

class ThreadModel : public ProtocolModel {
 public:
  std::span<const Event> enabled() final;
  void execute(Event event) final;
  const std::optional<Violation>& violation() const final { return violation_; }
  std::uint64_t steps() const final { return steps_; }
  std::uint64_t memory_events() const final { return memory_events_; }
  std::uint64_t step_bound() const final { return step_bound_; }
  void set_step_bound(std::uint64_t bound) final { step_bound_override_ = bound; }
  void set_trace(std::vector<std::string>* trace) final { trace_ = trace; }

 protected:
  explicit ThreadModel(int ranks) : ranks_(ranks) {}
  virtual int thread_count() const = 0;
  virtual bool thread_enabled_at(int thread) const = 0;
  virtual void step_thread(int thread) = 0;
  // Makes store `index` of in_flight_ visible (StoreQueue::take) where it goes.
  virtual void deliver(std::size_t index) = 0;

  // At the end of reset: no steps, no violation, and the bound on steps for `threads` threads
  // (set_step_bound's, where one was set).
  void start_run(std::size_t threads);
  // The first violation is kept; later ones are the same failure seen again.
  void fail(ViolationKind kind, std::string text);
  void trace(const std::string& line);  // with the step number, when tracing

  StoreQueue in_flight_;
  std::uint64_t memory_events_ = 0;
  std::optional<Violation> violation_;
  std::vector<std::string>* trace_ = nullptr;

 private:
  int ranks_;
  std::vector<Event> events_;
  std::uint64_t steps_ = 0, step_bound_ = 0, step_bound_override_ = 0;
};

}  // namespace fusioncheck::sim
