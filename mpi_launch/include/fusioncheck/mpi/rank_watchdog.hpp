#pragma once
// A rank that cannot finish must say why and exit, wherever its main thread is stuck
// (inside a CUDA call, say, where no MPI timeout can fire). Two mechanisms:
//   * RankWatchdog: a thread that ends the rank when a peer process on this host vanished,
//     or when the main thread has sat in one phase longer than the stall limit. It names
//     the vanished ranks and the phase the rank was in.
//   * install_terminate_report: the SIGTERM a launcher sends when a peer died is answered
//     with the same naming (async-signal-safe), then exit 1.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace fusioncheck::mpi {

// What this rank's main thread is doing now, for the diagnosis. `what` must outlive the
// phase (a string literal, or a string that lives as long as the run). Resets the stall clock.
void set_phase(const char* what);
const char* current_phase();

struct PeerProcess {
  int rank = 0;
  long long pid = 0;  // a process on this host
};

// "rank 1 (pid 1234), rank 3 (pid 1240)" for the peers whose process is gone; "" if none.
std::string vanished_peers(const std::vector<PeerProcess>& peers);

class RankWatchdog {
 public:
  using Fire = std::function<void(const std::string& why)>;
  // The default reaction: print "fusioncheck: rank R: <why>" to stderr and _exit(1).
  static void exit_with_message(int rank, const std::string& why);

  RankWatchdog(int rank, std::vector<PeerProcess> peers, std::chrono::milliseconds stall_limit,
               Fire fire, std::chrono::milliseconds period = std::chrono::milliseconds(250));
  ~RankWatchdog();
  RankWatchdog(const RankWatchdog&) = delete;
  RankWatchdog& operator=(const RankWatchdog&) = delete;
  // Stops watching (the job ended on every rank); idempotent.
  void stop();

 private:
  void watch();

  int rank_;
  std::vector<PeerProcess> peers_;
  std::chrono::milliseconds stall_limit_;
  Fire fire_;
  std::chrono::milliseconds period_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class MpiComm;
// Collective: the other ranks whose processes run on this host (a pid elsewhere means
// nothing here), for the watchdog and the terminate report.
std::vector<PeerProcess> peers_on_this_host(MpiComm& comm);

// SIGTERM (mpirun's reaction to a dead rank): print which peers vanished, exit 1.
void install_terminate_report(int rank, const std::vector<PeerProcess>& peers);
// From now on the launcher's SIGTERM ends this rank at once with `exit_code` and no line: the
// rank is leaving on bad input that rank 0 reports for every rank.
void quiet_terminate_report(int exit_code);

}  // namespace fusioncheck::mpi
