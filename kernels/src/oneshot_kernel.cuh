#pragma once
// The one-shot Lamport fused kernel (docs/design.md steps 1-8) and its launcher template.
// Instantiated per (ranks N, element type T, Lamport element L, mutant M, instrument I,
// epilogue scope S) in the oneshot_*.cu and wait_profile.cu files; dispatched at run time by
// oneshot.cu.
#include "device/epilogue.cuh"
#include "instances.hpp"

namespace fusioncheck::kernels::device {

struct OneShotArgs {
  DeviceWorkspace ws;
  EpilogueArgs e;
  const void* input = nullptr;
  int rank = 0;
  std::uint64_t size = 0;  // elements per rank: tokens * hidden
  int cluster_size = 1;    // blocks per token row; 1 = one block per row, no cluster
  bool trigger_early = false;
  std::uint32_t call_index = 0;
  unsigned long long budget = 0;
  DelaySpec delay;
};

// Step 7 (block 0, one thread, after all blocks arrived). clear_size and the 8 bytes holding
// f and the two-shot flag are each written whole, as the other blocks' 16-byte load in step 2
// reads them (protocol/workspace.hpp says why); the two-shot flag, which no one-shot call
// changes, is written back as read.
template <int N, Mutant M>
__device__ __forceinline__ void advance_control(protocol::ControlBlock* cb, std::uint32_t f,
                                                std::uint32_t two_shot_flag, std::uint64_t size) {
  volatile protocol::ControlBlock* v = cb;
  store_relaxed_gpu_u64(&cb->flag, static_cast<std::uint64_t>(protocol::next_flag(f, M)) |
                                       (static_cast<std::uint64_t>(two_shot_flag) << 32));
  v->clear_size = static_cast<std::uint64_t>(N) * size;
  if constexpr (M != Mutant::counter_not_reset) v->arrival_counter = 0u;
  // No fence here: the next call reads these after its grid-dependency wait (step 1), which
  // sees every write of this grid; an at-end trigger fences them with the outputs (step 8).
}

// Input vector of K elements of T, widened to L where L is fp32.
template <typename T, typename L>
__device__ __forceinline__ uint4 load_input_vector(const void* input, std::uint64_t idx) {
  if constexpr (sizeof(L) == 2) {
    return *reinterpret_cast<const uint4*>(static_cast<const T*>(input) + idx);
  } else {
    float x[4];
    load_row_vector<T, 4>(input, idx, x);
    return make_uint4(__float_as_uint(x[0]), __float_as_uint(x[1]), __float_as_uint(x[2]),
                      __float_as_uint(x[3]));
  }
}

// Step 3's store. torn-element writes each element's bytes separately, high byte first,
// with a pause between: a poller sees a non-sentinel element that is only half written.
template <typename L, Mutant M> __device__ __forceinline__ void push_vector(L* dst, uint4 v) {
  if constexpr (M == Mutant::torn_element) {
    auto* bytes = reinterpret_cast<std::uint8_t*>(dst);
    for (int half = 1; half >= 0; --half) {
      for (int i = 0; i < 16; ++i) {
        const int byte_in_elem = i % static_cast<int>(sizeof(L));
        const bool high = byte_in_elem >= static_cast<int>(sizeof(L)) / 2;
        if (high == (half == 1))
          store_u8(bytes + i, static_cast<std::uint8_t>(word(v, i / 4) >> (8 * (i % 4))));
      }
      if (half == 1) __nanosleep(2000);
    }
  } else {
    store16(dst, v);
  }
}

// What an instance carries besides the protocol. A template parameter rather than a
// `#define`, so that every kind lives in one library without an ODR clash, and the normal
// instances carry none of the others' code.
//   none             what every job runs: bounded polls that leave a hang record
//   wait_profile     also records per block the poll cycles per peer and the work cycles
//                    (wait_profile.cu, gpu bench --wait-profile)
//   unbounded_polls  BENCHMARK ONLY: the deadline tests compile away, otherwise the same
//                    kernel, so gpu bench can time what the bound costs side by side
//                    (oneshot_unbounded_polls.cu). A lost push spins for ever: never for checking.
enum class Instrument { none, wait_profile, unbounded_polls };

// Whether an instance carries the cluster path (a token row split over the blocks of a
// thread-block cluster, the partial sums meeting in distributed shared memory). That code
// costs 2-4 % at 1-16 tokens even where no call takes it (measured on one H200), so the
// instances of the normal calls also come built without it (left_out): a twin that the
// calls taking no cluster run (OneShotEntry::cluster_free).
enum class ClusterCode { compiled, left_out };

// Polls of one Lamport slot before the first read of the clock (see poll_slots). None at 16
// ranks, where the extra loops double the kernel's spills (ptxas -v: 1164 instead of 528
// bytes of spill stores, fp16); 16 ranks are not timed.
template <int N> inline constexpr int kPollsBeforeClock = N <= 8 ? 8 : 0;

// The steps below are always inlined into the kernel. Some take the kernel's scalars by
// reference: the front end gives a by-value argument of a call in the kernel's outermost
// block a temporary at the top of the kernel, and those temporaries change the order in
// which it turns the kernel's locals into registers (see the kernel).

// The Lamport buffers of the call: a rank's three buffers are comm_size bytes apart
// (docs/design.md, Workspace). buffer0 holds each rank's buffer 0 where N is small enough
// for them to stay in registers; pointer-stride reads the wrong entry of the table, as its
// bug does.
template <int N, typename L, Mutant M> struct LamportBuffers {
  static constexpr bool kBasesInRegisters =
      N <= 2;  // from 4 ranks on they make the kernel spill (ptxas -v)
  static constexpr int kBases = kBasesInRegisters ? N : 1;
  const OneShotArgs& a;
  std::uint8_t* const (&buffer0)[kBases];
  std::uint8_t* my_buffer0;

  // Buffer `buffer` of rank `rank` (`rank` is a compile-time index into buffer0).
  __device__ __forceinline__ L* of(int buffer, int rank) const {
    if constexpr (M == Mutant::pointer_stride)
      return reinterpret_cast<L*>(a.ws.lamport[rank * protocol::kLamportBuffers + buffer]);
    std::uint8_t* base;
    if constexpr (kBasesInRegisters) base = buffer0[rank];
    else base = reinterpret_cast<std::uint8_t*>(a.ws.lamport[detail::table_lamport(0, rank, N)]);
    return reinterpret_cast<L*>(base + static_cast<std::uint64_t>(buffer) * a.ws.comm_size);
  }

  __device__ __forceinline__ L* mine(int buffer) const {
    if constexpr (M == Mutant::pointer_stride) return of(buffer, a.rank);
    return reinterpret_cast<L*>(my_buffer0 + static_cast<std::uint64_t>(buffer) * a.ws.comm_size);
  }
};

// The buffers' addresses are fixed per workspace: they are read from the parameters before
// step 1, so that no constant-cache miss lands on the path of the first push.
template <int N, typename L, Mutant M>
__device__ __forceinline__ LamportBuffers<N, L, M> read_lamport_bases(
    const OneShotArgs& a, std::uint8_t* (&buffer0)[LamportBuffers<N, L, M>::kBases]) {
  if constexpr (LamportBuffers<N, L, M>::kBasesInRegisters)
#pragma unroll
    for (int r = 0; r < N; ++r)
      buffer0[r] = reinterpret_cast<std::uint8_t*>(a.ws.lamport[detail::table_lamport(0, r, N)]);
  std::uint8_t* const my_buffer0 =
      reinterpret_cast<std::uint8_t*>(a.ws.lamport[detail::table_lamport(0, a.rank, N)]);
  return LamportBuffers<N, L, M>{a, buffer0, my_buffer0};
}

// The compiler reads most parameters where they are used, after the wait, and a launch's
// parameters are new to the SM's constant cache. So one thread other than thread 0 (which
// goes on to the state read) reads a word of each 64-byte parameter line the call needs
// before the wait, where a miss overlaps the tail of the kernel before it: the control block's
// address (its line also holds the buffer table's first entries), the table's last entry
// for N ranks (up to 8 ranks the two cover the table; at 16 one line in the middle is
// left), the buffer stride and the row shape. The lines of the input, the rank and the
// trigger are read before the wait anyway. The sum goes to shared memory through a
// volatile store so that the reads are not dropped. With the early trigger this makes 1-16
// tokens 1-6 % faster on one H200; with the at-end trigger no kernel before it runs beside
// the wait, and it changes nothing.
template <int N>
__device__ __forceinline__ void touch_parameter_lines(const OneShotArgs& a,
                                                      std::uint64_t& s_parameter_lines) {
  if (threadIdx.x == (blockDim.x > 32 ? 32u : 0u)) {
    *reinterpret_cast<volatile std::uint64_t*>(&s_parameter_lines) =
        reinterpret_cast<std::uintptr_t>(a.ws.control) ^
        a.ws.lamport[detail::table_lamport(0, N - 1, N)] ^ a.ws.comm_size ^
        static_cast<std::uint64_t>(a.e.tokens);
  }
}

// inputs-before-wait: the thread's first residual and gamma vectors of its first row are
// read before the wait (FlashInfer before 0.7.1 constructed FusedOp there).
template <typename T, Mutant M, ClusterCode R, int K>
__device__ __forceinline__ void load_early_inputs(const OneShotArgs& a,
                                                  float (&early_inputs)[2][K]) {
  if constexpr (M == Mutant::inputs_before_wait) {
    const int early_c = R == ClusterCode::compiled ? a.cluster_size : 1;
    const int early_width = a.e.hidden / K / early_c;  // vectors of a row this block holds
    const int early_v = (early_c > 1 ? static_cast<int>(blockIdx.x % early_c) * early_width : 0) +
                        static_cast<int>(threadIdx.x);
    const int early_t =
        early_c > 1 ? static_cast<int>(blockIdx.x / early_c) : static_cast<int>(blockIdx.x);
    const int early_v_end =
        (early_c > 1 ? static_cast<int>(blockIdx.x % early_c) * early_width : 0) + early_width;
    const bool outside = early_t >= a.e.tokens || early_v >= early_v_end;
    if (!outside && a.e.residual_in != nullptr && a.e.gamma != nullptr) {
      load_row_vector<T, K>(a.e.residual_in,
                            static_cast<std::uint64_t>(early_t) * a.e.hidden + early_v * K,
                            early_inputs[0]);
      load_row_vector<T, K>(a.e.gamma, static_cast<std::uint64_t>(early_v) * K, early_inputs[1]);
    }
  }
}

// The token rows (groups, from group on) and the vectors [v_begin, v_end) of each that this
// block holds, as the kernel splits them.
struct BlockRows {
  int C;  // blocks per row
  int groups, group, v_begin, v_end;
  std::uint64_t hidden;
};

// The thread's first input vector (step 3) is loaded before the state is read (step 2):
// it depends only on step 1, so the two memory latencies overlap instead of adding up.
template <typename T, typename L>
__device__ __forceinline__ uint4 load_first_input(const OneShotArgs& a, const BlockRows& rows) {
  constexpr int K = 16 / sizeof(L);
  const bool has_first =
      rows.group < a.e.tokens && rows.v_begin + static_cast<int>(threadIdx.x) < rows.v_end;
  uint4 first_in{};
  if (has_first)
    first_in = load_input_vector<T, L>(
        a.input,
        rows.group * rows.hidden + static_cast<std::uint64_t>(rows.v_begin + threadIdx.x) * K);
  return first_in;
}

// Step 2, state read (thread 0): the flag and clear size go to shared memory for the block,
// then the block arrives (or, alone in its grid, updates the state at once).
template <int N, Mutant M>
__device__ __forceinline__ void read_state_and_arrive(const OneShotArgs& a,
                                                      protocol::ControlBlock* cb,
                                                      const bool& single_block,
                                                      std::uint32_t& s_flag, std::uint64_t& s_clear,
                                                      std::uint32_t& two_shot_flag) {
  if (threadIdx.x == 0) {
    // One acquire load of clear_size and the word holding the flag (they share 16 bytes,
    // protocol/workspace.hpp): the arrival below cannot become visible before it.
    std::uint64_t clear_size = 0, flag_word = 0;
    load_acquire_gpu_v2_u64(&cb->clear_size, clear_size, flag_word);
    const std::uint32_t flag = static_cast<std::uint32_t>(flag_word);  // flag is the low half
    two_shot_flag = static_cast<std::uint32_t>(flag_word >> 32);
    s_clear = clear_size;
    s_flag = flag;
    if (single_block) {
      advance_control<N, M>(cb, flag, two_shot_flag, a.size);
    } else {
      atomicAdd(&cb->arrival_counter, 1u);
      if constexpr (M == Mutant::flag_before_arrival)
        if (blockIdx.x == 0) advance_control<N, M>(cb, flag, two_shot_flag, a.size);
    }
  }
}

// Step 3's store of one vector into slot [my_rank] of every rank's data buffer.
template <int N, typename L, Mutant M>
__device__ __forceinline__ void push_to_every_rank(const OneShotArgs& a,
                                                   const LamportBuffers<N, L, M>& lamport,
                                                   int data_b, std::uint64_t idx, uint4 vec) {
#pragma unroll
  for (int r = 0; r < N; ++r) push_vector<L, M>(lamport.of(data_b, r) + a.rank * a.size + idx, vec);
}

// Step 4, clear: what the call before this one wrote into my clear buffer.
template <int N, typename L, Mutant M>
__device__ __forceinline__ void clear_previous_call(const OneShotArgs& a, std::uint64_t clear_size,
                                                    const LamportBuffers<N, L, M>& lamport,
                                                    const int& clear_b) {
  constexpr int K = 16 / sizeof(L);
  const std::uint64_t n = protocol::elements_to_clear(clear_size, N * a.size, M);
  L* buf = lamport.mine(clear_b);
  const uint4 sentinel = sentinel_vector<L, M>();
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x * K;
  for (std::uint64_t i = (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * K;
       i < n; i += stride)
    store16(buf + i, sentinel);
}

// Step 5 for one vector: the N slots at `idx` of my data buffer, each polled (bounded) until
// its push lands. All N loads are issued before any is tested, so their latencies overlap.
template <int N, typename L, Mutant M, Instrument I>
__device__ __forceinline__ void poll_slots(const OneShotArgs& a, const L* mine, int t,
                                           std::uint64_t idx, std::uint32_t f,
                                           const Deadline& deadline, uint4 (&vals)[N],
                                           unsigned long long (&my_poll)[N]) {
  constexpr bool kProfile = I == Instrument::wait_profile;
  constexpr bool kBounded = I != Instrument::unbounded_polls;
#pragma unroll
  for (int r = 0; r < N; ++r) vals[r] = load_volatile16(mine + r * a.size + idx);
#pragma unroll
  for (int r = 0; r < N; ++r) {
    const L* p = mine + r * a.size + idx;
    const long long p0 = kProfile ? clock64() : 0;
    uint4 x = vals[r];
    // The first polls do not read the clock. A loop that reads it on every turn sees a
    // landed push 0.2-0.5 us later at 1-16 tokens on two H200s; these polls lengthen the
    // bound by at most kPollsBeforeClock<N> load latencies.
    for (int i = 0; i < kPollsBeforeClock<N> && vector_has_sentinel<L, M>(x); ++i)
      x = load_volatile16(p);
    while (vector_has_sentinel<L, M>(x)) {
      if (kBounded && deadline.expired()) {
        write_hang_record(
            a.ws,
            HangInfo{static_cast<std::uint32_t>(a.rank), static_cast<std::uint32_t>(t),
                     static_cast<std::uint32_t>(r), f, 0u, a.call_index, HangSite::lamport_poll},
            deadline);
        break;
      }
      x = load_volatile16(p);
    }
    if constexpr (kProfile) my_poll[r] += clock64() - p0;
    vals[r] = x;
  }
}

// Step 6's sum of one vector over the N slots, in rank order, rounded to T as the epilogue
// scope asks.
template <int N, typename T, typename L, EpilogueScope S, int K>
__device__ __forceinline__ void sum_slots(const EpilogueArgs& e, const uint4 (&vals)[N],
                                          float (&ar)[K]) {
  if (fp32_accumulation_of<S>(e)) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float s = elem_float<L>(vals[0], k);
#pragma unroll
      for (int r = 1; r < N; ++r) s += elem_float<L>(vals[r], k);
      ar[k] = s;
    }
    round_all_to<T>(ar);
  } else {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float s = round_to<T>(elem_float<L>(vals[0], k));
#pragma unroll
      for (int r = 1; r < N; ++r) s = round_to<T>(s + elem_float<L>(vals[r], k));
      ar[k] = s;
    }
  }
}

// Steps 5 and 6, poll + epilogue: poll all N slots (bounded), reduce in rank order, epilogue.
template <int N, typename T, Mutant M, EpilogueScope S, int K, typename SumVector>
__device__ __forceinline__ void poll_and_epilogue(const OneShotArgs& a, const BlockRows& rows,
                                                  const std::uint32_t& f, const Deadline& deadline,
                                                  RowReduction& red, SumVector& sum_vector,
                                                  const float (&early_inputs)[2][K]) {
  inject_delay(a.delay, a.rank, DelayPoint::before_poll, a.call_index);
  for (int t = rows.group; t < a.e.tokens; t += rows.groups) {
    if constexpr (M == Mutant::inputs_before_wait)
      process_row<T, K, S, Rounding::pairs, true>(a.e, t, rows.v_begin, rows.v_end, red, sum_vector,
                                                  t == rows.group ? early_inputs : nullptr);
    else process_row<T, K, S>(a.e, t, rows.v_begin, rows.v_end, red, sum_vector);
    if (red.exchange_expired) {  // a block of the row's cluster came later than the budget
      write_hang_record(
          a.ws,
          HangInfo{static_cast<std::uint32_t>(a.rank), static_cast<std::uint32_t>(t), 0u, f,
                   static_cast<std::uint32_t>(rows.C), a.call_index, HangSite::cluster_exchange},
          deadline);
      red.exchange_expired = false;
    }
  }
  // A cluster barrier arrived on must be waited on: calls whose pattern reduces nothing.
  if (rows.C > 1 && red.exchanges == 0) cluster_exchange_wait_unused();
}

// Step 7, update (block 0, thread 0, once every block has arrived): advance the state for
// the next call. Mutant instances whose bug moves the update to step 2 skip it here.
template <int N, Mutant M, Instrument I>
__device__ __forceinline__ void update_state(const OneShotArgs& a, protocol::ControlBlock* cb,
                                             const std::uint32_t& f, std::uint32_t& two_shot_flag,
                                             std::uint32_t& arrivals, const bool& single_block,
                                             const Deadline& deadline) {
  constexpr bool kBounded = I != Instrument::unbounded_polls;
  __syncthreads();
  if constexpr (M != Mutant::flag_before_arrival) {
    if (!single_block && blockIdx.x == 0 && threadIdx.x == 0) {
      inject_delay(a.delay, a.rank, DelayPoint::before_flag, a.call_index);
      std::uint32_t c = arrivals;
      bool arrived = true;
      while (c != gridDim.x) {
        if (kBounded && deadline.expired()) {
          write_hang_record(a.ws,
                            HangInfo{static_cast<std::uint32_t>(a.rank), 0u, 0u, f, c, a.call_index,
                                     HangSite::arrival_counter},
                            deadline);
          arrived = false;
          break;
        }
        c = load_acquire_gpu_u32(&cb->arrival_counter);
      }
      if (arrived) advance_control<N, M>(cb, f, two_shot_flag, a.size);
    }
  }
}

// Step 8 at the end, fence: every thread's outputs (and step 7) are done before the trigger.
template <Instrument I, typename StepDone>
__device__ __forceinline__ void fence_and_trigger_at_end(const OneShotArgs& a,
                                                         StepDone& step_done) {
  if (!a.trigger_early) {
    fence_acq_rel_gpu();
    __syncthreads();
    step_done(7);
    if constexpr (I != Instrument::wait_profile)
      pdl_trigger();  // the profile's bookkeeping triggers after it
  }
}

// Steps 1-8 in order. The split of the rows over the block (just after step 1), the push
// loops (step 3) and the profile's bookkeeping stay in this body: the order in which the front
// end makes the kernel's locals registers, and so the register numbering ptxas starts from,
// depends on how many argument temporaries precede the split's variables and how many loop
// variables follow them (the wait-profile instances would differ otherwise).
template <int N, typename T, typename L, Mutant M, Instrument I, EpilogueScope S, ClusterCode R>
__global__ void __launch_bounds__(1024) fc_oneshot_pdl_kernel(const OneShotArgs a) {
  if constexpr (M == Mutant::empty_body) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
    return;  // FlashInfer PR 3903 class: the body exists only below sm_120
#endif
  }
  constexpr bool kProfile = I == Instrument::wait_profile;
  constexpr int K = 16 / sizeof(L);
  // The clock read at the start is part of what the bound costs: the unbounded instance skips it.
  const Deadline deadline{I != Instrument::unbounded_polls || kProfile ? clock64() : 0ll, a.budget};
  // Profile only: when thread 0 finished each step (kWaitProfileStepNames).
  long long step_end[kProfile ? kWaitProfileSteps : 1] = {};
  auto step_done = [&](int step) {
    if constexpr (kProfile)
      if (threadIdx.x == 0) step_end[step] = clock64() - deadline.start;
  };
  __shared__ ClusterExchange cluster_exchange_space;
  __shared__ std::uint32_t s_flag;
  __shared__ std::uint64_t s_clear;
  __shared__ float scratch[32];
  __shared__ unsigned long long s_poll[kProfile ? N : 1];

  // Before step 1, where each overlaps the tail of the kernel before it.
  std::uint8_t* buffer0[LamportBuffers<N, L, M>::kBases] = {};
  const LamportBuffers<N, L, M> lamport = read_lamport_bases<N, L, M>(a, buffer0);
  {
    __shared__ std::uint64_t s_parameter_lines;  // written, never read
    touch_parameter_lines<N>(a, s_parameter_lines);
  }
  if constexpr (R == ClusterCode::compiled)
    if (a.cluster_size > 1) cluster_exchange_init(cluster_exchange_space);
  float early_inputs[2][K] = {};
  load_early_inputs<T, M, R>(a, early_inputs);

  pdl_wait<M>();  // step 1, grid-dependency wait
  step_done(0);
  if (a.trigger_early || M == Mutant::early_trigger) pdl_trigger();  // step 8, early

  // The block's rows. Without a cluster a block is a group and holds the whole row: the
  // integer divisions of the cluster path would otherwise sit on the way to the first load. A
  // left_out instance is never launched with a cluster (launch_oneshot_instance refuses it).
  const int C = R == ClusterCode::compiled ? a.cluster_size : 1;
  const int vrow = a.e.hidden / K;
  int groups = gridDim.x, group = blockIdx.x, v_begin = 0, v_end = vrow;
  if (C > 1) {
    groups = gridDim.x / C;
    group = blockIdx.x / C;
    v_begin = (blockIdx.x % C) * (vrow / C);
    v_end = v_begin + vrow / C;
  }
  const std::uint64_t hidden = a.e.hidden;
  const BlockRows rows{C, groups, group, v_begin, v_end, hidden};
  const uint4 first_in = load_first_input<T, L>(a, rows);
  RowReduction red{scratch, &cluster_exchange_space, C, a.budget};
  red.delay = ExchangeDelay{a.delay, a.rank, a.call_index};
  red.one_buffer = M == Mutant::cluster_one_buffer;
  red.scratch_unguarded = M == Mutant::reduce_scratch_unguarded;
  protocol::ControlBlock* cb = a.ws.control;
  std::uint32_t two_shot_flag = 0;  // thread 0: written back unchanged by step 7
  // A grid of one block (a one-token call without a cluster, or any call whose grid bound
  // is one block) is all the blocks of the call: once its thread 0 has read the state, every
  // block has arrived, so it updates the state right away (step 7 at step 2) and never adds
  // to the counter, which stays 0. That takes the update off the tail of the call: 2 % at
  // 1 x 4096 on one H200. Mutant instances keep the counter at every grid size, so that its
  // bugs show at one block too.
  const bool single_block = M == Mutant::none && gridDim.x == 1;
  read_state_and_arrive<N, M>(a, cb, single_block, s_flag, s_clear, two_shot_flag);  // step 2
  step_done(1);
  __syncthreads();  // step 2's barrier: every thread sees the state thread 0 read
  step_done(2);
  const std::uint32_t f = s_flag;
  const int data_b = protocol::data_buffer_index(f, M);
  const int clear_b = protocol::clear_buffer_index(f, M);
  unsigned long long my_poll[N] = {};
  if constexpr (kProfile) {
    if (threadIdx.x < N) s_poll[threadIdx.x] = 0;
    __syncthreads();
  }

  {  // Step 3, push: my rows' vectors into slot [my_rank] of every rank's data buffer.
    inject_delay(a.delay, a.rank, DelayPoint::before_push, a.call_index);
    for (int t = group; t < a.e.tokens; t += groups) {
      for (int v = v_begin + threadIdx.x; v < v_end; v += blockDim.x) {
        const std::uint64_t idx = t * hidden + static_cast<std::uint64_t>(v) * K;
        const bool first = t == group && v == v_begin + static_cast<int>(threadIdx.x);
        const uint4 vec =
            canonicalize_vector<L, M>(first ? first_in : load_input_vector<T, L>(a.input, idx));
        push_to_every_rank<N, L, M>(a, lamport, data_b, idx, vec);
      }
    }
  }
  step_done(3);
  clear_previous_call<N, L, M>(a, s_clear, lamport, clear_b);  // step 4
  step_done(4);

  const L* mine = lamport.mine(data_b);
  // Step 7's first read of the arrival counter is issued now, so that its latency hides
  // behind the polls; by then every block has usually arrived, and step 7 need not read again.
  // Acquire loads: the state update of step 7 cannot be ordered before the arrivals it saw.
  std::uint32_t arrivals = 0;
  if (!single_block && blockIdx.x == 0 && threadIdx.x == 0)
    arrivals = load_acquire_gpu_u32(&cb->arrival_counter);
  auto sum_vector = [&](int t, int v, float(&ar)[K]) {
    const std::uint64_t idx = t * hidden + static_cast<std::uint64_t>(v) * K;
    uint4 vals[N];
    poll_slots<N, L, M, I>(a, mine, t, idx, f, deadline, vals, my_poll);
    sum_slots<N, T, L, S>(a.e, vals, ar);
  };
  poll_and_epilogue<N, T, M, S>(a, rows, f, deadline, red, sum_vector, early_inputs);  // 5, 6
  step_done(5);
  update_state<N, M, I>(a, cb, f, two_shot_flag, arrivals, single_block, deadline);  // step 7
  step_done(6);
  fence_and_trigger_at_end<I>(a, step_done);  // step 8
  if constexpr (kProfile) {
    // The clock is read before the profile's own bookkeeping; the per-thread sums meet one
    // warp at a time (one shared atomic per warp, not per thread, which would take longer
    // than the call it measures).
    const unsigned long long end = clock64();
    for (int r = 0; r < N; ++r) {
      unsigned long long v = my_poll[r];
      for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
      if ((threadIdx.x & 31) == 0) atomicAdd(&s_poll[r], v);
    }
    __syncthreads();
    if (threadIdx.x == 0 && a.ws.wait_profile != nullptr && blockIdx.x < kMaxWaitProfileBlocks) {
      WaitProfileEntry& w = a.ws.wait_profile[blockIdx.x];
      unsigned long long total = 0;
      for (int r = 0; r < protocol::kMaxRanks; ++r) {
        const unsigned long long avg = r < N ? s_poll[r] / blockDim.x : 0ull;
        w.poll_cycles_by_peer[r] = avg;
        total += avg;
      }
      const unsigned long long elapsed = end - deadline.start;
      w.poll_cycles = total;
      w.work_cycles = elapsed > total ? elapsed - total : 0ull;
      for (int i = 0; i < kWaitProfileSteps; ++i)
        w.step_end_cycles[i] = static_cast<unsigned long long>(step_end[i]);
    }
    if (!a.trigger_early) pdl_trigger();  // after the profile's bookkeeping
  }
}

// Host side of one instance: launch, and the cluster-size query for its kernel.
template <int N, typename T, typename L, Mutant M, Instrument I, EpilogueScope S, ClusterCode R>
cudaError_t launch_oneshot_instance(const OneShotArgs& args, const detail::LaunchShape& shape,
                                    cudaStream_t stream) {
  if (R == ClusterCode::left_out && (shape.cluster_size > 1 || args.cluster_size > 1))
    return cudaErrorInvalidValue;  // its blocks would each normalise a part of a row alone
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(shape.grid);
  config.blockDim = dim3(shape.threads);
  config.stream = stream;
  cudaLaunchAttribute attrs[2];
  int n = 0;
  if (shape.use_pdl) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (shape.cluster_size > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = shape.cluster_size;
    attrs[n].val.clusterDim.y = 1;
    attrs[n].val.clusterDim.z = 1;
    ++n;
  }
  config.attrs = attrs;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, fc_oneshot_pdl_kernel<N, T, L, M, I, S, R>, args);
}

template <int N, typename T, typename L, Mutant M, Instrument I, EpilogueScope S>
int max_cluster_size_instance(int threads) {  // of the instance with the cluster path
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(8);
  config.blockDim = dim3(threads);
  int size = 0;
  const auto kernel = fc_oneshot_pdl_kernel<N, T, L, M, I, S, ClusterCode::compiled>;
  if (cudaOccupancyMaxPotentialClusterSize(&size, kernel, &config) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  return size;
}

template <int N, typename T, typename L, Mutant M, Instrument I, EpilogueScope S, ClusterCode R>
int blocks_per_sm_instance(int threads) {
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &blocks, fc_oneshot_pdl_kernel<N, T, L, M, I, S, R>, threads, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  return blocks > 0 ? blocks : 1;
}

// cudaFuncGetAttributes needs the kernel's function in the current context, so it loads
// the kernel now, while nothing of ours runs, rather than at a launch (see preload_kernels).
template <int N, typename T, typename L, Mutant M, Instrument I, EpilogueScope S, ClusterCode R>
cudaError_t preload_oneshot_instance() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, fc_oneshot_pdl_kernel<N, T, L, M, I, S, R>);
}

// An instance with the cluster path, alone.
template <int N, typename T, typename L, Mutant M, Instrument I = Instrument::none,
          EpilogueScope S = EpilogueScope::full>
constexpr detail::OneShotEntry oneshot_entry(DType dtype) {
  constexpr ClusterCode R = ClusterCode::compiled;
  return detail::OneShotEntry{N,
                              dtype,
                              sizeof(L) == 4,
                              M,
                              S,
                              &launch_oneshot_instance<N, T, L, M, I, S, R>,
                              &max_cluster_size_instance<N, T, L, M, I, S>,
                              &preload_oneshot_instance<N, T, L, M, I, S, R>,
                              &blocks_per_sm_instance<N, T, L, M, I, S, R>};
}

// An instance with the cluster path and its twin built without it (ClusterCode).
template <int N, typename T, typename L, Mutant M, Instrument I, EpilogueScope S>
constexpr detail::OneShotEntry oneshot_entry_with_cluster_free_twin(DType dtype) {
  constexpr ClusterCode R = ClusterCode::left_out;
  detail::OneShotEntry e = oneshot_entry<N, T, L, M, I, S>(dtype);
  e.cluster_free = detail::ClusterFreeTwin{&launch_oneshot_instance<N, T, L, M, I, S, R>,
                                           &preload_oneshot_instance<N, T, L, M, I, S, R>,
                                           &blocks_per_sm_instance<N, T, L, M, I, S, R>};
  return e;
}

}  // namespace fusioncheck::kernels::device
