// Workspace allocation, initialisation, IPC exchange and teardown (workspace.hpp).
#include "fusioncheck/kernels/workspace.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/ipc.hpp"
#include "device_workspace.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/kernels/validate.hpp"

namespace fusioncheck::kernels {
// Byte layout of the allocation every peer sees (one cudaMalloc, one IPC handle):
// [guard][Lamport 3 x comm_size][guard][two-shot data][guard][barrier flags][guard].
// Not in the anonymous namespace: Workspace::Impl, a class of the header, holds one.
namespace workspace_detail {
struct SharedLayout {
  std::uint64_t lamport, guard1, twoshot, guard2, barrier, guard3, total;
};
}  // namespace workspace_detail
using workspace_detail::SharedLayout;

namespace {

constexpr std::uint64_t kGuardBytes = 256;

SharedLayout shared_layout(std::uint64_t comm_size) {
  SharedLayout l{};
  l.lamport = kGuardBytes;
  l.guard1 = l.lamport + protocol::kLamportBuffers * comm_size;
  l.twoshot = l.guard1 + kGuardBytes;
  l.guard2 = l.twoshot + comm_size;  // two-shot data buffer: comm_size bytes
  l.barrier = l.guard2 + kGuardBytes;
  l.guard3 = l.barrier + (detail::kBarrierFlagWords * 4 + 255) / 256 * 256;
  l.total = l.guard3 + kGuardBytes;
  return l;
}
constexpr std::uint64_t guard_offsets(const SharedLayout& l, int i) {
  return i == 0 ? 0 : i == 1 ? l.guard1 : i == 2 ? l.guard2 : l.guard3;
}

constexpr int kMaxProfileBlocks = kMaxWaitProfileBlocks;

// Private allocation: [ControlBlock][hang claim word, padded][pointer table][wait profile]
constexpr std::uint64_t kPrivateClaim = 64;
constexpr std::uint64_t kPrivateTable = 128;
constexpr std::uint64_t private_profile_offset(int ranks) {
  return (kPrivateTable + detail::kPointerKinds * ranks * 8 + 255) / 256 * 256;
}

struct DeviceFacts {
  cudaUUID_t uuid;
  int sm_count;
};

DeviceFacts device_facts(int device) {
  DeviceFacts f{};
  cudaDeviceProp prop{};
  FC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  f.uuid = prop.uuid;
  f.sm_count = prop.multiProcessorCount;
  return f;
}

}  // namespace

struct Workspace::Impl {
  WorkspaceConfig config;
  int rank = 0;
  int ranks_on_device = 1;
  int device = 0;
  int compute_capability = 0;
  int twoshot_blocks = 1;
  SharedLayout layout{};
  void* shared = nullptr;                  // mine
  std::vector<std::uint8_t*> peer_shared;  // every rank's, mine included
  std::unique_ptr<PeerMappings> peers;     // the opened IPC mappings (closed before the free)
  void* private_mem = nullptr;
  HangRecord* hang_host = nullptr;
  std::uint8_t* staging = nullptr;  // pinned copy of the shared allocation, for read-backs
  detail::DeviceWorkspace view{};
  std::uint32_t calls = 0;

  ~Impl() {
    // Teardown must not throw; errors here are reported by the next CUDA call anyway.
    peers.reset();
    if (device_stuck()) return;  // freeing would wait for the stuck kernel: left to the exit
    if (shared != nullptr) (void)cudaFree(shared);
    if (private_mem != nullptr) (void)cudaFree(private_mem);
    if (hang_host != nullptr) (void)cudaFreeHost(hang_host);
    if (staging != nullptr) (void)cudaFreeHost(staging);
  }

  // Allocates and fills this rank's memory (sentinel, guards, initial control block).
  void allocate_and_initialise() {
    FC_CUDA_CHECK(cudaGetDevice(&device));
    int major = 0, minor = 0;
    FC_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    FC_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    compute_capability = major * 10 + minor;
    layout = shared_layout(config.comm_size);

    FC_CUDA_CHECK(cudaMalloc(&shared, layout.total));
    std::vector<std::uint8_t> host(layout.total, 0);
    const std::uint64_t lamport_bytes = protocol::kLamportBuffers * config.comm_size;
    if (config.fp32_lamport) {
      for (std::uint64_t i = 0; i < lamport_bytes; i += 4)
        std::memcpy(&host[layout.lamport + i], &protocol::kNegZero32, 4);
    } else {
      for (std::uint64_t i = 0; i < lamport_bytes; i += 2)
        std::memcpy(&host[layout.lamport + i], &protocol::kNegZero16, 2);
    }
    for (int g = 0; g < 4; ++g)
      for (std::uint64_t i = 0; i < kGuardBytes; i += 8)
        std::memcpy(&host[guard_offsets(layout, g) + i], &protocol::kGuardWord, 8);
    FC_CUDA_CHECK(cudaMemcpy(shared, host.data(), layout.total, cudaMemcpyHostToDevice));

    const std::uint64_t private_bytes =
        private_profile_offset(config.ranks) + kMaxProfileBlocks * sizeof(WaitProfileEntry);
    FC_CUDA_CHECK(cudaMalloc(&private_mem, private_bytes));
    FC_CUDA_CHECK(cudaMemset(private_mem, 0, private_bytes));
    const protocol::ControlBlock cb = protocol::initial_control_block(config.comm_size);
    FC_CUDA_CHECK(cudaMemcpy(private_mem, &cb, sizeof(cb), cudaMemcpyHostToDevice));

    FC_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&hang_host), sizeof(HangRecord),
                                cudaHostAllocMapped));
    std::memset(hang_host, 0, sizeof(HangRecord));
    void* hang_dev = nullptr;
    FC_CUDA_CHECK(cudaHostGetDevicePointer(&hang_dev, hang_host, 0));

    auto* base = static_cast<std::uint8_t*>(private_mem);
    view.control = reinterpret_cast<protocol::ControlBlock*>(base);
    view.hang_claim = reinterpret_cast<std::uint32_t*>(base + kPrivateClaim);
    view.pointer_table = reinterpret_cast<const std::uint64_t*>(base + kPrivateTable);
    view.wait_profile =
        reinterpret_cast<WaitProfileEntry*>(base + private_profile_offset(config.ranks));
    view.hang_record = static_cast<HangRecord*>(hang_dev);
    view.comm_size = config.comm_size;
    view.twoshot_bytes = config.comm_size;
  }

  // Packs every rank's buffer addresses into the device pointer table (buffer-major).
  void write_pointer_table() {
    const int n = config.ranks;
    std::vector<std::uint64_t> table(static_cast<std::size_t>(detail::kPointerKinds) * n);
    for (int r = 0; r < n; ++r) {
      const auto base = reinterpret_cast<std::uint64_t>(peer_shared[r]);
      for (int b = 0; b < protocol::kLamportBuffers; ++b)
        table[detail::table_lamport(b, r, n)] = base + layout.lamport + b * config.comm_size;
      table[detail::table_twoshot_data(r, n)] = base + layout.twoshot;
      table[detail::table_barrier(r, n)] = base + layout.barrier;
    }
    FC_CUDA_CHECK(cudaMemcpy(const_cast<std::uint64_t*>(view.pointer_table), table.data(),
                             table.size() * 8, cudaMemcpyHostToDevice));
    for (int i = 0; i < protocol::kLamportBuffers * n; ++i) view.lamport[i] = table[i];
    view.twoshot_blocks = twoshot_blocks;
  }
};

namespace {
void check_config(const WorkspaceConfig& c) {
  if (!protocol::is_supported_rank_count(c.ranks))
    throw InvalidLaunch("workspace ranks=" + std::to_string(c.ranks) +
                        " is not supported: 2, 4, 8 or 16");
  if (c.comm_size == 0 || c.comm_size % 256 != 0)
    throw InvalidLaunch("workspace comm_size=" + std::to_string(c.comm_size) +
                        " must be a positive multiple of 256");
  if (c.max_twoshot_blocks < 1 || c.max_twoshot_blocks > detail::kMaxTwoShotBlocks)
    throw InvalidLaunch("workspace max_twoshot_blocks must be in [1, " +
                        std::to_string(detail::kMaxTwoShotBlocks) + "]");
}
// One block per SM of the rank's share; where ranks share a GPU, a third of it (choice.hpp:
// other kernels of the rank may be resident beside this one).
int twoshot_grid(const WorkspaceConfig& c, int sm_count, int ranks_on_device) {
  const int kernels_per_rank = ranks_on_device > 1 ? kResidentKernelsPerSharingRank : 1;
  const int sharers = detail::ranks_sharing_reported_sms(ranks_on_device);
  return std::min(c.max_twoshot_blocks, co_resident_blocks(sm_count, sharers, kernels_per_rank));
}
}  // namespace

Workspace Workspace::create_ipc(Bootstrap& bootstrap, const WorkspaceConfig& config) {
  check_config(config);
  if (bootstrap.size() != config.ranks)
    throw InvalidLaunch("workspace ranks=" + std::to_string(config.ranks) + " but the job has " +
                        std::to_string(bootstrap.size()) + " ranks");
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->rank = bootstrap.rank();
  impl->allocate_and_initialise();
  FC_CUDA_CHECK(cudaDeviceSynchronize());

  const int n = config.ranks;
  DeviceFacts mine = device_facts(impl->device);
  std::vector<DeviceFacts> facts(n);
  bootstrap.all_gather(&mine, facts.data(), sizeof(DeviceFacts), "workspace device facts");
  int min_sms = mine.sm_count;
  // The most ranks on any one GPU of the job, the same on every rank: grids derived from it
  // match across ranks (the two-shot barrier counts every rank's blocks; a refusal that
  // depends on the grid must happen on every rank or none).
  impl->ranks_on_device = 0;
  for (const auto& f : facts) {
    int sharing = 0;
    for (const auto& g : facts) sharing += std::memcmp(&f.uuid, &g.uuid, sizeof(cudaUUID_t)) == 0;
    impl->ranks_on_device = std::max(impl->ranks_on_device, sharing);
    min_sms = std::min(min_sms, f.sm_count);
  }
  impl->twoshot_blocks = twoshot_grid(config, min_sms, impl->ranks_on_device);
  impl->peers = std::make_unique<PeerMappings>(bootstrap, impl->shared);
  impl->peer_shared = impl->peers->all();
  impl->write_pointer_table();
  preload_kernels();  // no lazy kernel load (a context synchronisation) once kernels spin
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  bootstrap.barrier("workspace initialised");  // invariant 12: nobody pushes before this
  return Workspace(std::move(impl));
}

std::vector<Workspace> Workspace::create_in_process(const WorkspaceConfig& config) {
  check_config(config);
  std::vector<std::unique_ptr<Impl>> impls;
  for (int r = 0; r < config.ranks; ++r) {
    auto impl = std::make_unique<Impl>();
    impl->config = config;
    impl->rank = r;
    impl->allocate_and_initialise();
    impl->ranks_on_device = config.ranks;
    impls.push_back(std::move(impl));
  }
  const int sms = device_facts(impls[0]->device).sm_count;
  std::vector<std::uint8_t*> shared;
  for (auto& impl : impls) shared.push_back(static_cast<std::uint8_t*>(impl->shared));
  for (auto& impl : impls) {
    impl->peer_shared = shared;
    impl->twoshot_blocks = twoshot_grid(config, sms, config.ranks);
    impl->write_pointer_table();
  }
  // Every rank is launched from this one process: a kernel loaded lazily at its first launch
  // could synchronise the context while a peer's kernel spins, so load them all now.
  preload_kernels();
  FC_CUDA_CHECK(cudaDeviceSynchronize());  // the in-process init barrier
  std::vector<Workspace> out;
  for (auto& impl : impls) out.push_back(Workspace(std::move(impl)));
  return out;
}

Workspace::Workspace(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Workspace::Workspace(Workspace&&) noexcept = default;
Workspace& Workspace::operator=(Workspace&&) noexcept = default;
Workspace::~Workspace() = default;

int Workspace::rank() const { return impl_->rank; }
int Workspace::ranks() const { return impl_->config.ranks; }
int Workspace::ranks_on_device() const { return impl_->ranks_on_device; }
int Workspace::device() const { return impl_->device; }
int Workspace::twoshot_blocks() const { return impl_->twoshot_blocks; }
const WorkspaceConfig& Workspace::config() const { return impl_->config; }
const detail::DeviceWorkspace& Workspace::device_view() const { return impl_->view; }
const void* Workspace::lamport_device() const {
  return static_cast<const std::uint8_t*>(impl_->shared) + impl_->layout.lamport;
}
const void* Workspace::lamport_device(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(impl_->peer_shared.size()))
    throw InvalidLaunch("workspace: no rank " + std::to_string(rank) + " of " +
                        std::to_string(impl_->peer_shared.size()));
  return impl_->peer_shared[static_cast<std::size_t>(rank)] + impl_->layout.lamport;
}
std::uint32_t Workspace::next_call_index() { return impl_->calls++; }

LaunchLimits Workspace::limits() const {
  return LaunchLimits{impl_->config.ranks, impl_->config.comm_size, impl_->config.fp32_lamport,
                      impl_->view.twoshot_bytes, impl_->compute_capability};
}

HangRecord Workspace::hang_record() const {
  HangRecord r{};
  std::memcpy(&r, const_cast<const HangRecord*>(impl_->hang_host), sizeof(r));
  return r;
}

void Workspace::clear_hang_record() {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  std::memset(impl_->hang_host, 0, sizeof(HangRecord));
  FC_CUDA_CHECK(cudaMemset(impl_->view.hang_claim, 0, 4));
  FC_CUDA_CHECK(cudaDeviceSynchronize());  // the memset ran on the legacy stream
}

void Workspace::throw_if_hung() const {
  const HangRecord r = hang_record();
  if (r.valid != 0) throw KernelHang(r);
}

std::vector<WaitProfileEntry> Workspace::wait_profile(int blocks) const {
  blocks = std::clamp(blocks, 0, kMaxProfileBlocks);
  std::vector<WaitProfileEntry> out(blocks);
  FC_CUDA_CHECK(cudaMemcpy(out.data(), impl_->view.wait_profile, blocks * sizeof(WaitProfileEntry),
                           cudaMemcpyDeviceToHost));
  return out;
}

ControlState read_control_state(const Workspace& ws, LamportCopy lamport) {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  const Workspace::Impl& impl = *ws.impl_;
  ControlState s;
  s.comm_size = impl.config.comm_size;
  s.elem_bytes = impl.config.fp32_lamport ? 4 : 2;
  s.ranks = impl.config.ranks;
  s.twoshot_blocks = impl.twoshot_blocks;
  FC_CUDA_CHECK(
      cudaMemcpy(&s.control, impl.view.control, sizeof(s.control), cudaMemcpyDeviceToHost));
  const auto* shared = static_cast<const std::uint8_t*>(impl.shared);
  const std::uint64_t barrier_bytes = detail::kBarrierFlagWords * 4;
  // Host copies of the guard words (4 x kGuardBytes) and the barrier flags.
  std::vector<std::uint8_t> guards(4 * kGuardBytes), barrier(barrier_bytes);
  if (lamport == LamportCopy::with_buffers) {
    // Pinned staging: a pageable copy of a few MiB costs several times as long. Large
    // workspaces (rare, slow anyway) copy into pageable memory instead of pinning that much.
    constexpr std::uint64_t kMaxPinnedStaging = 256ull << 20;
    std::vector<std::uint8_t> pageable;
    if (impl.layout.total > kMaxPinnedStaging) pageable.resize(impl.layout.total);
    else if (impl.staging == nullptr)
      FC_CUDA_CHECK(
          cudaMallocHost(reinterpret_cast<void**>(&ws.impl_->staging), impl.layout.total));
    std::uint8_t* const all = pageable.empty() ? impl.staging : pageable.data();
    FC_CUDA_CHECK(cudaMemcpy(all, shared, impl.layout.total, cudaMemcpyDeviceToHost));
    s.lamport.assign(all + impl.layout.lamport, all + impl.layout.guard1);
    for (int g = 0; g < 4; ++g)
      std::memcpy(&guards[g * kGuardBytes], all + guard_offsets(impl.layout, g), kGuardBytes);
    std::memcpy(barrier.data(), all + impl.layout.barrier, barrier_bytes);
  } else {
    for (int g = 0; g < 4; ++g)
      FC_CUDA_CHECK(cudaMemcpy(&guards[g * kGuardBytes], shared + guard_offsets(impl.layout, g),
                               kGuardBytes, cudaMemcpyDeviceToHost));
    FC_CUDA_CHECK(cudaMemcpy(barrier.data(), shared + impl.layout.barrier, barrier_bytes,
                             cudaMemcpyDeviceToHost));
  }
  s.buffer_guards_intact = true;
  for (std::uint64_t i = 0; i < guards.size(); i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, &guards[i], 8);
    s.buffer_guards_intact &= (w == protocol::kGuardWord);
  }
  std::vector<std::uint32_t> flags(detail::kBarrierFlagWords);
  std::memcpy(flags.data(), barrier.data(), barrier_bytes);
  for (int phase = 0; phase < detail::kBarrierPhases; ++phase)
    for (int b = 0; b < impl.twoshot_blocks; ++b)
      for (int r = 0; r < impl.config.ranks; ++r)
        s.barrier_flags.push_back(flags[detail::barrier_index(phase, b, r)]);
  return s;
}

protocol::ControlBlock read_control_block(const Workspace& ws) {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  protocol::ControlBlock cb{};
  FC_CUDA_CHECK(cudaMemcpy(&cb, ws.impl_->view.control, sizeof(cb), cudaMemcpyDeviceToHost));
  return cb;
}

}  // namespace fusioncheck::kernels
