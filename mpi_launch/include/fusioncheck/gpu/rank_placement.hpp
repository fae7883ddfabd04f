#pragma once
// One rank's view of the GPU job: which device it drives, whether ranks share a GPU, and
// whether MPS is running (without it, ranks sharing a GPU are time-sliced: every Lamport
// exchange round then costs a scheduler time slice, about 2 ms on the H200).
#include <filesystem>
#include <string>
#include <vector>

#include "fusioncheck/mpi/mpi_comm.hpp"

namespace fusioncheck::gpu {

struct GpuPlacement {
  int device = 0;
  int device_count = 0;
  bool ranks_share_gpu = false;  // more ranks on this node than GPUs
  bool mps_running = false;
  std::string device_name;
  int compute_capability = 0;  // major * 10 + minor
  int cpu_threads = 1;         // OpenMP threads of this rank's CPU checks
  int sm_count = 0;            // SMs this rank's context sees
  int sm_percent = 0;          // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE set for this rank (0: none)
};

// Whether an MPS control daemon or server process is running (looked up in `proc`).
bool mps_daemon_running(const std::filesystem::path& proc = "/proc");

// Before MPI and CUDA start in this process (CUDA reads the variable when it initialises):
// where the ranks of this node will share GPUs under MPS, gives each rank's CUDA context an
// equal share of the SMs, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 / ranks per GPU. Ranks per
// node come from the launcher's environment (OpenMPI, MPICH, Slurm), GPUs from
// CUDA_VISIBLE_DEVICES or proc/driver/nvidia/gpus. A value the user set is kept. Returns the
// share set, 0 if none.
int share_sms_before_cuda(const std::filesystem::path& proc = "/proc");

// Before CUDA starts in this process: CUDA_DEVICE_MAX_CONNECTIONS, the hardware queues for
// its streams (the runtime's default is 8), so that the host's release copies, on a stream of
// their own, do not wait in a queue behind a kernel they are to release. Under MPS a GPU's
// clients share one pool of queues, each keeping its own: 96 per GPU in all (4 ranks of 32
// each, or 8 of 16, did not get through their start; 8 of 8 held the copy-engine ring's release
// back; docs/results.md), at most 32 per rank, and the default where that leaves 8 or fewer
// (12 or more ranks per GPU). Ranks and GPUs as
// share_sms_before_cuda counts them; a value the user set is kept. Returns the count set, 0 if
// none.
int hardware_queues_before_cuda(const std::filesystem::path& proc = "/proc");

// The first checks of every job, before any collective or CUDA work. A single process that
// no MPI launcher started (no OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK or SLURM_NTASKS in its
// environment) is told to run under mpirun -np N, N one of `counts` (e.g. "2, 4, 8 or 16").
// Throws BadInput.
void require_launcher(mpi::MpiComm& comm, const std::string& counts);
// "2, 4, 6 or 8".
std::string rank_count_list(const std::vector<int>& counts);
// require_launcher, then the job's size among the rank counts the kernel runs at
// (KernelChoice::rank_counts): BadInput naming them otherwise.
struct KernelChoice;
void require_rank_count(mpi::MpiComm& comm, const KernelChoice& kernel);
// Why ranks on these hosts (one name per rank) cannot run one job: "" on one node; else a line
// naming the nodes and what a multi-node run needs (docs/design.md, "Beyond one node").
std::string multi_node_problem(const std::vector<std::string>& hosts);
// Before CUDA starts: every module is loaded when the context is made. Loaded lazily, a
// kernel's first launch waits until every kernel of the context has finished; beside another
// project's kernel whose polls have no bound (a hung negative control), that launch would
// never return and the hang could not be released.
void load_modules_eagerly_before_cuda();
// A CUDA device is visible to this process; BadInput "no CUDA device here: ..." otherwise.
void require_cuda_device();

// Binds this rank to GPU (local rank mod GPU count). Throws BadInput without a GPU.
// share_sms: the kernel sizes its grid from the SM count and spins (another project's), so
// ranks sharing a GPU under MPS need a share of the SMs each (share_sms_before_cuda), else
// their grids cannot all be resident: BadInput naming the setting when there is none.
GpuPlacement place_rank_on_gpu(const mpi::MpiComm& comm, bool share_sms = false);

// One line for the run's header.
std::string describe(const GpuPlacement& placement, int ranks);

}  // namespace fusioncheck::gpu

namespace fusioncheck::gpu {
struct RunConfig;
// Collective: every rank's configuration must equal rank 0's. On a mismatch every rank
// throws BadInput naming the fields that differ (and their values on each rank).
void agree_on_config(mpi::MpiComm& comm, const RunConfig& mine);
}  // namespace fusioncheck::gpu
