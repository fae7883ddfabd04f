// The rank watchdog and the SIGTERM report, without MPI: peers are child processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "fusioncheck/mpi/rank_watchdog.hpp"

namespace {

namespace fm = fusioncheck::mpi;
using namespace std::chrono_literals;

pid_t spawn_sleeper() {
  const pid_t pid = fork();
  if (pid == 0)
    for (;;) pause();
  return pid;
}

void end_child(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// Collects what the watchdog says instead of exiting.
struct Fired {
  std::mutex m;
  std::string why;
  bool fired = false;
  fm::RankWatchdog::Fire callback() {
    return [this](const std::string& w) {
      std::lock_guard lock(m);
      why = w;
      fired = true;
    };
  }
  bool wait_for(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      {
        std::lock_guard lock(m);
        if (fired) return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
};

TEST(RankWatchdog, NamesAVanishedPeerAndThePhase) {
  const pid_t peer = spawn_sleeper();
  Fired f;
  fm::RankWatchdog dog(0, {{1, peer}}, 60s, f.callback(), 50ms);
  fm::set_phase("test: waiting for the kernels");
  end_child(peer);
  ASSERT_TRUE(f.wait_for(2s)) << "the watchdog did not notice the vanished peer";
  EXPECT_NE(f.why.find("rank 1 (pid " + std::to_string(peer) + ")"), std::string::npos) << f.why;
  EXPECT_NE(f.why.find("test: waiting for the kernels"), std::string::npos) << f.why;
}

TEST(RankWatchdog, LivePeerIsNotReported) {
  const pid_t peer = spawn_sleeper();
  Fired f;
  {
    fm::RankWatchdog dog(0, {{1, peer}}, 60s, f.callback(), 50ms);
    fm::set_phase("test: working");
    EXPECT_FALSE(f.wait_for(500ms)) << f.why;
  }
  end_child(peer);
}

TEST(RankWatchdog, ReportsAStalledPhase) {
  Fired f;
  fm::RankWatchdog dog(0, {}, 200ms, f.callback(), 50ms);
  fm::set_phase("test: stuck in cudaStreamSynchronize");
  ASSERT_TRUE(f.wait_for(2s)) << "the watchdog did not notice the stall";
  EXPECT_NE(f.why.find("no progress for"), std::string::npos) << f.why;
  EXPECT_NE(f.why.find("test: stuck in cudaStreamSynchronize"), std::string::npos) << f.why;
}

TEST(RankWatchdog, ProgressIsNotAStall) {
  Fired f;
  fm::RankWatchdog dog(0, {}, 300ms, f.callback(), 50ms);
  const auto end = std::chrono::steady_clock::now() + 1s;
  while (std::chrono::steady_clock::now() < end) {
    fm::set_phase("test: one call after another");
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_FALSE(f.fired) << f.why;
}

TEST(RankWatchdog, StoppedWatchdogStaysQuiet) {
  const pid_t peer = spawn_sleeper();
  Fired f;
  fm::RankWatchdog dog(0, {{1, peer}}, 100ms, f.callback(), 50ms);
  dog.stop();
  end_child(peer);
  EXPECT_FALSE(f.wait_for(400ms)) << f.why;
}

// Runs install_terminate_report + SIGTERM in a child; returns its exit status and stderr.
std::pair<int, std::string> terminate_child(bool peer_alive) {
  const pid_t peer = spawn_sleeper();
  if (!peer_alive) end_child(peer);
  int pipefd[2];
  if (pipe(pipefd) != 0) return {-1, "pipe failed"};
  const pid_t child = fork();
  if (child == 0) {
    dup2(pipefd[1], STDERR_FILENO);
    fm::install_terminate_report(0, {{3, peer}});
    raise(SIGTERM);
    _exit(99);  // not reached: the handler exits 1
  }
  close(pipefd[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(pipefd[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<std::size_t>(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (peer_alive) end_child(peer);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          text + " [peer pid " + std::to_string(peer) + "]"};
}

TEST(TerminateReport, NamesTheVanishedPeer) {
  const auto [rc, text] = terminate_child(false);
  EXPECT_EQ(rc, 1) << text;
  EXPECT_NE(text.find("fusioncheck: rank 0: terminated by the launcher; vanished: rank 3 (pid "),
            std::string::npos)
      << text;
}

TEST(TerminateReport, LivePeerIsNotNamed) {
  const auto [rc, text] = terminate_child(true);
  EXPECT_EQ(rc, 1) << text;
  EXPECT_EQ(text.find("vanished"), std::string::npos) << text;
  EXPECT_NE(text.find("a peer rank exited or was killed"), std::string::npos) << text;
}

}  // namespace
