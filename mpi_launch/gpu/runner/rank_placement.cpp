#include "fusioncheck/gpu/rank_placement.hpp"

#include <cuda_runtime.h>
#include <unistd.h>
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"

namespace fusioncheck::gpu {
namespace {

// The MPS control daemon listens on a pipe in CUDA_MPS_PIPE_DIRECTORY (default
// /tmp/nvidia-mps); clients attach through it. The pipe outlives `quit`, so a daemon
// process must be running too.
bool mps_control_pipe_exists() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::filesystem::path pipe_dir = dir ? dir : "/tmp/nvidia-mps";
  std::error_code ec;
  return std::filesystem::exists(pipe_dir / "control", ec);
}

}  // namespace

bool mps_daemon_running(const std::filesystem::path& proc) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(proc, ec)) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    // "nvidia-cuda-mps-control" and "-server" both read "nvidia-cuda-mps" (15 characters).
    if (comm && std::getline(comm, name) && name.rfind("nvidia-cuda-mps", 0) == 0) return true;
  }
  return false;
}

int ranks_per_node_from_launcher() {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(name); v != nullptr && std::atoi(v) > 0) return std::atoi(v);
  return 0;
}

int visible_gpus(const std::filesystem::path& proc) {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v != nullptr) {
    const std::string list(v);
    return list.empty() ? 0 : static_cast<int>(std::count(list.begin(), list.end(), ',')) + 1;
  }
  int gpus = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(proc / "driver/nvidia/gpus", ec)) {
    (void)entry;
    ++gpus;
  }
  return gpus;
}

int share_sms_before_cuda(const std::filesystem::path& proc) {
  if (std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") != nullptr) return 0;  // the user's choice
  const int ranks = ranks_per_node_from_launcher();
  const int gpus = visible_gpus(proc);
  if (ranks <= 0 || gpus <= 0 || ranks <= gpus || !mps_daemon_running(proc)) return 0;
  const int percent = 100 / ((ranks + gpus - 1) / gpus);
  setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(percent).c_str(), 1);
  return percent;
}

int hardware_queues_before_cuda(const std::filesystem::path& proc) {
  if (std::getenv("CUDA_DEVICE_MAX_CONNECTIONS") != nullptr) return 0;  // the user's choice
  // The queues of one GPU's ranks together: 96 ran at 4, 6 and 8 ranks, 128 stopped jobs.
  constexpr int kQueuesPerGpu = 96, kMostPerRank = 32, kRuntimeDefault = 8;
  const int ranks = std::max(1, ranks_per_node_from_launcher());
  const int gpus = std::max(1, visible_gpus(proc));
  const int queues = std::min(kMostPerRank, kQueuesPerGpu / ((ranks + gpus - 1) / gpus));
  if (queues <= kRuntimeDefault) return 0;
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(queues).c_str(), 1);
  return queues;
}

namespace {
bool launcher_environment() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return true;
  return false;
}
// Read when the program loads: MPI_Init of a process started alone sets PMIX_RANK itself.
const bool kStartedByLauncher = launcher_environment();
}  // namespace

void load_modules_eagerly_before_cuda() { setenv("CUDA_MODULE_LOADING", "EAGER", 1); }

std::string multi_node_problem(const std::vector<std::string>& hosts) {
  std::map<std::string, int> ranks_on;
  for (const std::string& host : hosts) ++ranks_on[host];
  if (ranks_on.size() <= 1) return "";
  std::string nodes;
  for (const auto& [host, ranks] : ranks_on)
    nodes += fmt::format("{}{} ({} rank{})", nodes.empty() ? "" : ", ", host, ranks,
                         ranks == 1 ? "" : "s");
  return fmt::format(
      "the ranks are on {} nodes: {}; the workspace is shared through CUDA IPC, which ends at the "
      "node (a run across nodes needs fabric handles: docs/design.md, \"Beyond one node\"). Run "
      "one node per job; ci/gpu_suite.sh HOSTFILE=FILE runs the suite on every node of an "
      "allocation",
      ranks_on.size(), nodes);
}

std::string rank_count_list(const std::vector<int>& counts) {
  std::string text;
  for (std::size_t i = 0; i < counts.size(); ++i)
    text += (i == 0 ? "" : i + 1 == counts.size() ? " or " : ", ") + std::to_string(counts[i]);
  return text;
}

void require_rank_count(mpi::MpiComm& comm, const KernelChoice& kernel) {
  const std::string counts = rank_count_list(kernel.rank_counts);
  require_launcher(comm, counts);
  const auto& all = kernel.rank_counts;
  if (std::find(all.begin(), all.end(), comm.size()) == all.end())
    throw BadInput(
        fmt::format("{} ranks: --kernel {} runs on {} ranks", comm.size(), kernel.name, counts));
}

void require_launcher(mpi::MpiComm& comm, const std::string& counts) {
  if (comm.size() == 1 && !kStartedByLauncher)  // mpirun -np 1: its own message
    throw BadInput("the gpu commands run one process per rank: start them with mpirun -np N (N = " +
                   counts + ")");
  if (comm.local_size() == comm.size()) return;  // one node (every rank sees the same)
  constexpr std::size_t kHostBytes = 256;
  std::string mine(kHostBytes, '\0');
  if (::gethostname(mine.data(), kHostBytes - 1) != 0) mine = "unknown host";
  mine.resize(kHostBytes, '\0');
  std::vector<char> all(kHostBytes * static_cast<std::size_t>(comm.size()));
  comm.all_gather(mine.data(), all.data(), kHostBytes, "the ranks' host names");
  std::vector<std::string> hosts;
  for (int r = 0; r < comm.size(); ++r)
    hosts.emplace_back(all.data() + kHostBytes * static_cast<std::size_t>(r));
  std::string why = multi_node_problem(hosts);
  if (why.empty())  // host names alike, yet MPI puts the ranks on several shared-memory domains
    why = fmt::format(
        "{} of {} ranks share this node's memory: the workspace is shared through "
        "CUDA IPC, which needs every rank on one node",
        comm.local_size(), comm.size());
  throw BadInput(why);
}

// The same line on every rank of a node without a GPU (printed once, by rank 0).
void require_cuda_device() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess)
    throw BadInput(
        std::string("no CUDA device here: ") + cudaGetErrorString(error) +
        " (fusioncheck gpu runs the kernels on NVIDIA GPUs; the sim and audit need none)");
  if (count == 0)
    throw BadInput("no CUDA device here: cudaGetDeviceCount found none (CUDA_VISIBLE_DEVICES?)");
}

GpuPlacement place_rank_on_gpu(const mpi::MpiComm& comm, bool share_sms) {
  GpuPlacement placement;
  require_cuda_device();
  if (cudaGetDeviceCount(&placement.device_count) != cudaSuccess || placement.device_count == 0)
    throw BadInput("no CUDA device here");
  placement.device = comm.local_rank() % placement.device_count;
  placement.ranks_share_gpu = comm.local_size() > placement.device_count;
  placement.mps_running = mps_control_pipe_exists() && mps_daemon_running();
  if (const char* set = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"); set != nullptr)
    placement.sm_percent = std::atoi(set);
  // A kernel that sizes its grid from the SM count and spins cannot share a GPU with its
  // peers' grids unless each has a share (share_sms_before_cuda sets it where it can).
  if (share_sms && placement.ranks_share_gpu && placement.mps_running &&
      placement.sm_percent == 0) {
    const int ranks_per_gpu =
        (comm.local_size() + placement.device_count - 1) / placement.device_count;
    throw BadInput(fmt::format(
        "ranks share a GPU under MPS and this kernel sizes its grid from the SM count: give "
        "each rank a share, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={} (mpirun -x)",
        100 / ranks_per_gpu));
  }
  if (cudaSetDevice(placement.device) != cudaSuccess)
    throw BadInput("cannot select GPU " + std::to_string(placement.device));
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, placement.device);
  placement.device_name = prop.name;
  placement.sm_count = prop.multiProcessorCount;  // under an MPS share: the share
  placement.compute_capability = prop.major * 10 + prop.minor;
#ifdef _OPENMP
  // The CPU checks (inputs, tolerances) run on OpenMP threads; ranks on a node share its cores.
  placement.cpu_threads = std::max(1, omp_get_num_procs() / std::max(1, comm.local_size()));
  omp_set_num_threads(placement.cpu_threads);
#endif
  return placement;
}

std::string describe(const GpuPlacement& p, int ranks) {
  std::string sharing = "one rank per GPU";
  if (p.ranks_share_gpu)
    sharing = p.mps_running ? "ranks share GPUs under MPS (concurrent)"
                            : "ranks share GPUs WITHOUT MPS (time-sliced: latencies are "
                              "scheduler slices, not kernel times)";
  if (p.sm_percent > 0)
    sharing +=
        fmt::format(", each rank limited to {} % of the GPU ({} SMs)", p.sm_percent, p.sm_count);
  return fmt::format("{} ranks on {} GPU(s) ({}, sm_{}); {}; CPU checks on {} thread(s) per rank",
                     ranks, p.device_count, p.device_name, p.compute_capability, sharing,
                     p.cpu_threads);
}

}  // namespace fusioncheck::gpu

#include "fusioncheck/gpu/gpu_case.hpp"

namespace fusioncheck::gpu {

void agree_on_config(mpi::MpiComm& comm, const RunConfig& mine) {
  constexpr std::size_t kBytes = 2048;
  std::string text;
  for (const auto& [name, value] : named_fields(mine)) text += name + "=" + value + "\n";
  if (text.size() >= kBytes) throw BadInput("run configuration too long to compare");
  text.resize(kBytes, '\0');
  std::vector<char> all(kBytes * static_cast<std::size_t>(comm.size()));
  comm.all_gather(text.data(), all.data(), kBytes, "configuration agreement");
  auto fields_of = [&](int r) {
    std::vector<std::string> lines;
    std::string block(all.data() + kBytes * static_cast<std::size_t>(r));
    for (std::size_t pos = 0, nl; (nl = block.find('\n', pos)) != std::string::npos; pos = nl + 1)
      lines.push_back(block.substr(pos, nl - pos));
    return lines;
  };
  const auto root = fields_of(0);
  std::string differences;
  for (int r = 1; r < comm.size(); ++r) {
    const auto other = fields_of(r);
    for (std::size_t i = 0; i < root.size() && i < other.size(); ++i)
      if (root[i] != other[i])
        differences +=
            fmt::format("{}{} (rank 0: {}, rank {}: {})", differences.empty() ? "" : "; ",
                        root[i].substr(0, root[i].find('=')), root[i].substr(root[i].find('=') + 1),
                        r, other[i].substr(other[i].find('=') + 1));
  }
  if (!differences.empty())
    throw BadInput("ranks disagree on the run configuration: " + differences);
}

}  // namespace fusioncheck::gpu
