// MpiComm under mpirun: collectives deliver every rank's data, and a wait on a rank that
// never arrives ends in MpiTimeout within the bound instead of hanging.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <thread>

#include "fusioncheck/mpi/mpi_comm.hpp"

namespace {
fusioncheck::mpi::MpiComm* g_comm = nullptr;
using namespace std::chrono_literals;
}  // namespace

TEST(MpiComm, AllGatherDeliversEveryRanksBytes) {
  auto& comm = *g_comm;
  ASSERT_GE(comm.size(), 2) << "run under mpirun -np 2 or more";
  const long long mine = 1000 + comm.rank();
  const auto all = comm.all_gather_value(mine, "test all-gather");
  ASSERT_EQ(static_cast<int>(all.size()), comm.size());
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], 1000 + r);
}

TEST(MpiComm, BroadcastFromRootReachesAll) {
  auto& comm = *g_comm;
  int value = comm.rank() == 0 ? 4242 : -1;
  comm.broadcast(&value, sizeof(value), 0, "test broadcast");
  EXPECT_EQ(value, 4242);
}

// Rank 0 enters a barrier that the other ranks join only after a pause longer than rank 0's
// timeout: rank 0 must give up with MpiTimeout within its bound instead of hanging.
TEST(MpiComm, BarrierWithMissingRankTimesOut) {
  auto& comm = *g_comm;
  const auto saved = comm.timeout();
  if (comm.rank() == 0) {
    comm.set_timeout(200ms);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(comm.barrier("the lonely barrier"), fusioncheck::mpi::MpiTimeout);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    comm.set_timeout(saved);
  } else {
    std::this_thread::sleep_for(1500ms);
    comm.barrier("joining the lonely barrier late");
  }
  comm.all_gather_value(0, "rendezvous after the timeout");
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  fusioncheck::mpi::MpiComm comm(&argc, &argv, 30s);
  g_comm = &comm;
  // Only rank 0 prints; every rank's verdict decides the exit code.
  if (comm.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  const auto verdicts = comm.all_gather_value(failed, "test verdicts");
  return std::accumulate(verdicts.begin(), verdicts.end(), 0LL) == 0 ? 0 : 1;
}
