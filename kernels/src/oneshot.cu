// Run-time dispatch of the one-shot kernel: validation, launch shape (grid bounded for
// co-residency, cluster or not), instance lookup. Also the PDL consumer kernel.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "oneshot_kernel.cuh"

namespace fusioncheck::kernels {
namespace {

using EntryTable = std::span<const detail::OneShotEntry>;

// The instance of `tables` for the call and mutant m (narrower_instance, choice.hpp), or nullptr.
const detail::OneShotEntry* find_oneshot(std::span<const EntryTable> tables, const FusedParams& p,
                                         protocol::Mutant m) {
  const detail::OneShotEntry* found = nullptr;
  for (EntryTable entries : tables)
    for (const auto& e : entries)
      if (e.ranks == p.ranks && e.dtype == p.dtype && e.fp32_lamport == p.fp32_lamport &&
          e.mutant == m)
        found = narrower_instance(found, e, p.pattern, p.fp32_accumulation);
  return found;
}

// Every instance launch_oneshot may pick: the normal ones and the mutants.
std::span<const EntryTable> oneshot_tables() {
  static const EntryTable tables[] = {detail::oneshot_entries_plain_f16(),
                                      detail::oneshot_entries_plain_bf16(),
                                      detail::oneshot_entries_f16(), detail::oneshot_entries_bf16(),
                                      detail::oneshot_entries_mutants()};
  return tables;
}

int current_device() {
  int d = 0;
  FC_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

// Device attributes read once per device: the launch path runs for every call (gpu bench
// times it eagerly) and needs no query there.
struct DeviceFacts {
  int sm_count = 0;
  bool clusters = false;
};

const DeviceFacts& device_facts(int device) {
  static std::mutex mutex;
  static std::map<int, DeviceFacts> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(device);
  if (it != cache.end()) return it->second;
  DeviceFacts f;
  FC_CUDA_CHECK(cudaDeviceGetAttribute(&f.sm_count, cudaDevAttrMultiProcessorCount, device));
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrClusterLaunch, device) != cudaSuccess) {
    (void)cudaGetLastError();
    v = 0;
  }
  f.clusters = v != 0;
  return cache.emplace(device, f).first->second;
}

int sm_count() { return device_facts(current_device()).sm_count; }

// An occupancy query of one instance at one block size, cached per (query, kernel, block
// size, device): cudaOccupancyMaxPotentialClusterSize (max_cluster_size) and
// cudaOccupancyMaxActiveBlocksPerMultiprocessor (blocks_per_sm).
int cached_query(int (*query)(int), const detail::OneShotEntry& e, int threads) {
  static std::mutex mutex;
  static std::map<std::tuple<int (*)(int), const void*, int, int>, int> cache;
  const auto key = std::make_tuple(query, static_cast<const void*>(&e), threads, current_device());
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  return cache.emplace(key, query(threads)).first->second;
}
int max_cluster_size(const detail::OneShotEntry& e, int threads) {
  return cached_query(e.max_cluster_size, e, threads);
}
int blocks_per_sm(const detail::OneShotEntry& e, bool cluster_free, int threads) {
  return cached_query(cluster_free ? e.cluster_free.blocks_per_sm : e.blocks_per_sm, e, threads);
}

int round_up_warp(int n) { return std::max(32, (n + 31) / 32 * 32); }

}  // namespace

bool device_supports_clusters() { return device_facts(current_device()).clusters; }

std::vector<protocol::Mutant> oneshot_mutants_compiled() {
  std::vector<protocol::Mutant> out;
  for (const auto& e : detail::oneshot_entries_mutants()) out.push_back(e.mutant);
  return out;
}

LaunchInfo launch_oneshot(const FusedParams& p, Workspace& ws, cudaStream_t stream,
                          protocol::Mutant mutant) {
  validate_oneshot(p, ws.limits());
  const bool fp32_lamport = p.fp32_lamport;
  const detail::OneShotEntry* entry = find_oneshot(oneshot_tables(), p, mutant);
  if (entry == nullptr)
    throw InvalidLaunch(
        "no one-shot instance for mutant " + std::string(protocol::mutant_id(mutant)) +
        " with ranks=" + std::to_string(p.ranks) + " dtype=" + std::string(dtype_name(p.dtype)) +
        " fp32_lamport=" + (fp32_lamport ? "true" : "false") +
        " (mutants are compiled for bf16, 2 ranks, bf16 Lamport; sentinel-width: fp32 Lamport)");
  return detail::launch_oneshot_entry(*entry, p, ws, stream);
}

LaunchInfo detail::launch_matching_oneshot(std::span<const OneShotEntry> entries,
                                           const std::string& which_exist, const FusedParams& p,
                                           Workspace& ws, cudaStream_t stream) {
  validate_oneshot(p, ws.limits());
  const EntryTable tables[] = {entries};
  if (const OneShotEntry* e = find_oneshot(tables, p, protocol::Mutant::none))
    return launch_oneshot_entry(*e, p, ws, stream);
  throw InvalidLaunch(which_exist + "; asked ranks=" + std::to_string(p.ranks) +
                      " dtype=" + std::string(dtype_name(p.dtype)) +
                      " fp32_lamport=" + (p.fp32_lamport ? "true" : "false") +
                      " pattern=" + std::string(pattern_name(p.pattern)) +
                      " fp32_accumulation=" + (p.fp32_accumulation ? "true" : "false"));
}

LaunchInfo detail::launch_oneshot_entry(const OneShotEntry& e, const FusedParams& p, Workspace& ws,
                                        cudaStream_t stream) {
  const OneShotEntry* entry = &e;
  const bool fp32_lamport = e.fp32_lamport;

  const int K = fp32_lamport ? 4 : 8;
  const int vrow = p.hidden / K;
  // Every rank's blocks must be resident at once. Where ranks share a GPU, kernels launched
  // with PDL may also be made resident early, behind their rank's previous kernel, and take
  // the room a late peer's blocks need (found at 4 and 8 ranks under MPS: every rank
  // waiting for one peer). Up to kResidentKernelsPerSharingRank kernels per rank may then be
  // resident: that fraction of the share.
  const int pdl_kernels = ws.ranks_on_device() > 1 && (p.use_pdl || p.trigger == Trigger::early)
                              ? kResidentKernelsPerSharingRank
                              : 1;
  // With the GPU to itself a rank may fill every SM with as many blocks as fit (up to 4):
  // large calls are bound by how many vectors are in flight, not by arithmetic. Ranks that
  // share a GPU keep one block per SM of their share.
  const int threads_no_cluster = round_up_warp(std::min(1024, vrow));
  const int sm_share = co_resident_blocks(
      sm_count(), detail::ranks_sharing_reported_sms(ws.ranks_on_device()), pdl_kernels);
  const auto max_blocks_of = [&](bool cluster_free) {
    const int per_sm = ws.ranks_on_device() == 1
                           ? std::min(4, blocks_per_sm(*entry, cluster_free, threads_no_cluster))
                           : 1;
    return p.max_blocks > 0 ? p.max_blocks : sm_share * per_sm;
  };
  const int max_blocks = max_blocks_of(false);

  // Cluster path: a token row split over C blocks whose partial sums meet in distributed
  // shared memory, where the device and the occupancy query allow it. Automatic mode splits
  // rows into blocks of kAutomaticClusterBlockVectors or more, 8 or 4 a row, as the share
  // holds them (choose_cluster): since the exchange needs no cluster barrier, more and smaller
  // blocks a row are faster at 1-4 tokens (hidden 8192 without a cluster: 5.0 us, in 8
  // blocks: 3.3 us, one H200).
  ClusterChoice choice;
  choice.mode = p.cluster;
  choice.row_vectors = vrow;
  choice.hidden = p.hidden;
  choice.nvfp4 = p.pattern == Pattern::nvfp4;
  choice.tokens = p.tokens;
  choice.max_blocks = max_blocks;
  choice.sm_share = sm_share;
  const int cluster = choose_cluster(choice, [&](int c) {
    return device_supports_clusters() &&
           max_cluster_size(*entry, round_up_warp(std::min(1024, vrow / c))) >= c;
  });
  if (p.cluster == ClusterMode::force_cluster && cluster == 1)
    throw InvalidLaunch("cluster path forced but not available: device cluster launch=" +
                        std::string(device_supports_clusters() ? "yes" : "no") + ", hidden=" +
                        std::to_string(p.hidden) + " has no split into >= 2 blocks of >= " +
                        std::to_string(kMinClusterBlockVectors) + " vectors");

  // A call without a cluster runs the twin built without the cluster path where there is one
  // (ClusterFreeTwin), on a grid bound by that kernel's own occupancy.
  const bool cluster_free = cluster == 1 && entry->cluster_free.launch != nullptr;
  const int grid_bound = cluster_free ? max_blocks_of(true) : max_blocks;

  detail::LaunchShape shape;
  shape.cluster_size = cluster;
  shape.threads = round_up_warp(std::min(1024, vrow / cluster));
  shape.grid = std::min(p.tokens, std::max(1, grid_bound / cluster)) * cluster;
  shape.use_pdl = p.use_pdl;

  device::OneShotArgs args;
  args.ws = ws.device_view();
  args.e = device::epilogue_args(p);
  args.input = p.input;
  args.rank = p.rank;
  args.size = static_cast<std::uint64_t>(p.tokens) * p.hidden;
  args.cluster_size = cluster;
  args.trigger_early = p.trigger == Trigger::early;
  args.call_index = ws.next_call_index();
  args.budget = p.spin_budget_cycles;
  args.delay = device::delay_spec(p);
  FC_CUDA_CHECK((cluster_free ? entry->cluster_free.launch : entry->launch)(args, shape, stream));
  return LaunchInfo{shape.grid, shape.threads, cluster,     args.call_index,
                    false,      entry->scope,  cluster_free};
}

// ---- PDL consumer (early-trigger negative control) ------------------------------------
__global__ void fc_pdl_consumer_kernel(const uint4* src, uint4* dst, std::size_t n,
                                       bool read_before_wait) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    uint4 v{};
    if (read_before_wait) v = device::load_volatile16(src + i);
    device::pdl_wait<protocol::Mutant::none>();
    if (!read_before_wait) v = device::load_volatile16(src + i);
    dst[i] = v;
  }
  device::pdl_wait<protocol::Mutant::none>();  // threads without elements still wait
}

void launch_pdl_consumer_copy(const void* src, void* dst, std::size_t bytes, bool read_before_wait,
                              cudaStream_t stream) {
  if (bytes % 16 != 0) throw InvalidLaunch("pdl consumer copy: bytes must be a multiple of 16");
  cudaLaunchConfig_t config{};
  const std::size_t n = bytes / 16;
  // A small grid (grid-stride loop): under early-trigger the consumer becomes resident while
  // the producers still spin, and with ranks sharing a GPU it must not take the room a
  // peer's fused grid needs. Its first sweep (kConsumerMaxBlocks * 256 vectors) is what it
  // reads before its wait.
  constexpr std::size_t kConsumerMaxBlocks = 32;
  config.gridDim =
      dim3(static_cast<unsigned>(std::clamp<std::size_t>((n + 255) / 256, 1, kConsumerMaxBlocks)));
  config.blockDim = dim3(256);
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  FC_CUDA_CHECK(cudaLaunchKernelEx(&config, fc_pdl_consumer_kernel, static_cast<const uint4*>(src),
                                   static_cast<uint4*>(dst), n, read_before_wait));
}

// ---- PDL producer (the kernel before a call that writes its inputs) --------------------
// Triggers its dependents first, so that the call launched behind it with PDL may start at
// once, then waits delay_ns (globaltimer: a bounded wait) and copies the staged inputs over
// the poison in the call's input buffers. The call's grid-dependency wait returns only after
// this grid has finished and its writes are visible; a call that reads an input before it
// reads poison.
__global__ void fc_pdl_producer_kernel(PdlProducerCopies copies, std::uint32_t delay_ns) {
  device::pdl_trigger();
  std::uint64_t t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < delay_ns);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (int c = 0; c < copies.count; ++c) {
    const auto* src = static_cast<const uint4*>(copies.copy[c].src);
    auto* dst = static_cast<uint4*>(copies.copy[c].dst);
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < copies.copy[c].bytes / 16; i += stride)
      dst[i] = src[i];
  }
}

void launch_pdl_producer(const PdlProducerCopies& copies, std::uint32_t delay_ns,
                         cudaStream_t stream) {
  if (copies.count < 0 || copies.count > PdlProducerCopies::kMax)
    throw InvalidLaunch("pdl producer: at most " + std::to_string(PdlProducerCopies::kMax) +
                        " copies");
  for (int c = 0; c < copies.count; ++c)
    if (copies.copy[c].bytes % 16 != 0)
      throw InvalidLaunch("pdl producer: bytes must be a multiple of 16");
  if (delay_ns > kMaxPdlProducerDelayNs)
    throw InvalidLaunch("pdl producer: delay above " + std::to_string(kMaxPdlProducerDelayNs) +
                        " ns");
  // A small grid, launched without PDL (it follows the previous work in the stream, as a
  // GEMM follows the previous layer): every block is resident before the call behind it
  // starts, and with ranks sharing a GPU it leaves room for a peer's fused grid.
  constexpr unsigned kProducerBlocks = 8;
  fc_pdl_producer_kernel<<<kProducerBlocks, 256, 0, stream>>>(copies, delay_ns);
  FC_CUDA_CHECK(cudaGetLastError());
}

// ---- preloading ---------------------------------------------------------------------------
void preload_kernels() {
  const auto load = [](cudaError_t (*preload)(), const char* what) {
    const cudaError_t e = preload();
    if (e != cudaSuccess)
      throw CudaError(std::string("preload_kernels: cudaFuncGetAttributes on a ") + what +
                      " kernel failed: " + cudaGetErrorString(e));
  };
  for (auto entries : {detail::oneshot_entries_plain_f16(), detail::oneshot_entries_plain_bf16(),
                       detail::oneshot_entries_f16(), detail::oneshot_entries_bf16(),
                       detail::oneshot_entries_mutants(), detail::oneshot_entries_wait_profile(),
                       detail::oneshot_entries_unbounded_polls()})
    for (const auto& e : entries) {
      load(e.preload, "one-shot");
      if (e.cluster_free.preload != nullptr)
        load(e.cluster_free.preload, "one-shot (cluster-free twin)");
    }
  for (const auto& e : detail::twoshot_entries()) load(e.preload, "two-shot");
  load(&detail::preload_unfused_kernels, "unfused residual+RMSNorm");
  load(&detail::preload_spin_kernel, "spin");
  load(
      [] {
        cudaFuncAttributes attributes{};
        return cudaFuncGetAttributes(&attributes, fc_pdl_consumer_kernel);
      },
      "PDL consumer");
  load(
      [] {
        cudaFuncAttributes attributes{};
        return cudaFuncGetAttributes(&attributes, fc_pdl_producer_kernel);
      },
      "PDL producer");
}

}  // namespace fusioncheck::kernels
