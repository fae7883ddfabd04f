#pragma once
// The kernels' Bootstrap over MPI: IPC handles and barriers travel through MpiComm's
// bounded collectives, so a missing peer ends in MpiTimeout, not a hang.
#include "fusioncheck/mpi/mpi_comm.hpp"
#include "fusioncheck/kernels/comm_bootstrap.hpp"

namespace fusioncheck::gpu {

using MpiBootstrap = kernels::CommBootstrap<mpi::MpiComm>;

}  // namespace fusioncheck::gpu
