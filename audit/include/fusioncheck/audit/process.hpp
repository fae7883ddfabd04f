#pragma once
// Running a tool (cuobjdump, python) as a child with a time limit: its stdout fed line by line
// as it arrives, its stderr kept (up to 64 KiB). The child leads its own process group, which
// a timeout, SIGTERM or SIGINT ends whole.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fusioncheck::audit {

struct DumpProgress;  // cuobjdump.hpp

struct ChildResult {
  int exit_status = -1;  // exit code, or -1 when killed by a signal
  bool timed_out = false;
  std::string stderr_text;
};

// The first executable regular file called `name` in a folder of $PATH (empty entries
// skipped); nothing when there is none.
std::optional<std::string> find_on_path(const std::string& name);

// Throws AuditInputError when the child cannot be started.
ChildResult run_bounded(const std::vector<std::string>& argv,
                        const std::function<void(std::string_view line)>& on_line,
                        std::chrono::milliseconds time_limit, const DumpProgress& progress);

}  // namespace fusioncheck::audit
