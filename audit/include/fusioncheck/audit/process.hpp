#pragma once
// Running tools (cuobjdump, python) as children with a time limit each: their stdout fed line
// by line as it arrives, their stderr kept (up to 64 KiB). Each child leads its own process
// group, which a timeout, SIGTERM or SIGINT ends whole. A pool runs several at once from one
// thread (one poll over every pipe), so that the disassembly of a large library uses the
// machine's cores.
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fusioncheck::audit {

// While children run, `report` (if set) is called every `every` with the seconds so far, the
// runs ended and the runs known (ended, running and queued).
struct DumpProgress {
  std::chrono::milliseconds every{5000};
  std::function<void(double seconds, std::size_t runs_ended, std::size_t runs_known)> report;
};

struct ChildResult {
  int exit_status = -1;  // exit code, or -1 when killed by a signal
  bool timed_out = false;
  std::string stderr_text;
};

struct ChildTask {
  std::vector<std::string> argv;
  std::string working_dir;                             // empty: ours
  std::function<void()> prepare;                       // before the start (writes its input)
  std::function<void(std::string_view line)> on_line;  // each line of its stdout
  std::function<void(const ChildResult&)> on_exit;     // may add tasks to the pool; may throw
};

class ChildPool {
 public:
  // At most `parallel` children at once (1 to 64); each may run `time_limit`.
  ChildPool(std::size_t parallel, std::chrono::milliseconds time_limit);
  void add(ChildTask task);
  // Runs every task, and those added meanwhile, to its end. An exception from a task (its
  // prepare or on_exit, or a child that cannot start: AuditInputError) ends the running
  // children and is rethrown.
  void run(const DumpProgress& progress = {});

 private:
  std::size_t parallel_;
  std::chrono::milliseconds time_limit_;
  std::deque<ChildTask> queue_;
  std::size_t added_ = 0;
  std::size_t finished_ = 0;
};

// The first executable regular file called `name` in a folder of $PATH (empty entries
// skipped); nothing when there is none.
std::optional<std::string> find_on_path(const std::string& name);

// One child, as a pool of one. Throws AuditInputError when the child cannot be started.
ChildResult run_bounded(const std::vector<std::string>& argv,
                        const std::function<void(std::string_view line)>& on_line,
                        std::chrono::milliseconds time_limit, const DumpProgress& progress);

}  // namespace fusioncheck::audit
