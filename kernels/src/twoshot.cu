// Two-shot fused kernel: reduce-scatter into the peers' data buffers, a flag barrier with
// st.release.sys / ld.acquire.sys full-word flags cycling through {0,1,2}, all-gather,
// then the shared epilogue (device/epilogue.cuh). Bounded spins leave a hang record.
#include <algorithm>
#include <string>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "device/epilogue.cuh"
#include "fusioncheck/kernels/launch.hpp"
#include "instances.hpp"

namespace fusioncheck::kernels {
namespace device {

struct TwoShotArgs {
  DeviceWorkspace ws;
  EpilogueArgs e;
  const void* input = nullptr;
  int rank = 0;
  std::uint64_t size = 0;   // elements per rank
  std::uint64_t chunk = 0;  // elements of each rank's reduce-scatter chunk (multiple of 8)
  bool trigger_early = false;
  std::uint32_t call_index = 0;
  unsigned long long budget = 0;
  DelaySpec delay;
};

// Signal `value` to every rank's flag [phase][my block][my rank], after this block's
// stores; then wait until my flags [phase][blocks][0..N) hold `value`.
template <int N, Mutant M>
__device__ __forceinline__ void barrier(const TwoShotArgs& a, int phase, bool all_blocks,
                                        std::uint32_t value, std::uint32_t f,
                                        const Deadline& deadline) {
  __syncthreads();
  inject_delay(a.delay, a.rank, DelayPoint::before_flag, a.call_index);
  if (threadIdx.x < N) {
    if constexpr (M != Mutant::barrier_no_release) __threadfence_system();
    auto* peer =
        reinterpret_cast<std::uint32_t*>(a.ws.pointer_table[detail::table_barrier(threadIdx.x, N)]);
    store_flag<M>(peer + detail::barrier_index(phase, blockIdx.x, a.rank), value);
  }
  inject_delay(a.delay, a.rank, DelayPoint::before_poll, a.call_index);
  auto* mine =
      reinterpret_cast<const std::uint32_t*>(a.ws.pointer_table[detail::table_barrier(a.rank, N)]);
  const int slots = (all_blocks ? gridDim.x : 1) * N;
  for (int s = threadIdx.x; s < slots; s += blockDim.x) {
    const int block = all_blocks ? s / N : blockIdx.x;
    const int peer = s % N;
    const std::uint32_t* p = mine + detail::barrier_index(phase, block, peer);
    std::uint32_t seen = load_flag<M>(p);
    while (seen != value) {
      if (deadline.expired()) {
        write_hang_record(
            a.ws,
            HangInfo{static_cast<std::uint32_t>(a.rank), 0u, static_cast<std::uint32_t>(peer), f,
                     value, a.call_index, HangSite::twoshot_barrier},
            deadline);
        break;
      }
      seen = load_flag<M>(p);
    }
  }
  __syncthreads();
}

template <int N, typename T, Mutant M, EpilogueScope S>
__global__ void __launch_bounds__(1024) fc_twoshot_pdl_kernel(const TwoShotArgs a) {
  constexpr int K = 8;
  const Deadline deadline{clock64(), a.budget};
  pdl_wait<M>();
  if (a.trigger_early) pdl_trigger();

  __shared__ std::uint32_t s_flag;
  __shared__ float scratch[32];
  RowReduction red{scratch};
  red.delay = ExchangeDelay{a.delay, a.rank, a.call_index};  // its block reductions' delay point
  protocol::ControlBlock* cb = a.ws.control;
  if (threadIdx.x == 0) s_flag = load_volatile_u32(&cb->two_shot_flag);
  __syncthreads();
  const std::uint32_t f = s_flag;
  const std::uint32_t next = protocol::next_flag(f);
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(&cb->two_shot_counter, 1u);
  }
  auto data = [&](int r) {
    return reinterpret_cast<T*>(a.ws.pointer_table[detail::table_twoshot_data(r, N)]);
  };
  const std::uint64_t chunk_vectors = a.chunk / K;
  const std::uint64_t vectors = a.size / K;
  // The gather region starts at a fixed offset, half the data buffer, whatever this call's
  // size: were it at N * chunk (the twoshot-gather-overlap mutant), a larger next call's
  // reduce-scatter (which a peer may start as soon as it is done with this call) would
  // overwrite rows a slower rank still reads.
  const std::uint64_t gather =
      M == Mutant::twoshot_gather_overlap ? N * a.chunk : a.ws.twoshot_bytes / 2 / sizeof(T);
  const std::uint64_t gtid = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::uint64_t gstride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;

  // Reduce-scatter, part 1: my vector `local` of rank d's chunk -> d's slot [my rank].
  inject_delay(a.delay, a.rank, DelayPoint::before_push, a.call_index);
  for (int d = 0; d < N; ++d)
    for (std::uint64_t local = gtid; local < chunk_vectors; local += gstride) {
      const std::uint64_t gv = d * chunk_vectors + local;
      if (gv >= vectors) break;
      const uint4 v = *reinterpret_cast<const uint4*>(static_cast<const T*>(a.input) + gv * K);
      store16(data(d) + a.rank * a.chunk + local * K, v);
    }
  // The same (block, thread) handles the same `local` on every rank: a per-block barrier.
  barrier<N, M>(a, 0, false, next, f, deadline);

  // Part 2: reduce my chunk in rank order, push the result into every rank's gather region.
  const bool fp32_accumulation = fp32_accumulation_of<S>(a.e);
  for (std::uint64_t local = gtid; local < chunk_vectors; local += gstride) {
    const std::uint64_t gv = a.rank * chunk_vectors + local;
    if (gv >= vectors) break;
    float sum[K];
    float x[K];
    load_row_vector<T, K>(data(a.rank), static_cast<std::uint64_t>(0) * a.chunk + local * K, sum);
    if (!fp32_accumulation)
      for (int k = 0; k < K; ++k) sum[k] = round_to<T>(sum[k]);
    for (int r = 1; r < N; ++r) {
      load_row_vector<T, K>(data(a.rank), r * a.chunk + local * K, x);
      for (int k = 0; k < K; ++k)
        sum[k] = fp32_accumulation ? sum[k] + x[k] : round_to<T>(sum[k] + x[k]);
    }
    for (int r = 0; r < N; ++r) store_row_vector<T, K>(data(r), gather + gv * K, sum);
  }
  // Every block's epilogue reads whole rows: wait for every block of every rank.
  barrier<N, M>(a, 1, true, next, f, deadline);

  // All-gather done: epilogue, one block per row.
  const T* gathered = data(a.rank) + gather;
  auto sum_vector = [&](int t, int v, float(&ar)[K]) {
    load_row_vector<T, K>(
        gathered, static_cast<std::uint64_t>(t) * a.e.hidden + static_cast<std::uint64_t>(v) * K,
        ar);
  };
  for (int t = blockIdx.x; t < a.e.tokens; t += gridDim.x)
    process_row<T, K, S>(a.e, t, 0, a.e.hidden / K, red, sum_vector);

  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    std::uint32_t c = load_volatile_u32(&cb->two_shot_counter);
    bool arrived = true;
    while (c != gridDim.x) {
      if (deadline.expired()) {
        write_hang_record(a.ws,
                          HangInfo{static_cast<std::uint32_t>(a.rank), 0u, 0u, f, c, a.call_index,
                                   HangSite::arrival_counter},
                          deadline);
        arrived = false;
        break;
      }
      c = load_volatile_u32(&cb->two_shot_counter);
    }
    if (arrived) {
      volatile protocol::ControlBlock* v = cb;
      v->two_shot_flag = next;
      v->two_shot_counter = 0u;
      __threadfence();
    }
  }
  if (!a.trigger_early) {  // step 8, at the end: every thread's outputs (and step 7) are done
    __threadfence();
    __syncthreads();
    pdl_trigger();
  }
}

template <int N, typename T, Mutant M, EpilogueScope S>
cudaError_t launch_twoshot_instance(const TwoShotArgs& args, const detail::LaunchShape& shape,
                                    cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(shape.grid);
  config.blockDim = dim3(shape.threads);
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = shape.use_pdl ? 1 : 0;
  return cudaLaunchKernelEx(&config, fc_twoshot_pdl_kernel<N, T, M, S>, args);
}

template <int N, typename T, Mutant M, EpilogueScope S>
cudaError_t preload_twoshot_instance() {  // see preload_kernels (launch.hpp)
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, fc_twoshot_pdl_kernel<N, T, M, S>);
}

template <int N, typename T, Mutant M, EpilogueScope S = EpilogueScope::full>
constexpr detail::TwoShotEntry twoshot_entry(DType dtype) {
  return detail::TwoShotEntry{
      N, dtype, M, S, &launch_twoshot_instance<N, T, M, S>, &preload_twoshot_instance<N, T, M, S>};
}

}  // namespace device

namespace detail {
std::span<const TwoShotEntry> twoshot_entries() {
  using protocol::Mutant;
  using B = __nv_bfloat16;
  using H = __half;
  using device::twoshot_entry;
  constexpr auto kPlain = EpilogueScope::plain;
  // Per (ranks, dtype) the plain instance and the one of every pattern (choice.hpp).
  static const TwoShotEntry entries[] = {
      twoshot_entry<2, B, Mutant::none, kPlain>(DType::bf16),
      twoshot_entry<2, B, Mutant::none>(DType::bf16),
      twoshot_entry<4, B, Mutant::none, kPlain>(DType::bf16),
      twoshot_entry<4, B, Mutant::none>(DType::bf16),
      twoshot_entry<8, B, Mutant::none, kPlain>(DType::bf16),
      twoshot_entry<8, B, Mutant::none>(DType::bf16),
      twoshot_entry<16, B, Mutant::none, kPlain>(DType::bf16),
      twoshot_entry<16, B, Mutant::none>(DType::bf16),
      twoshot_entry<2, H, Mutant::none, kPlain>(DType::f16),
      twoshot_entry<2, H, Mutant::none>(DType::f16),
      twoshot_entry<4, H, Mutant::none, kPlain>(DType::f16),
      twoshot_entry<4, H, Mutant::none>(DType::f16),
      twoshot_entry<8, H, Mutant::none, kPlain>(DType::f16),
      twoshot_entry<8, H, Mutant::none>(DType::f16),
      twoshot_entry<16, H, Mutant::none, kPlain>(DType::f16),
      twoshot_entry<16, H, Mutant::none>(DType::f16),
      twoshot_entry<2, B, Mutant::barrier_no_release>(DType::bf16),
      twoshot_entry<2, B, Mutant::twoshot_gather_overlap>(DType::bf16),
  };
  return entries;
}
}  // namespace detail

std::vector<protocol::Mutant> twoshot_mutants_compiled() {
  std::vector<protocol::Mutant> out;
  for (const auto& e : detail::twoshot_entries())
    if (e.mutant != protocol::Mutant::none) out.push_back(e.mutant);
  return out;
}

LaunchInfo launch_twoshot(const FusedParams& p, Workspace& ws, cudaStream_t stream,
                          protocol::Mutant mutant) {
  validate_twoshot(p, ws.limits());
  const detail::TwoShotEntry* entry = nullptr;
  for (const auto& e : detail::twoshot_entries())
    if (e.ranks == p.ranks && e.dtype == p.dtype && e.mutant == mutant)
      entry = narrower_instance(entry, e, p.pattern, p.fp32_accumulation);
  if (entry == nullptr)
    throw InvalidLaunch(
        "no two-shot instance for mutant " + std::string(protocol::mutant_id(mutant)) +
        " with ranks=" + std::to_string(p.ranks) + " dtype=" + std::string(dtype_name(p.dtype)));
  detail::LaunchShape shape;
  shape.grid = ws.twoshot_blocks();  // fixed per workspace: the barrier slots depend on it
  shape.threads = std::max(32, std::min(1024, (p.hidden / 8 + 31) / 32 * 32));
  shape.use_pdl = p.use_pdl;
  device::TwoShotArgs args;
  args.ws = ws.device_view();
  args.e = device::epilogue_args(p);
  args.input = p.input;
  args.rank = p.rank;
  args.size = static_cast<std::uint64_t>(p.tokens) * p.hidden;
  args.chunk = twoshot_chunk_elems(p.ranks, args.size);
  args.trigger_early = p.trigger == Trigger::early;
  args.call_index = ws.next_call_index();
  args.budget = p.spin_budget_cycles;
  args.delay = device::delay_spec(p);
  FC_CUDA_CHECK(entry->launch(args, shape, stream));
  return LaunchInfo{shape.grid, shape.threads, 1, args.call_index, false, entry->scope};
}

}  // namespace fusioncheck::kernels
