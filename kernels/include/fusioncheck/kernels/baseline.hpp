#pragma once
// The unfused baseline: an allreduce, then a separate residual + RMSNorm kernel.
// The allreduce is ncclAllReduce where there is one rank per GPU (NcclAllReduce, built when
// FUSIONCHECK_HAVE_NCCL), else our one-shot kernel in its allreduce-only pattern (ranks
// sharing a GPU: NCCL refuses that).
#include <cuda_runtime.h>

#include <memory>

#include "fusioncheck/kernels/launch.hpp"

namespace fusioncheck::kernels {

class NcclAllReduce {
 public:
  // Collective over the bootstrap's ranks, one rank per GPU. Throws CudaError without NCCL.
  explicit NcclAllReduce(Bootstrap& bootstrap);
  ~NcclAllReduce();
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;
  void allreduce_sum(const void* input, void* output, std::size_t count, DType dtype,
                     cudaStream_t stream);
  static bool available();  // compiled with NCCL

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// params as for launch_oneshot; `allreduced` (tokens x hidden of dtype) receives the sum.
// nccl == nullptr: the one-shot allreduce-only kernel on `workspace`.
void launch_unfused_baseline(const FusedParams& params, Workspace& workspace, void* allreduced,
                             cudaStream_t stream, NcclAllReduce* nccl = nullptr);

}  // namespace fusioncheck::kernels
