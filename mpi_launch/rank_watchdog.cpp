#include "fusioncheck/mpi/rank_watchdog.hpp"

#include "fusioncheck/mpi/mpi_comm.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <csignal>
#include <functional>
#include <string>

namespace fusioncheck::mpi {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<const char*> g_phase{"starting"};
std::atomic<long long> g_phase_since{0};  // Clock ticks

bool process_gone(long long pid) { return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// The SIGTERM handler's view of the peers: fixed arrays, filled before it is installed.
constexpr int kMaxPeers = 64;
int g_term_rank = 0;
int g_term_count = 0;
int g_term_ranks[kMaxPeers];
long long g_term_pids[kMaxPeers];

// Async-signal-safe text building.
// The exit code of a rank leaving quietly (quiet_terminate_report), or -1.
volatile std::sig_atomic_t g_term_quiet_exit = -1;

void append(char* buf, std::size_t& len, std::size_t cap, const char* text) {
  while (*text != '\0' && len + 1 < cap) buf[len++] = *text++;
}
void append_number(char* buf, std::size_t& len, std::size_t cap, long long v) {
  char digits[24];
  int n = 0;
  if (v < 0) {
    append(buf, len, cap, "-");
    v = -v;
  }
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 23);
  while (n > 0 && len + 1 < cap) buf[len++] = digits[--n];
}

void on_terminate(int) {
  // This rank is leaving on bad input that rank 0 reports: the launcher's SIGTERM adds nothing.
  if (g_term_quiet_exit >= 0) _exit(g_term_quiet_exit);
  char msg[1024];
  std::size_t len = 0;
  append(msg, len, sizeof msg, "fusioncheck: rank ");
  append_number(msg, len, sizeof msg, g_term_rank);
  append(msg, len, sizeof msg, ": terminated by the launcher");
  int gone = 0;
  for (int i = 0; i < g_term_count; ++i) {
    if (!process_gone(g_term_pids[i])) continue;
    append(msg, len, sizeof msg, gone++ == 0 ? "; vanished: rank " : ", rank ");
    append_number(msg, len, sizeof msg, g_term_ranks[i]);
    append(msg, len, sizeof msg, " (pid ");
    append_number(msg, len, sizeof msg, g_term_pids[i]);
    append(msg, len, sizeof msg, ")");
  }
  if (gone == 0) append(msg, len, sizeof msg, " (a peer rank exited or was killed)");
  append(msg, len, sizeof msg, "\n");
  [[maybe_unused]] auto n = write(STDERR_FILENO, msg, len);
  _exit(1);
}

}  // namespace

void set_phase(const char* what) {
  g_phase.store(what, std::memory_order_relaxed);
  g_phase_since.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
}

const char* current_phase() { return g_phase.load(std::memory_order_relaxed); }

void RankWatchdog::exit_with_message(int rank, const std::string& why) {
  std::fprintf(stderr, "fusioncheck: rank %d: %s\n", rank, why.c_str());
  std::fflush(stderr);
  _exit(1);
}

RankWatchdog::RankWatchdog(int rank, std::vector<PeerProcess> peers,
                           std::chrono::milliseconds stall_limit, Fire fire,
                           std::chrono::milliseconds period)
    : rank_(rank), peers_(std::move(peers)), stall_limit_(stall_limit), fire_(std::move(fire)),
      period_(period) {
  set_phase("starting");
  thread_ = std::thread([this] { watch(); });
}

RankWatchdog::~RankWatchdog() { stop(); }

void RankWatchdog::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::string vanished_peers(const std::vector<PeerProcess>& peers) {
  std::string out;
  for (const auto& p : peers)
    if (process_gone(p.pid))
      out += (out.empty() ? "rank " : ", rank ") + std::to_string(p.rank) + " (pid " +
             std::to_string(p.pid) + ")";
  return out;
}

void RankWatchdog::watch() {
  std::string seen_gone;  // a vanish must be seen twice: a peer that just finished is not one
  while (!stop_.load()) {
    std::this_thread::sleep_for(period_);
    if (stop_.load()) return;
    const std::string gone = vanished_peers(peers_);
    const std::string phase = current_phase();
    if (!gone.empty() && gone == seen_gone) {
      fire_("peer process vanished: " + gone + "; this rank was in: " + phase);
      return;
    }
    seen_gone = gone;
    const Clock::time_point since{Clock::duration(g_phase_since.load(std::memory_order_acquire))};
    const auto stalled =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since);
    if (stalled > stall_limit_) {
      fire_("no progress for " + std::to_string(stalled.count() / 1000.0).substr(0, 5) +
            " s in: " + phase);
      return;
    }
  }
}

void quiet_terminate_report(int exit_code) { g_term_quiet_exit = exit_code; }

void install_terminate_report(int rank, const std::vector<PeerProcess>& peers) {
  g_term_rank = rank;
  g_term_count = 0;
  for (const auto& p : peers)
    if (g_term_count < kMaxPeers) {
      g_term_ranks[g_term_count] = p.rank;
      g_term_pids[g_term_count] = p.pid;
      ++g_term_count;
    }
  std::signal(SIGTERM, on_terminate);
}

std::vector<PeerProcess> peers_on_this_host(MpiComm& comm) {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  const auto host = static_cast<long long>(std::hash<std::string>{}(name)&0x7fffffffffffffffLL);
  const auto pids = comm.all_gather_value(static_cast<long long>(getpid()), "process ids");
  const auto hosts = comm.all_gather_value(host, "host ids");
  std::vector<PeerProcess> peers;
  const auto me = static_cast<std::size_t>(comm.rank());
  for (std::size_t r = 0; r < pids.size(); ++r)
    if (r != me && hosts[r] == hosts[me]) peers.push_back({static_cast<int>(r), pids[r]});
  return peers;
}

}  // namespace fusioncheck::mpi
