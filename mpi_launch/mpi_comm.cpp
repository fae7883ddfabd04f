#include "fusioncheck/mpi/mpi_comm.hpp"
#include "fusioncheck/mpi/rank_watchdog.hpp"

#include <mpi.h>

#include <cstdlib>
#include <thread>

namespace fusioncheck::mpi {

MpiComm::MpiComm(int* argc, char*** argv, std::chrono::milliseconds timeout) : timeout_(timeout) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    MPI_Init(argc, argv);
    owns_init_ = true;
  }
  // Errors come back as return codes, so a failure can be reported instead of aborting.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node_comm;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm);
  MPI_Comm_rank(node_comm, &local_rank_);
  MPI_Comm_size(node_comm, &local_size_);
  MPI_Comm_free(&node_comm);
}

MpiComm::~MpiComm() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (owns_init_ && !finalised) MPI_Finalize();
}

// Polls the request until it completes or the timeout passes. Never blocks inside MPI.
// Spins for the first few milliseconds (ranks usually arrive within microseconds of each
// other, and a sleep costs ~60 us of timer slack each time), then backs off to 1 ms sleeps.
void MpiComm::wait_bounded(void* request_ptr, const char* what) {
  auto* request = static_cast<MPI_Request*>(request_ptr);
  set_phase(what);
  const auto start = std::chrono::steady_clock::now();
  const auto spin_until = start + std::chrono::milliseconds(5);
  const auto deadline = start + timeout_;
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    int done = 0;
    if (MPI_Test(request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      throw MpiTimeout(std::string("MPI error while waiting for ") + what + " on rank " +
                       std::to_string(rank_));
    if (done) return;
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline)
      throw MpiTimeout("rank " + std::to_string(rank_) + " waited " +
                       std::to_string(timeout_.count()) + " ms for " + what +
                       ": a peer rank is missing or hung");
    if (now < spin_until) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(1)) pause *= 2;
  }
}

void MpiComm::all_gather(const void* send, void* recv, std::size_t bytes, const char* what) {
  MPI_Request request;
  MPI_Iallgather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE,
                 MPI_COMM_WORLD, &request);
  wait_bounded(&request, what);
}

void MpiComm::gather(const void* send, void* recv, std::size_t bytes, int root, const char* what) {
  MPI_Request request;
  MPI_Igather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE,
              root, MPI_COMM_WORLD, &request);
  wait_bounded(&request, what);
}

void MpiComm::barrier(const char* what) {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  wait_bounded(&request, what);
}

std::vector<long long> MpiComm::all_gather_value(long long value, const char* what) {
  std::vector<long long> values(static_cast<std::size_t>(size_));
  all_gather(&value, values.data(), sizeof(value), what);
  return values;
}

void MpiComm::broadcast(void* data, std::size_t bytes, int root, const char* what) {
  MPI_Request request;
  MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request);
  wait_bounded(&request, what);
}

void MpiComm::abort(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::abort();
}

}  // namespace fusioncheck::mpi
