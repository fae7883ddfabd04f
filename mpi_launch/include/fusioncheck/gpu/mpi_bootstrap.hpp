#pragma once
// The kernels' Bootstrap over MPI: IPC handles and barriers travel through MpiComm's
// bounded collectives, so a missing peer ends in MpiTimeout, not a hang.
#include "fusioncheck/cli/mpi_comm.hpp"
#include "fusioncheck/kernels/workspace.hpp"

namespace fusioncheck::gpu {

class MpiBootstrap final : public kernels::Bootstrap {
 public:
  explicit MpiBootstrap(mpi::MpiComm& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void all_gather(const void* send, void* recv, std::size_t bytes, const char* what) override {
    comm_.all_gather(send, recv, bytes, what);
  }
  void barrier(const char* what) override { comm_.barrier(what); }

 private:
  mpi::MpiComm& comm_;
};

}  // namespace fusioncheck::gpu
