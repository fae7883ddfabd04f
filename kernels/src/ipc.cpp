// CUDA IPC between the ranks of a job (ipc.hpp).
#include "fusioncheck/kernels/ipc.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <optional>
#include <string>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/validate.hpp"

namespace fusioncheck::kernels {
namespace {

GpuUuid uuid_of(const cudaUUID_t& u) {
  GpuUuid out{};
  std::memcpy(out.data(), &u, out.size());
  return out;
}

// Every rank checks its peers; all agree, so that all refuse together (exit 2 everywhere)
// instead of one rank failing later inside cudaIpcOpenMemHandle or a kernel.
void check_peer_access(Bootstrap& bootstrap, int device) {
  cudaDeviceProp prop{};
  FC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const GpuUuid mine_uuid = uuid_of(prop.uuid);
  std::vector<GpuUuid> gpus(static_cast<std::size_t>(bootstrap.size()));
  bootstrap.all_gather(&mine_uuid, gpus.data(), sizeof(GpuUuid),
                       "GPU of every rank (peer-access check)");
  auto local_ordinal = [](const GpuUuid& u) -> std::optional<int> {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) return std::nullopt;
    for (int d = 0; d < count; ++d) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, d) == cudaSuccess && uuid_of(p.uuid) == u) return d;
    }
    return std::nullopt;
  };
  auto can_access = [device](int peer) {
    int can = 0;
    return cudaDeviceCanAccessPeer(&can, device, peer) == cudaSuccess && can != 0;
  };
  const std::string mine =
      peer_access_problem(bootstrap.rank(), device, gpus, local_ordinal, can_access);
  const int bad = mine.empty() ? 0 : 1;
  std::vector<int> bad_ranks(gpus.size());
  bootstrap.all_gather(&bad, bad_ranks.data(), sizeof(int), "workspace peer-access check");
  if (!mine.empty()) throw InvalidLaunch(mine);
  for (std::size_t r = 0; r < bad_ranks.size(); ++r)
    if (bad_ranks[r])
      throw InvalidLaunch("rank " + std::to_string(r) +
                          " cannot reach another rank's GPU by peer access (its error "
                          "names the pair); the workspace needs P2P between all GPUs of the job");
}

}  // namespace

PeerMappings::PeerMappings(Bootstrap& bootstrap, void* mine) {
  int device = 0;
  FC_CUDA_CHECK(cudaGetDevice(&device));
  check_peer_access(bootstrap, device);
  cudaIpcMemHandle_t handle{};
  FC_CUDA_CHECK(cudaIpcGetMemHandle(&handle, mine));
  const int n = bootstrap.size();
  std::vector<cudaIpcMemHandle_t> handles(static_cast<std::size_t>(n));
  bootstrap.all_gather(&handle, handles.data(), sizeof(handle), "workspace IPC handles");
  bases_.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    if (r == bootstrap.rank()) {
      bases_[static_cast<std::size_t>(r)] = static_cast<std::uint8_t*>(mine);
      continue;
    }
    void* p = nullptr;
    try {
      FC_CUDA_CHECK(cudaIpcOpenMemHandle(&p, handles[static_cast<std::size_t>(r)],
                                         cudaIpcMemLazyEnablePeerAccess));
    } catch (...) {
      for (void* q : opened_) (void)cudaIpcCloseMemHandle(q);
      throw;
    }
    opened_.push_back(p);
    bases_[static_cast<std::size_t>(r)] = static_cast<std::uint8_t*>(p);
  }
}

PeerMappings::~PeerMappings() {
  if (device_stuck()) return;  // closing would wait for the stuck kernel: left to the exit
  for (void* p : opened_) (void)cudaIpcCloseMemHandle(p);  // teardown must not throw
}

}  // namespace fusioncheck::kernels
