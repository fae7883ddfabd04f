#pragma once
// MPI behind one small class: rank, size, all-gather and barrier, every wait bounded.
// A collective that does not complete within the timeout throws MpiTimeout naming what was
// awaited, so a vanished or hung rank ends the run with a diagnosis instead of a hang.
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace fusioncheck::mpi {

struct MpiTimeout : std::runtime_error {
  explicit MpiTimeout(const std::string& what) : std::runtime_error(what) {}
};

class MpiComm {
 public:
  // Initialises MPI if nobody has; finalises in the destructor only if it initialised.
  MpiComm(int* argc, char*** argv, std::chrono::milliseconds timeout);
  ~MpiComm();
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ranks on this node, and this rank's index among them (local rank -> GPU).
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // recv holds size() * bytes; rank r's bytes land at offset r * bytes.
  void all_gather(const void* send, void* recv, std::size_t bytes, const char* what);
  void barrier(const char* what);
  // Every rank learns every rank's value; used to agree on verdicts and seeds.
  std::vector<long long> all_gather_value(long long value, const char* what);
  // recv (root only) holds size() * bytes; rank r's bytes land at offset r * bytes.
  void gather(const void* send, void* recv, std::size_t bytes, int root, const char* what);
  void broadcast(void* data, std::size_t bytes, int root, const char* what);

  // Ends every rank of the job: the last resort after a diagnosis was printed.
  [[noreturn]] void abort(int exit_code);

 private:
  void wait_bounded(void* request, const char* what);

  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  bool owns_init_ = false;
  std::chrono::milliseconds timeout_;
};

}  // namespace fusioncheck::mpi
