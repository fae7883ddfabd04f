// Unfused baseline: allreduce (NCCL or one-shot allreduce-only) + residual/RMSNorm kernel.
#include "fusioncheck/kernels/baseline.hpp"

#include <string>

#include "fusioncheck/kernels/cuda_check.hpp"
#ifdef FUSIONCHECK_HAVE_NCCL
#include <nccl.h>
#endif

namespace fusioncheck::kernels {

#ifdef FUSIONCHECK_HAVE_NCCL
#define FC_NCCL_CHECK(call)                                                          \
  do {                                                                               \
    const ncclResult_t fc_r_ = (call);                                               \
    if (fc_r_ != ncclSuccess)                                                        \
      throw CudaError(std::string(#call) + " failed: " + ncclGetErrorString(fc_r_)); \
  } while (0)

struct NcclAllReduce::Impl {
  ncclComm_t comm = nullptr;
  ~Impl() {
    if (comm != nullptr) (void)ncclCommDestroy(comm);
  }
};

NcclAllReduce::NcclAllReduce(Bootstrap& bootstrap) : impl_(std::make_unique<Impl>()) {
  ncclUniqueId id{};
  if (bootstrap.rank() == 0) FC_NCCL_CHECK(ncclGetUniqueId(&id));
  std::vector<ncclUniqueId> ids(bootstrap.size());
  bootstrap.all_gather(&id, ids.data(), sizeof(id), "nccl unique id");
  FC_NCCL_CHECK(ncclCommInitRank(&impl_->comm, bootstrap.size(), ids[0], bootstrap.rank()));
}

void NcclAllReduce::allreduce_sum(const void* input, void* output, std::size_t count, DType dtype,
                                  cudaStream_t stream) {
  FC_NCCL_CHECK(ncclAllReduce(input, output, count,
                              dtype == DType::bf16 ? ncclBfloat16 : ncclFloat16, ncclSum,
                              impl_->comm, stream));
}
bool NcclAllReduce::available() { return true; }
#else
struct NcclAllReduce::Impl {};
NcclAllReduce::NcclAllReduce(Bootstrap&) { throw CudaError("NcclAllReduce: built without NCCL"); }
void NcclAllReduce::allreduce_sum(const void*, void*, std::size_t, DType, cudaStream_t) {
  throw CudaError("NcclAllReduce: built without NCCL");
}
bool NcclAllReduce::available() { return false; }
#endif
NcclAllReduce::~NcclAllReduce() = default;

void launch_unfused_baseline(const FusedParams& params, Workspace& workspace, void* allreduced,
                             cudaStream_t stream, NcclAllReduce* nccl) {
  if (nccl != nullptr) {
    nccl->allreduce_sum(params.input, allreduced,
                        static_cast<std::size_t>(params.tokens) * params.hidden, params.dtype,
                        stream);
  } else {
    FusedParams ar = params;
    ar.pattern = Pattern::allreduce;
    ar.allreduce_out = allreduced;
    launch_oneshot(ar, workspace, stream);
  }
  launch_residual_rmsnorm_unfused(params, allreduced, stream);
}

}  // namespace fusioncheck::kernels
