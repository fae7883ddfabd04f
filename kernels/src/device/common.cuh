#pragma once
// Device helpers shared by the one-shot, two-shot and unfused kernels: PDL wait/trigger
// (the arch guards live here and only here), 16-byte vector memory operations, the
// Lamport sentinel on vectors, and bounded waits that leave a hang record.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "device_workspace.hpp"
#include "fusioncheck/kernels/types.hpp"
#include "fusioncheck/protocol/protocol.hpp"

namespace fusioncheck::kernels::device {

using protocol::Mutant;
using detail::DeviceWorkspace;

// ---- PDL ---------------------------------------------------------------------------
// Step 1: wait for the previous grid in the stream (a no-op when not launched with PDL).
// pdl-wait-missing reproduces FlashInfer's guard: the wait exists only below sm_120;
// no-pdl-wait has none on any architecture.
template <Mutant M> __device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (M == Mutant::no_pdl_wait) {
  } else if constexpr (M == Mutant::pdl_wait_missing) {
#if __CUDA_ARCH__ < 1200
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  } else {
    asm volatile("griddepcontrol.wait;" ::: "memory");
  }
#endif
}

// Step 8: let the next grid in the stream launch.
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// ---- 16-byte vectors ---------------------------------------------------------------
__device__ __forceinline__ uint4 load_volatile16(const void* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ void store16(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}
__device__ __forceinline__ void store_u8(void* p, std::uint8_t b) {
  asm volatile("st.volatile.global.u8 [%0], %1;" ::"l"(p), "h"(static_cast<unsigned short>(b))
               : "memory");
}

__device__ __forceinline__ std::uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
__device__ __forceinline__ void set_word(uint4& v, int i, std::uint32_t w) {
  if (i == 0) v.x = w;
  else if (i == 1) v.y = w;
  else if (i == 2) v.z = w;
  else v.w = w;
}

// ---- element conversions (T: __half or __nv_bfloat16; L: T or float) ---------------
template <typename T> __device__ __forceinline__ float to_float(T x);
template <> __device__ __forceinline__ float to_float<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <> __device__ __forceinline__ float to_float<float>(float x) { return x; }
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }

template <typename T> __device__ __forceinline__ T bits_as(std::uint32_t b);
template <> __device__ __forceinline__ __half bits_as<__half>(std::uint32_t b) {
  return __ushort_as_half(static_cast<unsigned short>(b));
}
template <> __device__ __forceinline__ __nv_bfloat16 bits_as<__nv_bfloat16>(std::uint32_t b) {
  return __ushort_as_bfloat16(static_cast<unsigned short>(b));
}
template <typename T> __device__ __forceinline__ std::uint32_t bits_of(T x);
template <> __device__ __forceinline__ std::uint32_t bits_of<__half>(__half x) {
  return __half_as_ushort(x);
}
template <> __device__ __forceinline__ std::uint32_t bits_of<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat16_as_ushort(x);
}
template <> __device__ __forceinline__ std::uint32_t bits_of<float>(float x) {
  return __float_as_uint(x);
}

// Element i of a 16-byte vector of L, as bits and as float.
template <typename L> __device__ __forceinline__ std::uint32_t elem_bits(const uint4& v, int i) {
  if constexpr (sizeof(L) == 4) return word(v, i);
  else return (word(v, i / 2) >> (16 * (i % 2))) & 0xFFFFu;
}
template <typename L>
__device__ __forceinline__ void set_elem_bits(uint4& v, int i, std::uint32_t bits) {
  if constexpr (sizeof(L) == 4) {
    set_word(v, i, bits);
  } else {
    const int shift = 16 * (i % 2);
    const std::uint32_t w = word(v, i / 2);
    set_word(v, i / 2, (w & ~(0xFFFFu << shift)) | ((bits & 0xFFFFu) << shift));
  }
}
template <typename L> __device__ __forceinline__ float elem_float(const uint4& v, int i) {
  if constexpr (sizeof(L) == 4) return __uint_as_float(word(v, i));
  else return to_float<L>(bits_as<L>(elem_bits<L>(v, i)));
}

// ---- Lamport sentinel on vectors ------------------------------------------------------
// Bitwise per element (steps 3 and 5). float-sentinel tests with float ==, which also
// matches +0: a canonicalised zero then reads as "not yet written" forever.
template <typename L, Mutant M>
__device__ __forceinline__ bool vector_has_sentinel(const uint4& v) {
  constexpr int kElems = 16 / sizeof(L);
  bool any = false;
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    const std::uint32_t bits = elem_bits<L>(v, i);
    if constexpr (M == Mutant::float_sentinel) {
      any |= (elem_float<L>(v, i) == -0.0f);
    } else if constexpr (sizeof(L) == 4) {
      any |= protocol::is_neg_zero_bits32(bits);
    } else {
      any |= protocol::is_neg_zero_bits16(static_cast<std::uint16_t>(bits));
    }
  }
  return any;
}

template <typename L, Mutant M> __device__ __forceinline__ uint4 canonicalize_vector(uint4 v) {
  if constexpr (M == Mutant::no_canonicalize) return v;
  constexpr int kElems = 16 / sizeof(L);
#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    if constexpr (sizeof(L) == 4)
      set_elem_bits<L>(v, i, protocol::canonicalize_bits32(elem_bits<L>(v, i)));
    else
      set_elem_bits<L>(
          v, i, protocol::canonicalize_bits16(static_cast<std::uint16_t>(elem_bits<L>(v, i))));
  }
  return v;
}

// The fill of a cleared slot. sentinel-width fills an fp32 buffer with the 16-bit pattern.
template <typename L, Mutant M> __device__ __forceinline__ uint4 sentinel_vector() {
  std::uint32_t w;
  if constexpr (sizeof(L) == 4 && M != Mutant::sentinel_width) w = protocol::kNegZero32;
  else w = (std::uint32_t{protocol::kNegZero16} << 16) | protocol::kNegZero16;
  return make_uint4(w, w, w, w);
}

// ---- bounded waits ------------------------------------------------------------------
// One deadline per thread, from the kernel's start: once it passes, every later wait of
// the thread gives up at once, so a hung call ends within about one budget and keeps all
// __syncthreads / cluster barriers matched (no thread leaves early).
struct Deadline {
  long long start;
  unsigned long long budget;
  __device__ __forceinline__ bool expired() const {
    return static_cast<unsigned long long>(clock64() - start) > budget;
  }
};

// ---- seeded injected delays (stress) -------------------------------------------------
struct DelaySpec {
  std::uint32_t seed = 0;  // 0: no delays
  std::uint32_t max_ns = 0;
  std::uint32_t hold_point = 0;  // FusedParams::hold_point, where hold_ns != 0
  std::uint32_t hold_ns = 0;
};
// in_exchange: inside a row's first cluster exchange, between a block's wait and its read of
// the values; in_block_reduce: inside a call's first block reduction, between the block's
// barrier and a warp's read of the warps' values, each warp for its own time (delay points no
// held rank uses).
enum class DelayPoint : std::uint32_t {
  before_push = 1,
  before_poll = 2,
  before_flag = 3,
  in_exchange = 4,
  in_block_reduce = 5
};
static_assert(static_cast<std::uint32_t>(DelayPoint::before_poll) ==
              static_cast<std::uint32_t>(HoldPoint::before_poll));

__device__ __forceinline__ void sleep_ns(std::uint32_t ns) {
  while (ns > 0) {  // __nanosleep takes at most about 1 ms per call
    const std::uint32_t step = ns < 1000000u ? ns : 1000000u;
    __nanosleep(step);
    ns -= step;
  }
}

// The call's seeded delays and its hold, as the kernels take them.
inline DelaySpec delay_spec(const FusedParams& p) {
  return DelaySpec{p.delay_seed, p.delay_max_ns,
                   p.hold_ns != 0 ? static_cast<std::uint32_t>(p.hold_point) : 0u, p.hold_ns};
}

__device__ __forceinline__ std::uint32_t mix32(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  return h ^ (h >> 16);
}

// Whether a rank pauses at a point depends on (seed, rank, point, call): this hash, odd when
// it does (0: no seeded delays).
__device__ __forceinline__ std::uint32_t pause_hash(DelaySpec d, int rank, DelayPoint point,
                                                    std::uint32_t call) {
  if (d.seed == 0 || d.max_ns == 0) return 0;
  return mix32(d.seed ^ mix32(static_cast<std::uint32_t>(rank) * 0x9e3779b9u ^
                              mix32(static_cast<std::uint32_t>(point) + 131u * call)));
}

// Every thread of a block pauses equally (no barrier needed); how long each block pauses
// depends on the block.
__device__ __forceinline__ void inject_delay(DelaySpec d, int rank, DelayPoint point,
                                             std::uint32_t call) {
  // The held rank's whole grid waits at its point (every block alike).
  if (d.hold_ns != 0 && static_cast<std::uint32_t>(point) == d.hold_point) sleep_ns(d.hold_ns);
  const std::uint32_t rank_hash = pause_hash(d, rank, point, call);
  if ((rank_hash & 1u) == 0u) return;
  sleep_ns(mix32(rank_hash ^ (blockIdx.x + 1u) * 0x85ebca6bu) % d.max_ns);
}

// How long this warp pauses at `point` (0: not at all): each warp of a pausing rank's blocks
// for its own time, so that the warps of one block leave the point apart.
__device__ __forceinline__ std::uint32_t warp_pause_ns(DelaySpec d, int rank, DelayPoint point,
                                                       std::uint32_t call) {
  const std::uint32_t rank_hash = pause_hash(d, rank, point, call);
  if ((rank_hash & 1u) == 0u) return 0;
  const std::uint32_t warp = threadIdx.x / 32;
  return mix32(rank_hash ^ (blockIdx.x + 1u) * 0x85ebca6bu ^ (warp + 1u) * 0xc2b2ae35u) % d.max_ns;
}

struct HangInfo {
  std::uint32_t rank, token, awaited_slot, flag, counter, call_index;
  HangSite what;
};

__device__ __forceinline__ void write_hang_record(const DeviceWorkspace& ws, const HangInfo& h,
                                                  const Deadline& d) {
  if (atomicCAS(ws.hang_claim, 0u, 1u) != 0u) return;  // first writer wins
  volatile HangRecord* r = ws.hang_record;
  r->rank = h.rank;
  r->block = blockIdx.x;
  r->token = h.token;
  r->awaited_slot = h.awaited_slot;
  r->flag = h.flag;
  r->counter = h.counter;
  r->call_index = h.call_index;
  r->what = h.what;
  r->cycles_waited = static_cast<std::uint64_t>(clock64() - d.start);
  __threadfence_system();
  r->valid = 1u;
  __threadfence_system();
}

// Release at GPU scope: the thread's earlier loads and stores are performed before what
// follows (an acq_rel fence is MEMBAR.ALL.GPU; __threadfence's sequentially consistent one,
// MEMBAR.SC.GPU, orders more than the protocol needs and costs more).
__device__ __forceinline__ void fence_acq_rel_gpu() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
__device__ __forceinline__ std::uint32_t load_acquire_gpu_u32(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Two adjacent 64-bit words (16-byte aligned) read by one acquire load.
__device__ __forceinline__ void load_acquire_gpu_v2_u64(const std::uint64_t* p, std::uint64_t& lo,
                                                        std::uint64_t& hi) {
  asm volatile("ld.acquire.gpu.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(lo), "=l"(hi)
               : "l"(p)
               : "memory");
}

// One 8-byte relaxed store at GPU scope to an 8-byte aligned address (here: two adjacent
// 32-bit fields written together).
__device__ __forceinline__ void store_relaxed_gpu_u64(void* p, std::uint64_t v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ std::uint32_t load_volatile_u32(const std::uint32_t* p) {
  return *reinterpret_cast<const volatile std::uint32_t*>(p);
}

// Two-shot barrier flags: full-word release stores and acquire loads at system scope.
// barrier-no-release uses plain volatile accesses and no fences.
template <Mutant M> __device__ __forceinline__ void store_flag(std::uint32_t* p, std::uint32_t v) {
  if constexpr (M == Mutant::barrier_no_release) {
    *reinterpret_cast<volatile std::uint32_t*>(p) = v;
  } else {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  }
}
template <Mutant M> __device__ __forceinline__ std::uint32_t load_flag(const std::uint32_t* p) {
  if constexpr (M == Mutant::barrier_no_release) {
    return load_volatile_u32(p);
  } else {
    std::uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
  }
}

// ---- block reductions -----------------------------------------------------------------
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Every thread of the block gets the result; `scratch` holds 32 floats. `late_ns`: this warp's
// pause between the barrier and its read of the warps' values (a seeded delay point; 0: none).
// `guard_scratch` false: the reduce-scratch-unguarded mutant, no barrier before the writes.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* scratch, std::uint32_t late_ns = 0,
                                              bool guard_scratch = true) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = (blockDim.x + 31) / 32;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (guard_scratch) __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (late_ns != 0) sleep_ns(late_ns);
  float r = lane < warps ? scratch[lane] : 0.0f;
  r = kMax ? warp_max(r) : warp_sum(r);
  return r;
}

}  // namespace fusioncheck::kernels::device
