#pragma once
// Adapts any communicator with the shape of fusioncheck::mpi::MpiComm (rank(), size(),
// all_gather(send, recv, bytes, what), barrier(what)) to the workspace's Bootstrap, so the
// kernels do not depend on MPI:  CommBootstrap<mpi::MpiComm> boot(comm);
//                                auto ws = Workspace::create_ipc(boot, config);
#include <cstddef>

#include "fusioncheck/kernels/workspace.hpp"

namespace fusioncheck::kernels {

template <class Comm> class CommBootstrap final : public Bootstrap {
 public:
  explicit CommBootstrap(Comm& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void all_gather(const void* send, void* recv, std::size_t bytes, const char* what) override {
    comm_.all_gather(send, recv, bytes, what);
  }
  void barrier(const char* what) override { comm_.barrier(what); }

 private:
  Comm& comm_;
};

}  // namespace fusioncheck::kernels
