// The example kernel: one-shot allreduce + residual add + RMSNorm over a Lamport exchange, on
// fusioncheck's layout (docs/design.md "One-shot Lamport protocol"): three buffers per rank,
// -0 as "not yet written", the buffer of the previous call cleared. A call:
//   1. waits for the previous kernel in the stream (PDL), before touching anything it wrote;
//   2. thread 0 of each block reads the flag and the clear size of the control block;
//   3. pushes its rows of the input, -0 made +0, into slot [rank] of every rank's data buffer;
//   4. clears its share of its own previous buffer;
//   5. polls its own data buffer, slot by slot, until no element is -0 (bounded: a wait that
//      outlives the budget writes a HangRecord and gives up);
//   6. sums in rank order and writes the outputs, one row per block at a time;
//   7. the last block to finish advances the flag and stores the clear size (no spin: each
//      block arrives once it has read the state, so the last arrival knows every block did);
//   8. triggers its dependents at the end, after a fence, or right after step 1 (early).
#include "device_api.hpp"
#include "steps.hpp"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error \
    "the example kernel needs sm_90 or newer: its PDL wait (griddepcontrol) must never be compiled out"
#endif

namespace my_kernel {
namespace {

namespace fk = fusioncheck::kernels;
using fp::Mutant;

__device__ __forceinline__ Vec to_vec(uint4 w) {
  const unsigned words[4] = {w.x, w.y, w.z, w.w};
  Vec v;
  for (int k = 0; k < 4; ++k) {
    v.lane[2 * k] = static_cast<std::uint16_t>(words[k] & 0xFFFFu);
    v.lane[2 * k + 1] = static_cast<std::uint16_t>(words[k] >> 16);
  }
  return v;
}

__device__ __forceinline__ uint4 to_words(const Vec& v) {
  unsigned words[4];
  for (int k = 0; k < 4; ++k)
    words[k] = v.lane[2 * k] | (static_cast<unsigned>(v.lane[2 * k + 1]) << 16);
  return make_uint4(words[0], words[1], words[2], words[3]);
}

__device__ __forceinline__ Vec load(const std::uint8_t* p) {
  return to_vec(*reinterpret_cast<const uint4*>(p));
}

// A poll must see a peer's store when it lands, never a copy kept from an earlier load.
__device__ __forceinline__ Vec load_polled(const std::uint8_t* p) {
  uint4 w;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
               : "l"(p)
               : "memory");
  return to_vec(w);
}

// One 16-byte store, so that an element never lands in pieces.
__device__ __forceinline__ void store(std::uint8_t* p, const Vec& v) {
  *reinterpret_cast<uint4*>(p) = to_words(v);
}

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ std::uint32_t mix(std::uint32_t a, std::uint32_t b) {
  std::uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u + (a << 6) + (a >> 2));
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  return h ^ (h >> 12);
}

// The seeded delays of a stress case: about half of the ranks pause each block for up to
// delay_max_ns at each point, differently per (seed, rank, block, point, call).
__device__ void pause(const Launch& p, std::uint32_t point) {
  if (p.delay_seed == 0 || p.delay_max_ns == 0) return;  // the same for every thread
  if (threadIdx.x == 0) {
    const std::uint32_t per_rank = mix(p.delay_seed, static_cast<std::uint32_t>(p.rank));
    if (per_rank & 1u) {
      const std::uint32_t h = mix(mix(per_rank, blockIdx.x), mix(point, p.call_index));
      const std::uint64_t until = global_ns() + h % (p.delay_max_ns + 1u);
      while (global_ns() < until) __nanosleep(1000);
    }
  }
  __syncthreads();
}

// One thread's bounded waiting: one budget from the kernel's start for all its polls.
struct Waiter {
  long long start;
  bool gave_up;
};

// After a failed poll: whether to stop waiting. The first thread of the rank whose budget
// passed records what it awaited; every other wait of the rank then stops at once, so the
// kernel ends within about one budget and no __syncthreads is left unmatched.
__device__ bool expired(const Launch& p, Waiter& w, std::uint32_t flag, int token, int slot) {
  if (w.gave_up) return true;
  if (*static_cast<volatile unsigned*>(p.hang_claim) != 0u) return w.gave_up = true;
  const long long waited = clock64() - w.start;
  if (waited < static_cast<long long>(p.spin_budget_cycles)) return false;
  w.gave_up = true;
  if (atomicCAS(p.hang_claim, 0u, 1u) == 0u) {
    volatile fk::HangRecord* r = p.hang;
    r->rank = static_cast<std::uint32_t>(p.rank);
    r->block = blockIdx.x;
    r->token = static_cast<std::uint32_t>(token);
    r->awaited_slot = static_cast<std::uint32_t>(slot);
    r->flag = flag;
    r->counter = *reinterpret_cast<volatile std::uint32_t*>(&p.control->arrival_counter);
    r->call_index = p.call_index;
    r->what = fk::HangSite::lamport_poll;
    r->cycles_waited = static_cast<std::uint64_t>(waited);
    __threadfence_system();  // the fields before valid, as the host reads them
    r->valid = 1u;
  }
  return true;
}

template <class E, Mutant M>
__device__ Vec poll(const Launch& p, Waiter& w, const std::uint8_t* at, std::uint32_t flag,
                    int token, int slot) {
  Vec v = load_polled(at);
  while (!landed<E, M>(v) && !expired(p, w, flag, token, slot)) v = load_polled(at);
  return v;
}

// Step 3: this block's rows of the input into slot [rank] of every rank's data buffer.
template <Mutant M>
__device__ void push(const Launch& p, const Rotation& rot, std::uint64_t elems) {
  const auto* input = static_cast<const std::uint8_t*>(p.input);
  const std::uint64_t buffer = static_cast<std::uint64_t>(rot.data_buffer) * p.comm_size;
  const int vecs = p.hidden / kLanes;
  for (int row = blockIdx.x; row < p.tokens; row += gridDim.x)
    for (int v = threadIdx.x; v < vecs; v += blockDim.x) {
      const std::uint64_t i =
          static_cast<std::uint64_t>(row) * p.hidden + static_cast<std::uint64_t>(v) * kLanes;
      const Vec x = pushed<M>(load(input + 2 * i));
      const std::uint64_t at = buffer + 2 * slot_index(p.rank, elems, i);
      for (int r = 0; r < p.ranks; ++r) store(p.buffers[r] + at, x);
    }
}

// Step 4: the sentinel over what the previous call wrote into this rank's clear buffer.
__device__ void clear(const Launch& p, const Rotation& rot) {
  std::uint8_t* mine =
      p.buffers[p.rank] + static_cast<std::uint64_t>(rot.clear_buffer) * p.comm_size;
  const Vec sentinel = sentinel_vec();
  const std::uint64_t vectors = rot.clear_elems / kLanes;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t v = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       v < vectors; v += stride)
    store(mine + 16 * v, sentinel);
}

// The sum over the block, the same in every thread (and on every rank: the order depends
// on the block size alone). blockDim.x is a multiple of 32.
__device__ float block_sum(float v, float* partial) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (unsigned k = 0; k < blockDim.x / 32; ++k) total += partial[k];
  __syncthreads();  // `partial` is reused by the next row
  return total;
}

// Steps 5 and 6 for one row.
template <class E, Mutant M>
__device__ void reduce_row(const Launch& p, const Rotation& rot, std::uint64_t elems, int row,
                           std::uint32_t flag, Waiter& w, float* partial) {
  const std::uint8_t* data =
      p.buffers[p.rank] + static_cast<std::uint64_t>(rot.data_buffer) * p.comm_size;
  const auto* residual_in = static_cast<const std::uint8_t*>(p.residual_in);
  const auto* gamma = static_cast<const std::uint8_t*>(p.gamma);
  auto* residual_out = static_cast<std::uint8_t*>(p.residual_out);
  const int vecs = p.hidden / kLanes;
  const std::uint64_t row_start = static_cast<std::uint64_t>(row) * p.hidden;
  float squares = 0.0f;
  for (int v = threadIdx.x; v < vecs; v += blockDim.x) {
    const std::uint64_t i = row_start + static_cast<std::uint64_t>(v) * kLanes;
    float acc[kLanes];
    for (int r = 0; r < p.ranks; ++r)
      accumulate<E>(acc, poll<E, M>(p, w, data + 2 * slot_index(r, elems, i), flag, row, r), r,
                    !p.fp32_accumulation);
    const Vec sum = rounded<E>(acc);
    if (p.allreduce_only) {
      store(static_cast<std::uint8_t*>(p.allreduce_out) + 2 * i, sum);
      continue;
    }
    Vec out;
    squares += add_residual<E>(sum, load(residual_in + 2 * i), out);
    store(residual_out + 2 * i, out);
  }
  if (p.allreduce_only) return;  // the same for every thread
  const float factor = norm_factor(block_sum(squares, partial), p.hidden, p.eps);
  for (int v = threadIdx.x; v < vecs; v += blockDim.x) {
    const std::uint64_t i = row_start + static_cast<std::uint64_t>(v) * kLanes;
    // residual_out was written by this very thread above.
    const Vec x = load(residual_out + 2 * i);
    store(static_cast<std::uint8_t*>(p.norm_out) + 2 * i,
          normed<E>(x, load(gamma + 16 * v), factor, p.weight_bias));
  }
}

// Step 7. Every block read the state before it arrives (fence, then the atomic), so the
// last arrival may overwrite it: no block of this call reads it afterwards.
__device__ void arrive(const Launch& p, const Rotation& rot) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence();
  const unsigned arrived = atomicAdd(&p.control->arrival_counter, 1u);
  if (arrived + 1 != gridDim.x) return;
  __threadfence();
  volatile fp::ControlBlock* control = p.control;
  control->flag = rot.next_flag;
  control->clear_size = rot.next_clear_size;
  control->arrival_counter = 0u;
}

template <class E, Mutant M>
__global__ void __launch_bounds__(kMaxThreads) fused_kernel(const Launch p) {
  __shared__ float partial[kMaxThreads / 32];
  __shared__ std::uint32_t flag;
  __shared__ std::uint64_t clear_size;
  // Step 1: nothing the previous kernel wrote (inputs, workspace) is read before this.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (p.early_trigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  Waiter w{clock64(), false};
  if (threadIdx.x == 0) {
    const volatile fp::ControlBlock* control = p.control;
    flag = control->flag;
    clear_size = control->clear_size;
  }
  __syncthreads();
  const std::uint64_t elems = static_cast<std::uint64_t>(p.tokens) * p.hidden;
  const Rotation rot = rotation<M>(flag, clear_size, p.ranks, elems);
  pause(p, 0);
  push<M>(p, rot, elems);
  clear(p, rot);
  pause(p, 1);
  for (int row = blockIdx.x; row < p.tokens; row += gridDim.x)
    reduce_row<E, M>(p, rot, elems, row, flag, w, partial);
  pause(p, 2);
  arrive(p, rot);
  if (!p.early_trigger) {
    __threadfence();  // every output of the block visible before a dependent may read it
    __syncthreads();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
}

__global__ void fill_sentinel_kernel(uint4* dst, std::uint64_t vectors) {
  const uint4 sentinel = to_words(sentinel_vec());
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t v = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       v < vectors; v += stride)
    dst[v] = sentinel;
}

template <class E, Mutant M> cudaError_t launch_instance(const Launch& call, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(call.blocks));
  config.blockDim = dim3(static_cast<unsigned>(call.threads));
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = call.use_pdl ? 1 : 0;
  config.attrs = attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, fused_kernel<E, M>, call);
}

}  // namespace

cudaError_t launch(const Launch& call, Mutant mutant, cudaStream_t stream) {
  if (call.blocks < 1 || call.threads < 32 || call.threads > kMaxThreads || call.threads % 32 != 0)
    return cudaErrorInvalidValue;
  if (!call.bf16)
    return mutant == Mutant::none ? launch_instance<F16, Mutant::none>(call, stream)
                                  : cudaErrorNotSupported;
  switch (mutant) {  // kMutants (steps.hpp), bf16 only
    case Mutant::none: return launch_instance<Bf16, Mutant::none>(call, stream);
    case Mutant::wrong_clear_buffer:
      return launch_instance<Bf16, Mutant::wrong_clear_buffer>(call, stream);
    case Mutant::clear_size_current:
      return launch_instance<Bf16, Mutant::clear_size_current>(call, stream);
    case Mutant::float_sentinel: return launch_instance<Bf16, Mutant::float_sentinel>(call, stream);
    case Mutant::no_canonicalize:
      return launch_instance<Bf16, Mutant::no_canonicalize>(call, stream);
    default: return cudaErrorNotSupported;
  }
}

cudaError_t fill_sentinel(void* dst, std::uint64_t bytes, cudaStream_t stream) {
  if (bytes % 16 != 0) return cudaErrorInvalidValue;
  fill_sentinel_kernel<<<256, 256, 0, stream>>>(static_cast<uint4*>(dst), bytes / 16);
  return cudaGetLastError();
}

}  // namespace my_kernel
