#include "fusioncheck/audit/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <list>
#include <string_view>
#include <vector>

#include "fusioncheck/audit/cuobjdump.hpp"

extern char** environ;

namespace fusioncheck::audit {
namespace {

// A pipe whose ends are closed on exec and by the destructor.
struct Pipe {
  std::array<int, 2> fds{-1, -1};
  Pipe() {
    if (::pipe2(fds.data(), O_CLOEXEC) != 0)
      throw AuditInputError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  ~Pipe() { close_both(); }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void close_end(int which) {
    if (fds[which] >= 0) ::close(fds[which]);
    fds[which] = -1;
  }
  void close_both() {
    close_end(0);
    close_end(1);
  }
};

// The process groups of the running children, for the handler below; 0 marks a free slot.
// Set and cleared by the one thread that runs the children, with the signals held.
constexpr std::size_t kMaxChildren = 64;
volatile std::sig_atomic_t g_child_groups[kMaxChildren] = {};

// SIGTERM / SIGINT while children run: end their process groups (their own, so neither
// Ctrl-C nor a signal to us reaches them), then die of the signal as without a handler.
extern "C" void end_child_and_reraise(int signal_number) {
  for (std::size_t i = 0; i < kMaxChildren; ++i) {
    const pid_t group = g_child_groups[i];
    if (group > 0) ::kill(-group, SIGKILL);
  }
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(signal_number, &default_action, nullptr);
  ::raise(signal_number);
}

// Installs the handler for as long as children may run (a signal the caller ignores, such
// as a background job's SIGINT, stays ignored) and holds SIGTERM / SIGINT around each spawn
// until the child's group is recorded, so that no signal comes between the two.
class ChildSignalGuard {
 public:
  static constexpr std::array<int, 2> kSignals{SIGTERM, SIGINT};
  ChildSignalGuard() {
    ::pthread_sigmask(SIG_SETMASK, nullptr, &old_mask_);
    struct sigaction action {};
    action.sa_handler = end_child_and_reraise;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      ::sigaction(kSignals[i], nullptr, &old_actions_[i]);
      if (old_actions_[i].sa_handler != SIG_IGN) ::sigaction(kSignals[i], &action, nullptr);
    }
  }
  ~ChildSignalGuard() {
    for (auto& group : g_child_groups) group = 0;
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      ::sigaction(kSignals[i], &old_actions_[i], nullptr);
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  ChildSignalGuard(const ChildSignalGuard&) = delete;
  ChildSignalGuard& operator=(const ChildSignalGuard&) = delete;
  const sigset_t& old_mask() const { return old_mask_; }
  void hold() const {
    sigset_t held;
    sigemptyset(&held);
    for (int s : kSignals) sigaddset(&held, s);
    ::pthread_sigmask(SIG_BLOCK, &held, nullptr);
  }
  // Records `child` in `slot`, then lets a held signal in.
  void started(std::size_t slot, pid_t child) const {
    g_child_groups[slot] = child;
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  void ended(std::size_t slot) const { g_child_groups[slot] = 0; }

 private:
  sigset_t old_mask_{};
  std::array<struct sigaction, 2> old_actions_{};
};

// Splits the bytes arriving on stdout into lines.
class LineSplitter {
 public:
  explicit LineSplitter(const std::function<void(std::string_view)>& on_line) : on_line_(on_line) {}
  void feed(std::string_view bytes) {
    pending_.append(bytes);
    std::size_t start = 0;
    for (auto newline = pending_.find('\n'); newline != std::string::npos;
         newline = pending_.find('\n', start)) {
      on_line_(std::string_view(pending_).substr(start, newline - start));
      start = newline + 1;
    }
    pending_.erase(0, start);
  }
  void flush() {
    if (!pending_.empty()) on_line_(pending_);
    pending_.clear();
  }

 private:
  const std::function<void(std::string_view)>& on_line_;
  std::string pending_;
};

// Starts argv with stdout and stderr into the pipes, leading its own process group.
pid_t spawn_child(const std::vector<std::string>& argv, const std::string& working_dir,
                  const Pipe& out, const Pipe& err, const sigset_t& signal_mask) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!working_dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, working_dir.c_str());
  posix_spawn_file_actions_adddup2(&actions, out.fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fds[1], STDERR_FILENO);
  std::vector<char*> c_argv;
  for (const auto& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  // The child leads its own process group so that a timeout also ends the nvdisasm it runs.
  // It gets the caller's signal mask and default SIGTERM / SIGINT handling.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setsigmask(&attributes, &signal_mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : ChildSignalGuard::kSignals) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  // cuobjdump runs nvdisasm from PATH; where cuobjdump was found outside PATH (a wheel's
  // folder), nvdisasm is beside it.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).rfind("PATH=", 0) != 0) env_strings.emplace_back(*e);
  const char* path = std::getenv("PATH");
  const std::string tool_dir = std::filesystem::path(argv[0]).parent_path().string();
  env_strings.push_back("PATH=" + (tool_dir.empty() ? std::string() : tool_dir + ":") +
                        (path ? path : "/usr/bin:/bin"));
  std::vector<char*> c_env;
  for (auto& e : env_strings) c_env.push_back(e.data());
  c_env.push_back(nullptr);
  pid_t child = -1;
  const int spawn_error =
      ::posix_spawn(&child, argv[0].c_str(), &actions, &attributes, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawn_error != 0)
    throw AuditInputError("cannot run " + argv[0] + ": " + std::strerror(spawn_error));
  return child;
}

}  // namespace

std::optional<std::string> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::string_view dirs(path);
  while (true) {
    const auto colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    const std::string candidate = dir + "/" + name;
    std::error_code error;
    if (!dir.empty() && std::filesystem::is_regular_file(candidate, error) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

namespace {

// One child of a ChildPool while it runs.
struct RunningChild {
  explicit RunningChild(ChildTask t) : task(std::move(t)), splitter(task.on_line) {}
  ChildTask task;
  LineSplitter splitter;  // holds a reference to task.on_line: the object never moves
  Pipe out;
  Pipe err;
  std::size_t slot = 0;
  pid_t child = -1;
  std::chrono::steady_clock::time_point deadline;
  ChildResult result;
  bool pipes_open() const { return out.fds[0] >= 0 || err.fds[0] >= 0; }
};

// Reads what is ready on one of the child's pipes; false once that pipe has closed.
void read_pipe(RunningChild& r, int which) {
  constexpr std::size_t kMaxStderrBytes = 64 * 1024;
  std::array<char, 1 << 16> buffer{};
  Pipe& pipe = which == 0 ? r.out : r.err;
  const ssize_t got = ::read(pipe.fds[0], buffer.data(), buffer.size());
  if (got < 0 && errno == EINTR) return;
  if (got <= 0) {
    pipe.close_end(0);
    if (which == 0) r.splitter.flush();
    return;
  }
  const std::string_view bytes(buffer.data(), static_cast<std::size_t>(got));
  if (which == 0) {
    r.splitter.feed(bytes);
  } else if (r.result.stderr_text.size() < kMaxStderrBytes) {
    r.result.stderr_text.append(bytes.substr(0, kMaxStderrBytes - r.result.stderr_text.size()));
  }
}

// Whether the child has exited (its status recorded); waits when `block`.
bool reap(RunningChild& r, bool block) {
  int status = 0;
  pid_t got = 0;
  while ((got = ::waitpid(r.child, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {}
  if (got == 0) return false;
  if (got > 0 && WIFEXITED(status)) r.result.exit_status = WEXITSTATUS(status);
  return true;
}

}  // namespace

ChildPool::ChildPool(std::size_t parallel, std::chrono::milliseconds time_limit)
    : parallel_(std::clamp<std::size_t>(parallel, 1, kMaxChildren)), time_limit_(time_limit) {}

void ChildPool::add(ChildTask task) {
  if (!task.on_line) task.on_line = [](std::string_view) {};  // its stdout is not wanted
  queue_.push_back(std::move(task));
  ++added_;
}

void ChildPool::run(const DumpProgress& progress) {
  ChildSignalGuard guard;
  std::list<RunningChild> running;
  std::array<bool, kMaxChildren> slot_used{};
  const auto end_all = [&] {
    for (RunningChild& r : running) ::kill(-r.child, SIGKILL);
    for (RunningChild& r : running) {
      reap(r, true);
      guard.ended(r.slot);
    }
    running.clear();
  };
  const auto start_next = [&] {
    running.emplace_back(std::move(queue_.front()));
    queue_.pop_front();
    RunningChild& r = running.back();
    try {
      if (r.task.prepare) r.task.prepare();
    } catch (...) {
      running.pop_back();  // no child: end_all must not see pid -1
      throw;
    }
    r.slot = static_cast<std::size_t>(std::find(slot_used.begin(), slot_used.end(), false) -
                                      slot_used.begin());
    guard.hold();
    try {
      r.child = spawn_child(r.task.argv, r.task.working_dir, r.out, r.err, guard.old_mask());
    } catch (...) {
      ::pthread_sigmask(SIG_SETMASK, &guard.old_mask(), nullptr);
      running.pop_back();
      throw;
    }
    slot_used[r.slot] = true;
    guard.started(r.slot, r.child);
    r.out.close_end(1);
    r.err.close_end(1);
    r.deadline = std::chrono::steady_clock::now() + time_limit_;
  };
  const auto finish = [&](std::list<RunningChild>::iterator it) {
    guard.ended(it->slot);
    slot_used[it->slot] = false;
    const ChildTask task = std::move(it->task);
    const ChildResult result = std::move(it->result);
    running.erase(it);
    ++finished_;
    if (task.on_exit) task.on_exit(result);  // may add tasks, may throw
  };

  const auto started = std::chrono::steady_clock::now();
  auto next_report = started + progress.every;
  try {
    while (true) {
      while (running.size() < parallel_ && !queue_.empty()) start_next();
      if (running.empty()) break;
      const auto now = std::chrono::steady_clock::now();
      if (progress.report && now >= next_report) {
        progress.report(std::chrono::duration<double>(now - started).count(), finished_, added_);
        next_report += progress.every;
      }
      // A child past its time ends here; one that closed its pipes is reaped without waiting.
      bool changed = false;
      for (auto it = running.begin(); it != running.end();) {
        const auto next = std::next(it);
        if (now >= it->deadline) {
          ::kill(-it->child, SIGKILL);
          it->result.timed_out = true;
          it->out.close_both();
          it->err.close_both();
          reap(*it, true);
          finish(it);
          changed = true;
        } else if (!it->pipes_open() && reap(*it, false)) {
          finish(it);
          changed = true;
        }
        it = next;
      }
      if (changed) continue;
      auto wait = std::chrono::milliseconds(1000);
      std::vector<pollfd> watched;
      std::vector<std::pair<RunningChild*, int>> owners;
      for (RunningChild& r : running) {
        wait =
            std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(r.deadline - now) +
                               std::chrono::milliseconds(1));
        if (!r.pipes_open()) wait = std::min(wait, std::chrono::milliseconds(10));
        for (int which = 0; which < 2; ++which) {
          const int fd = (which == 0 ? r.out : r.err).fds[0];
          if (fd < 0) continue;
          watched.push_back(pollfd{fd, POLLIN, 0});
          owners.emplace_back(&r, which);
        }
      }
      if (progress.report)
        wait = std::min(
            wait,
            std::max(std::chrono::milliseconds(1),
                     std::chrono::duration_cast<std::chrono::milliseconds>(next_report - now)));
      const int ready = ::poll(watched.data(), watched.size(), static_cast<int>(wait.count()));
      if (ready < 0 && errno != EINTR)
        throw AuditInputError(std::string("poll failed: ") + std::strerror(errno));
      for (std::size_t i = 0; ready > 0 && i < watched.size(); ++i)
        if (watched[i].revents != 0) read_pipe(*owners[i].first, owners[i].second);
    }
  } catch (...) {
    end_all();
    throw;
  }
}

ChildResult run_bounded(const std::vector<std::string>& argv,
                        const std::function<void(std::string_view line)>& on_line,
                        std::chrono::milliseconds time_limit, const DumpProgress& progress) {
  ChildResult result;
  ChildPool pool(1, time_limit);
  ChildTask task;
  task.argv = argv;
  task.on_line = on_line;
  task.on_exit = [&result](const ChildResult& r) { result = r; };
  pool.add(std::move(task));
  pool.run(progress);
  return result;
}

}  // namespace fusioncheck::audit
