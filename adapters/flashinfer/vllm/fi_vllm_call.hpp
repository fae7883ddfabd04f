#pragma once
// FlashInfer's copy of vLLM's custom allreduce (vllm_custom_all_reduce.cuh) as an instance library
// exports it (fi_vllm_instance.cu.in, the only code that includes that copy of the header), in
// plain types: the header's CustomAllreduce behind an opaque handle, its registration steps, and
// a launch through its allreduce() or of one of its two kernels chosen explicitly.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fusioncheck::adapters::fi {

inline constexpr int kVllmMaxRanks = 8;              // RankData / RankSignals hold 8 pointers
inline constexpr std::size_t kIpcHandleBytes = 64;   // sizeof(cudaIpcMemHandle_t)
inline constexpr std::size_t kVllmErrorBytes = 512;  // the error text the functions below write

// Which kernel a call runs.
enum class VllmStage : int {
  by_size = 0,  // the header's allreduce(): one stage at 2 ranks and below its size thresholds
  one = 1,      // cross_device_reduce_1stage, launched as allreduce() would
  two = 2,      // cross_device_reduce_2stage
};

// CustomAllreduce's constructor arguments.
struct VllmSetup {
  void* signals[kVllmMaxRanks] =
      {};  // every rank's Signal as mapped here (its temporary buffer follows it)
  void* rank_data = nullptr;  // device memory for the RankData entries
  std::size_t rank_data_bytes = 0;
  int rank = 0;
  int ranks = 2;
};

struct VllmCall {
  VllmStage stage = VllmStage::by_size;
  bool bf16 = true;       // else fp16
  void* input = nullptr;  // registered (eager) or recorded for registration (capture)
  void* output = nullptr;
  int numel = 0;  // elements, a multiple of 8
  int block_limit = 36;
  int threads = 512;
  cudaStream_t stream = nullptr;
  // Filled by the launch: the kernel it ran (one or two) and its grid.
  int stage_launched = 0;
  int blocks_launched = 0;
};

// The header's Signal: bytes and where its two counter arrays start.
struct VllmLayout {
  std::uint64_t signal_bytes = 0;
  std::uint64_t self_counter_offset = 0;  // FlagType[max_blocks][8]
  std::uint64_t peer_counter_offset = 0;  // FlagType[2][max_blocks][8]
  std::uint64_t rank_data_bytes = 0;      // sizeof(RankData)
  int max_blocks = 0;                     // kMaxBlocks
};

// Every function returns 0 on success; else a CUDA error code, or -1 for a refusal of the
// header (its std::runtime_error), with the text in error[0, error_bytes).
struct VllmApi {
  void (*layout)(VllmLayout* out);
  int (*create)(const VllmSetup& setup, void** handle, char* error, std::size_t error_bytes);
  void (*destroy)(void* handle);
  // register_buffer: every rank's copy of one IPC-shared buffer, [ranks].
  int (*register_buffer)(void* handle, void* const* ptrs, char* error, std::size_t error_bytes);
  int (*launch)(void* handle, VllmCall& call, char* error, std::size_t error_bytes);
  // After a capture: the captured inputs awaiting registration, their IPC handles
  // ([count][kIpcHandleBytes]) and offsets; then every rank's ([ranks][count][...]) registered.
  int (*graph_buffer_count)(void* handle);
  int (*graph_meta)(void* handle, char* handles, std::int64_t* offsets, char* error,
                    std::size_t error_bytes);
  int (*register_graph)(void* handle, const char* handles, const std::int64_t* offsets, int count,
                        char* error, std::size_t error_bytes);
  // The in-kernel delay (a sync-delay copy's site `line`, block `block`) of the calls enqueued
  // behind it on `stream`; line 0: none.
  // Plan `slot` of the sync-delay hooks (0: the case's block; 1 on: a held rank's every
  // block, block < 0), for the calls enqueued behind it on `stream`.
  int (*set_sync_delay)(int slot, int line, int block, std::uint32_t ns, cudaStream_t stream);
};

using VllmApiFn = void (*)(VllmApi* out);

}  // namespace fusioncheck::adapters::fi
