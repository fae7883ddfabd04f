#pragma once
// The inputs of a MoE call (FlashInfer's MoE allreduce fusion, CallSpec::moe_experts): each
// rank's expert outputs generated on its GPU where the kernel reads them (the scales and the
// routing on its host), as reference/moe.hpp defines them, reduced there to the rank input the
// reference sums, and the reductions shared. With a PDL producer they are staged beside the
// call's buffers (poison in those), like the other inputs.
#include <cuda_runtime.h>

#include <cstdint>

#include "fusioncheck/gpu/device_buffer.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/mpi/mpi_comm.hpp"
#include "fusioncheck/reference/fused.hpp"
#include "fusioncheck/reference/moe.hpp"

namespace fusioncheck::gpu {

// The MoE configuration of a call of a MoE kernel (its variant names the kernel).
reference::MoeConfig moe_config(const CallSpec& call, const KernelTraits& traits);

// One call's MoE buffers, sized for the largest call within the limits.
class MoeBuffers {
 public:
  explicit MoeBuffers(const CaseLimits& limits);

  // Generates this rank's MoE inputs of the call (into the staged buffers, the call's own ones
  // filled with poison, when `staged`); replaces inputs.rank_inputs (one tensor per rank, of
  // any contents) with every rank's reduction, gathered from the ranks. A collective: every
  // rank of `comm` calls it for the same call. Waits for `stream`.
  void prepare(const GpuCase& c, const CallSpec& call, std::uint64_t call_index,
               const KernelTraits& traits, mpi::MpiComm& comm, bool staged,
               reference::FusedInputs& inputs, cudaStream_t stream);
  // The kernel's view of the call's buffers (after prepare).
  kernels::MoeParams params(const CallSpec& call, const KernelTraits& traits) const;
  // The PDL producer's copies of the staged MoE inputs over the call's (after prepare).
  void add_producer_copies(kernels::PdlProducerCopies& copies) const;

 private:
  struct Part {
    DeviceBuffer live, staged;
    std::size_t bytes = 0;  // the current call's bound, a multiple of 16
  };
  Part rows_, scales_, token_rows_, index_, topk_scales_;
  DeviceBuffer row_tokens_;  // the generator's: each permuted row's token (finalize)
  DeviceBuffer reduction_;   // the rank's reduction, made on the GPU
  void* place(Part& part, std::size_t bytes, std::size_t bound, bool staged, cudaStream_t stream);
  void upload(Part& part, const void* host, std::size_t bytes, std::size_t bound, bool staged,
              cudaStream_t stream);
};

}  // namespace fusioncheck::gpu
