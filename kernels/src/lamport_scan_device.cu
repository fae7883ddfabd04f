// The device Lamport scanner (lamport_scan.hpp): one kernel reads a rank's three Lamport
// buffers where they are and returns counts and first offenders, the same LamportScan the
// host scanner computes from a copy. Only the call's inputs go to the GPU and a few hundred
// bytes come back, instead of 3 * comm_size bytes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/kernels/lamport_scan.hpp"
#include "fusioncheck/kernels/workspace.hpp"

namespace fusioncheck::kernels {
namespace device {

constexpr unsigned long long kNoneYet = ~0ull;

// Counters of one scan. "first" words hold (index << 32) | value, so atomicMin keeps the
// lowest index together with the value found there.
struct ScanCounters {
  unsigned long long not_sentinel[protocol::kLamportBuffers];
  unsigned long long first_not_sentinel[protocol::kLamportBuffers];
  unsigned long long narrow[protocol::kLamportBuffers];
  unsigned long long mismatches[protocol::kMaxRanks];
  unsigned long long first_mismatch[protocol::kMaxRanks];
};

struct ScanArgs {
  const void* lamport = nullptr;  // 3 buffers of per_buffer elements
  std::uint64_t per_buffer = 0;   // elements per buffer
  int data_buffer = 0;
  int slots = 0;  // ranks; the slots are compared only when they fit
  std::uint64_t slot_elems = 0;
  // every_slot_here (my_slot < 0): slots * slot_elems, every rank's input; my_slot_everywhere:
  // slot_elems, this rank's, compared with slot [my_slot] of each data_buffers[owner].
  const std::uint16_t* inputs = nullptr;  // T bits
  int my_slot = -1;
  const void* data_buffers[protocol::kMaxRanks] = {};  // every rank's data buffer, mapped here
  bool bf16 = true;
  ScanCounters* out = nullptr;
};

template <int kElemBytes>
__device__ __forceinline__ std::uint32_t load_elem(const void* base, std::uint64_t index) {
  if constexpr (kElemBytes == 4) return static_cast<const std::uint32_t*>(base)[index];
  else return static_cast<const std::uint16_t*>(base)[index];
}

// What a rank pushes for an input element: canonicalised, widened for an fp32 buffer.
template <int kElemBytes>
__device__ __forceinline__ std::uint32_t pushed_bits(std::uint16_t in, bool bf16) {
  if constexpr (kElemBytes == 2) {
    return protocol::canonicalize_bits16(in);
  } else {
    const float f =
        bf16 ? __uint_as_float(std::uint32_t{in} << 16) : __half2float(__ushort_as_half(in));
    return protocol::canonicalize_bits32(__float_as_uint(f));
  }
}

// Each block counts into shared memory; one global atomic per block and counter.
template <int kElemBytes>
__global__ void __launch_bounds__(256) fc_lamport_scan_kernel(const ScanArgs a) {
  __shared__ ScanCounters block;
  constexpr int kWords = sizeof(ScanCounters) / sizeof(unsigned long long);
  auto* words = reinterpret_cast<unsigned long long*>(&block);
  for (int i = threadIdx.x; i < kWords; i += blockDim.x) words[i] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < protocol::kLamportBuffers; i += blockDim.x)
    block.first_not_sentinel[i] = kNoneYet;
  for (int i = threadIdx.x; i < protocol::kMaxRanks; i += blockDim.x)
    block.first_mismatch[i] = kNoneYet;
  __syncthreads();

  const std::uint64_t slot_end = static_cast<std::uint64_t>(a.slots) * a.slot_elems <= a.per_buffer
                                     ? a.slots * a.slot_elems
                                     : 0;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (int b = 0; b < protocol::kLamportBuffers; ++b) {
    const std::uint64_t base = b * a.per_buffer;
    const std::uint64_t pushed = static_cast<std::uint64_t>(a.slots) * a.slot_elems;
    const std::uint64_t first = b != a.data_buffer      ? 0
                                : pushed < a.per_buffer ? pushed
                                                        : a.per_buffer;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < a.per_buffer; i += stride) {
      const std::uint32_t v = load_elem<kElemBytes>(a.lamport, base + i);
      if (b == a.data_buffer && i < slot_end) {
        if (a.my_slot >= 0) continue;  // each slot is compared by the rank that pushed it
        const int slot = static_cast<int>(i / a.slot_elems);
        const std::uint64_t local = i - slot * a.slot_elems;
        if (v != pushed_bits<kElemBytes>(a.inputs[i], a.bf16)) {
          atomicAdd(&block.mismatches[slot], 1ull);
          atomicMin(&block.first_mismatch[slot], (local << 32) | v);
        }
      } else if (i >= first) {
        const bool sentinel = kElemBytes == 4
                                  ? protocol::is_neg_zero_bits32(v)
                                  : protocol::is_neg_zero_bits16(static_cast<std::uint16_t>(v));
        if (!sentinel) {
          atomicAdd(&block.not_sentinel[b], 1ull);
          atomicMin(&block.first_not_sentinel[b], (i << 32) | v);
          if (kElemBytes == 4 && v == 0x80008000u) atomicAdd(&block.narrow[b], 1ull);
        }
      }
    }
  }
  // my_slot_everywhere: what this rank pushed, in every rank's data buffer.
  if (a.my_slot >= 0 && slot_end > 0) {
    const std::uint64_t total = static_cast<std::uint64_t>(a.slots) * a.slot_elems;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < total; i += stride) {
      const int owner = static_cast<int>(i / a.slot_elems);
      const std::uint64_t local = i - owner * a.slot_elems;
      const std::uint32_t v =
          load_elem<kElemBytes>(a.data_buffers[owner], a.my_slot * a.slot_elems + local);
      if (v != pushed_bits<kElemBytes>(a.inputs[local], a.bf16)) {
        atomicAdd(&block.mismatches[owner], 1ull);
        atomicMin(&block.first_mismatch[owner], (local << 32) | v);
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < protocol::kLamportBuffers; i += blockDim.x) {
    if (block.not_sentinel[i] == 0) continue;
    atomicAdd(&a.out->not_sentinel[i], block.not_sentinel[i]);
    atomicMin(&a.out->first_not_sentinel[i], block.first_not_sentinel[i]);
    if (block.narrow[i] != 0) atomicAdd(&a.out->narrow[i], block.narrow[i]);
  }
  for (int i = threadIdx.x; i < protocol::kMaxRanks; i += blockDim.x) {
    if (block.mismatches[i] == 0) continue;
    atomicAdd(&a.out->mismatches[i], block.mismatches[i]);
    atomicMin(&a.out->first_mismatch[i], block.first_mismatch[i]);
  }
}

}  // namespace device

struct DeviceLamportScanner::Scratch {
  device::ScanCounters* counters = nullptr;       // device
  device::ScanCounters* host_counters = nullptr;  // pinned
  std::uint16_t* inputs = nullptr;                // device
  std::uint16_t* host_inputs = nullptr;           // pinned
  std::uint64_t input_capacity = 0;               // elements of both input buffers

  ~Scratch() {                   // teardown must not throw
    if (device_stuck()) return;  // freeing would wait for the stuck kernel: left to the exit
    if (counters != nullptr) (void)cudaFree(counters);
    if (host_counters != nullptr) (void)cudaFreeHost(host_counters);
    if (inputs != nullptr) (void)cudaFree(inputs);
    if (host_inputs != nullptr) (void)cudaFreeHost(host_inputs);
  }
  void reserve_inputs(std::uint64_t elems) {
    if (elems <= input_capacity) return;
    if (inputs != nullptr) FC_CUDA_CHECK(cudaFree(inputs));
    if (host_inputs != nullptr) FC_CUDA_CHECK(cudaFreeHost(host_inputs));
    inputs = nullptr, host_inputs = nullptr, input_capacity = 0;
    FC_CUDA_CHECK(cudaMalloc(&inputs, elems * sizeof(std::uint16_t)));
    FC_CUDA_CHECK(cudaMallocHost(&host_inputs, elems * sizeof(std::uint16_t)));
    input_capacity = elems;
  }
};

DeviceLamportScanner::DeviceLamportScanner() : scratch_(std::make_unique<Scratch>()) {
  FC_CUDA_CHECK(cudaMalloc(&scratch_->counters, sizeof(device::ScanCounters)));
  FC_CUDA_CHECK(cudaMallocHost(&scratch_->host_counters, sizeof(device::ScanCounters)));
}

DeviceLamportScanner::~DeviceLamportScanner() = default;

LamportScan DeviceLamportScanner::scan(const Workspace& workspace,
                                       const LamportScanRequest& request) {
  const WorkspaceConfig& config = workspace.config();
  LamportBuffersOnDevice buffers;
  buffers.own = workspace.lamport_device();
  buffers.comm_size = config.comm_size;
  buffers.elem_bytes = config.fp32_lamport ? 4 : 2;
  if (request.slots == SlotScan::my_slot_everywhere)
    for (int r = 0; r < request.ranks && r < protocol::kMaxRanks; ++r)
      buffers.ranks[static_cast<std::size_t>(r)] = workspace.lamport_device(r);
  return scan(buffers, request);
}

LamportScan DeviceLamportScanner::scan(const LamportBuffersOnDevice& buffers,
                                       const LamportScanRequest& request) {
  const int elem_bytes = buffers.elem_bytes;
  if (buffers.own == nullptr || (elem_bytes != 2 && elem_bytes != 4))
    throw std::invalid_argument("Lamport scan on the device: no buffers, or elements of " +
                                std::to_string(elem_bytes) + " bytes");
  const std::uint64_t per_buffer = buffers.comm_size / static_cast<std::uint64_t>(elem_bytes);
  const int n = static_cast<int>(request.inputs.size());  // host inputs (none with a device_input)
  if (per_buffer >= (1ull << 32))
    throw InvalidLaunch("Lamport scan: a buffer of 2^32 elements or more");
  LamportScan scan = empty_lamport_scan(request, elem_bytes, per_buffer);

  const bool mine = request.slots == SlotScan::my_slot_everywhere;
  const bool on_device = request.device_input != nullptr;
  const std::uint64_t input_elems = scan.slots_fit ? n * scan.slot_elems : 0;
  scratch_->reserve_inputs(std::max<std::uint64_t>(input_elems, 1));
  for (int r = 0; r < n && input_elems > 0; ++r)
    std::memcpy(scratch_->host_inputs + r * scan.slot_elems,
                request.inputs[static_cast<std::size_t>(r)].data(),
                scan.slot_elems * sizeof(std::uint16_t));
  device::ScanCounters& init = *scratch_->host_counters;
  std::memset(&init, 0, sizeof(init));
  std::fill(std::begin(init.first_not_sentinel), std::end(init.first_not_sentinel),
            device::kNoneYet);
  std::fill(std::begin(init.first_mismatch), std::end(init.first_mismatch), device::kNoneYet);

  // The workspace's kernels ran on their own streams: everything they wrote is visible
  // after a device synchronisation, and the scan runs on the legacy stream behind it.
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  FC_CUDA_CHECK(cudaMemcpy(scratch_->counters, &init, sizeof(init), cudaMemcpyHostToDevice));
  if (input_elems > 0)
    FC_CUDA_CHECK(cudaMemcpy(scratch_->inputs, scratch_->host_inputs,
                             input_elems * sizeof(std::uint16_t), cudaMemcpyHostToDevice));
  device::ScanArgs args;
  args.lamport = buffers.own;
  args.per_buffer = per_buffer;
  args.data_buffer = request.data_buffer;
  args.slots = static_cast<int>(scan.slots.size());  // compared only when they fit, as on the host
  args.slot_elems = scan.slot_elems;
  args.inputs = on_device ? request.device_input : scratch_->inputs;
  args.bf16 = request.dtype == DType::bf16;
  if (mine) {
    args.my_slot = request.rank;
    for (int r = 0; r < request.ranks; ++r) {
      const void* rank_buffers = buffers.ranks[static_cast<std::size_t>(r)];
      if (rank_buffers == nullptr)
        throw std::invalid_argument("Lamport scan on the device: rank " + std::to_string(r) +
                                    "'s buffers are not mapped here");
      args.data_buffers[r] =
          static_cast<const std::uint8_t*>(rank_buffers) +
          static_cast<std::uint64_t>(request.data_buffer) * per_buffer * elem_bytes;
    }
  }
  args.out = scratch_->counters;
  constexpr int kThreads = 256;
  const std::uint64_t wanted_blocks = (per_buffer + kThreads * 8 - 1) / (kThreads * 8);
  const int blocks = static_cast<int>(std::clamp<std::uint64_t>(wanted_blocks, 1, 1024));
  if (elem_bytes == 4) device::fc_lamport_scan_kernel<4><<<blocks, kThreads>>>(args);
  else device::fc_lamport_scan_kernel<2><<<blocks, kThreads>>>(args);
  FC_CUDA_CHECK(cudaGetLastError());
  FC_CUDA_CHECK(cudaMemcpy(scratch_->host_counters, scratch_->counters,
                           sizeof(device::ScanCounters), cudaMemcpyDeviceToHost));

  const device::ScanCounters& got = *scratch_->host_counters;
  for (int b = 0; b < protocol::kLamportBuffers; ++b) {
    LamportBufferScan& buf = scan.buffers[b];
    buf.not_sentinel = got.not_sentinel[b];
    buf.narrow = got.narrow[b];
    if (buf.not_sentinel > 0) {
      buf.first_index = got.first_not_sentinel[b] >> 32;
      buf.first_value = static_cast<std::uint32_t>(got.first_not_sentinel[b]);
    }
  }
  for (int r = 0; r < static_cast<int>(scan.slots.size()); ++r) {
    LamportSlotScan& slot = scan.slots[static_cast<std::size_t>(r)];
    slot.mismatches = got.mismatches[r];
    if (slot.mismatches > 0) {
      slot.first_index = got.first_mismatch[r] >> 32;
      slot.first_value = static_cast<std::uint32_t>(got.first_mismatch[r]);
      // The input element there, for the report: one word read back from a device input.
      std::uint16_t input = 0;
      if (on_device) {
        FC_CUDA_CHECK(cudaMemcpy(&input, request.device_input + slot.first_index, sizeof(input),
                                 cudaMemcpyDeviceToHost));
      } else {
        input = request.inputs[mine ? 0 : static_cast<std::size_t>(r)][slot.first_index];
      }
      slot.first_expected = pushed_lamport_bits(input, request.dtype, elem_bytes);
    }
  }
  return scan;
}

}  // namespace fusioncheck::kernels
