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

// The process group of the running cuobjdump, for the handler below; 0 when none runs.
volatile std::sig_atomic_t g_child_group = 0;

// SIGTERM / SIGINT while cuobjdump runs: end its process group (its own, so neither Ctrl-C
// nor a signal to us reaches it), then die of the signal as without a handler.
extern "C" void end_child_and_reraise(int signal_number) {
  const pid_t group = g_child_group;
  if (group > 0) ::kill(-group, SIGKILL);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(signal_number, &default_action, nullptr);
  ::raise(signal_number);
}

// Holds SIGTERM and SIGINT from before the spawn until the child's group is known, so that
// no signal can come between the two; restores the previous handlers and mask at the end.
// A signal the caller ignores (a background job's SIGINT) stays ignored.
class ChildSignalGuard {
 public:
  static constexpr std::array<int, 2> kSignals{SIGTERM, SIGINT};
  ChildSignalGuard() {
    sigset_t held;
    sigemptyset(&held);
    for (int s : kSignals) sigaddset(&held, s);
    ::pthread_sigmask(SIG_BLOCK, &held, &old_mask_);
    struct sigaction action {};
    action.sa_handler = end_child_and_reraise;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      ::sigaction(kSignals[i], nullptr, &old_actions_[i]);
      if (old_actions_[i].sa_handler != SIG_IGN) ::sigaction(kSignals[i], &action, nullptr);
    }
  }
  ~ChildSignalGuard() {
    g_child_group = 0;
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      ::sigaction(kSignals[i], &old_actions_[i], nullptr);
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  ChildSignalGuard(const ChildSignalGuard&) = delete;
  ChildSignalGuard& operator=(const ChildSignalGuard&) = delete;
  const sigset_t& old_mask() const { return old_mask_; }
  void started(pid_t child) {
    g_child_group = child;
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);  // a held signal is delivered here
  }

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
pid_t spawn_child(const std::vector<std::string>& argv, const Pipe& out, const Pipe& err,
                  const sigset_t& signal_mask) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
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

ChildResult run_bounded(const std::vector<std::string>& argv,
                        const std::function<void(std::string_view line)>& on_line,
                        std::chrono::milliseconds time_limit, const DumpProgress& progress) {
  Pipe out;
  Pipe err;
  ChildSignalGuard signal_guard;
  const pid_t child = spawn_child(argv, out, err, signal_guard.old_mask());
  signal_guard.started(child);
  out.close_end(1);
  err.close_end(1);

  ChildResult result;
  LineSplitter splitter(on_line);
  constexpr std::size_t kMaxStderrBytes = 64 * 1024;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + time_limit;
  auto next_report = start + progress.every;
  std::array<char, 1 << 16> buffer{};
  while (out.fds[0] >= 0 || err.fds[0] >= 0) {
    const auto now = std::chrono::steady_clock::now();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    if (progress.report && now >= next_report) {
      progress.report(std::chrono::duration<double>(now - start).count());
      next_report += progress.every;
    }
    auto wait = left;
    if (progress.report)
      wait = std::min(
          wait, std::max(std::chrono::milliseconds(1),
                         std::chrono::duration_cast<std::chrono::milliseconds>(next_report - now)));
    std::array<pollfd, 2> watched{pollfd{out.fds[0], POLLIN, 0}, pollfd{err.fds[0], POLLIN, 0}};
    const int ready = ::poll(watched.data(), watched.size(), static_cast<int>(wait.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (int which = 0; which < 2; ++which) {
      if (watched[which].fd < 0 || watched[which].revents == 0) continue;
      const ssize_t got = ::read(watched[which].fd, buffer.data(), buffer.size());
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        (which == 0 ? out : err).close_end(0);
        continue;
      }
      const std::string_view bytes(buffer.data(), static_cast<std::size_t>(got));
      if (which == 0) {
        splitter.feed(bytes);
      } else if (result.stderr_text.size() < kMaxStderrBytes) {
        result.stderr_text.append(bytes.substr(0, kMaxStderrBytes - result.stderr_text.size()));
      }
    }
  }
  splitter.flush();
  if (result.timed_out) ::kill(-child, SIGKILL);  // the group of the child started above
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  return result;
}

}  // namespace fusioncheck::audit
