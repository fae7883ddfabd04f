#pragma once
// FC_HD marks functions that both host code (sim, reference, launcher) and device code
// (kernels) call, so that the protocol has a single definition.
#if defined(__CUDACC__)
#define FC_HD __host__ __device__ __forceinline__
#else
#define FC_HD inline
#endif
