#pragma once
// SGLang's push kernels as an instance library exports them (sglang_instance.cu.in, the only code
// that includes the wheel's custom_all_reduce.cuh), in plain types: one launch of the one-shot or
// two-shot kernel with the kernel-facing workspace the wheel's host entry builds
// (PushWorkSpace: every rank's push plane, the rank-local phase counters, no multicast).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fusioncheck::adapters::sg {

inline constexpr int kPushMaxRanks = 8;
inline constexpr std::size_t kPushErrorBytes = 512;

struct PushLaunch {
  bool two_shot = false;
  bool bf16 = true;  // else fp16
  bool pdl = true;   // launched with programmatic stream serialization (its enable_pdl)
  const void* input = nullptr;
  void* output = nullptr;
  std::uint32_t num_vecs = 0;  // 16-byte vectors
  std::uint32_t rank = 0;
  int ranks = 2;
  void* workspaces[kPushMaxRanks] = {};  // every rank's push plane as mapped here
  void* counter = nullptr;               // this rank's phase counters, one per block
  std::uint32_t slot_bytes = 0;
  int blocks = 0;
  int threads = 0;
  cudaStream_t stream = nullptr;
};

// 0 on success; else a CUDA error code, or -1 for a refusal of the header (its panic), with the
// text in error[0, error_bytes).
struct PushApi {
  int (*launch)(const PushLaunch& launch, char* error, std::size_t error_bytes);
};

using PushApiFn = void (*)(PushApi* out);

}  // namespace fusioncheck::adapters::sg
