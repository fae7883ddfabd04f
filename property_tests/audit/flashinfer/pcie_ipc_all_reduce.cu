// Audit instance of flashinfer/comm/pcie_ipc_all_reduce.cuh. all_reduce<T> instantiates every
// topology x world size x PDL flag; the kernels are taken by address instead: bf16, 2 ranks,
// the UsePdl=true variants (the binding refuses enable_pdl in 0.7.4, docs/flashinfer_audit.md).
#include "flashinfer/comm/pcie_ipc_all_reduce.cuh"

namespace fpi = flashinfer::comm::pcie_ipc;
using bf16 = __nv_bfloat16;

extern "C" const void* const fc_audit_pcie_ipc_kernels[] = {
    reinterpret_cast<const void*>(&fpi::ipc_tp2_remote_push_kernel<bf16, false, true>),
    reinterpret_cast<const void*>(&fpi::push_oneshot_param_kernel<bf16, 2, true, false>),
    reinterpret_cast<const void*>(&fpi::ipc_rsag_push_param_kernel<bf16, 2, true>),
};
