// A stand-alone reproducer of one case of FlashInfer's allreduce kernels, exported by
// `fusioncheck gpu repro`. It needs the CUDA toolkit and FlashInfer's headers only: the ranks
// live in this one process (one GPU per rank where enough are present and can reach each
// other, else all on GPU 0, each rank with its own buffers and stream), the workspace is laid
// out as FlashInfer's Python lays it out, and each call goes through the launcher FlashInfer's
// own bindings call. The case (repro_case.h) and its inputs and expected outputs (data/) were
// written by the exporter; the expected outputs come from fusioncheck's CPU reference.
//
// Exit status: 3 the finding reproduced; 0 it did not (every output as expected, no hang);
// 1 something else failed (printed); 2 it cannot run here (no GPU, too few SMs, missing data).
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "repro_types.h"
#include "repro_case.h"
#ifndef FC_SYNC_DELAY
#define FC_SYNC_DELAY 0  // a case exported without in-kernel delays
#endif

#if FC_SYNC_DELAY
#include "fc_sync_sites.h"    // where they are (CMakeLists.txt)
#include "fi_sync_delay.cuh"  // the hooks of the rewritten header (CMakeLists.txt)
#endif
#if FC_FAMILY_FUSION
#include "flashinfer/comm/trtllm_allreduce_fusion.cuh"
#elif FC_FAMILY_MOE
#include "flashinfer/comm/trtllm_moe_allreduce_fusion.cuh"
#elif FC_FAMILY_LEGACY
#include "flashinfer/comm/trtllm_allreduce.cuh"
#else
#error "repro_case.h names no kernel family"
#endif

namespace {

#if FC_BF16
using T = __nv_bfloat16;
#else
using T = __half;
#endif

constexpr int kN = repro::kRanks;

[[noreturn]] void cannot_run(const std::string& why) {
  std::printf("CANNOT RUN (exit 2): %s\n", why.c_str());
  std::fflush(stdout);
  std::_Exit(2);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) cannot_run(std::string(what) + ": " + cudaGetErrorString(e));
}

// A data file of `bytes` bytes exactly; with `bytes` 0, the whole file (a MoE part, whose size
// differs between ranks).
std::vector<std::uint8_t> read_data(const std::string& name, std::size_t bytes) {
  const std::string path = std::string(FC_DATA_DIR) + "/" + name;
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) cannot_run("cannot read " + path + ": " + error.message());
  if (bytes != 0 && size != bytes)
    cannot_run(path + " holds " + std::to_string(size) + " bytes, the case needs " +
               std::to_string(bytes));
  std::vector<std::uint8_t> data(static_cast<std::size_t>(size));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) cannot_run("cannot read " + path);
  const std::size_t got = std::fread(data.data(), 1, data.size(), f);
  std::fclose(f);
  if (got != data.size()) cannot_run("cannot read " + path + " whole");
  return data;
}

std::size_t align16(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

// Device memory of one rank, freed at exit by the driver (a hang exits with kernels running).
void* device_alloc(std::size_t bytes, std::uint8_t fill) {
  void* p = nullptr;
  check(cudaMalloc(&p, align16(bytes == 0 ? 16 : bytes)), "cudaMalloc");
  check(cudaMemset(p, fill, align16(bytes == 0 ? 16 : bytes)), "cudaMemset");
  return p;
}

void* upload(const std::vector<std::uint8_t>& host) {
  void* p = device_alloc(host.size(), 0);
  check(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice), "upload");
  return p;
}

// ---- small kernels the case needs beside FlashInfer's ---------------------------------------

__device__ void spin_for(std::uint64_t ns) {
  const long long start = clock64();
  std::uint64_t t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns && clock64() - start < (1ll << 34));
}

// A rank that reaches the call late.
__global__ void pause_kernel(std::uint32_t ns) { spin_for(ns); }

// Fills the SMs it lands on and lets them go block by block: a kernel launched behind it on
// another stream starts its blocks as SMs come free, spread over spread_ns.
__global__ void hog_kernel(std::uint32_t spread_ns) {
  spin_for(static_cast<std::uint64_t>(spread_ns) * blockIdx.x / gridDim.x);
}

struct Copy {
  const void* src;
  void* dst;
  std::size_t bytes;
};
struct Copies {
  Copy copy[8];
  int count;
};

// The kernel before the call that writes its inputs (a GEMM, the previous layer): it lets
// its dependents start at once, waits, then copies the inputs over the poison (NaN) that
// the call's buffers hold until then. The call, launched with PDL, may read its inputs only
// after its grid-dependency wait.
__global__ void producer_kernel(Copies copies, std::uint32_t delay_ns) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
  spin_for(delay_ns);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (int c = 0; c < copies.count; ++c) {
    const auto* src = static_cast<const uint4*>(copies.copy[c].src);
    auto* dst = static_cast<uint4*>(copies.copy[c].dst);
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
         i < copies.copy[c].bytes / 16; i += stride)
      dst[i] = src[i];
  }
}

// The next layer, launched with PDL behind the call: it reads the output before its own
// grid-dependency wait, as a kernel trusting an at-end trigger would.
__global__ void consumer_kernel(const uint4* src, uint4* dst, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(src + i));
    dst[i] = v;
  }
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

void launch_consumer(const void* src, void* dst, std::size_t bytes, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  const std::size_t n = bytes / 16;
  config.gridDim = dim3(static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256 + 1, 32)));
  config.blockDim = dim3(256);
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  check(cudaLaunchKernelEx(&config, consumer_kernel, static_cast<const uint4*>(src),
                           static_cast<uint4*>(dst), n),
        "PDL consumer launch");
}

// ---- one rank's buffers --------------------------------------------------------------------

struct CallBuffers {
  void *input = nullptr, *residual_in = nullptr, *gamma = nullptr;
  void *staged_input = nullptr, *staged_residual = nullptr, *staged_gamma = nullptr;
  void *allreduce_out = nullptr, *residual_out = nullptr, *norm_out = nullptr;
  void *quant_out = nullptr, *scale_out = nullptr, *consumer_copy = nullptr;
  float* scale_factor = nullptr;  // fusion: FP8 static or NVFP4 global scale, on the device
  // MoE inputs (live, and staged for a PDL producer), as the exporter wrote them.
  void* moe[repro::kMoeParts] = {};
  void* moe_staged[repro::kMoeParts] = {};
  std::size_t moe_bytes[repro::kMoeParts] = {};
  cudaEvent_t done = nullptr;
};

struct Rank {
  int device = 0;
  int sms = 0;                    // the SMs this rank's kernels may use (its share of a shared GPU)
  CUcontext partition = nullptr;  // the green context holding its SMs, where ranks share a GPU
  cudaStream_t stream = nullptr, side = nullptr;
  void* shared = nullptr;  // [two-shot data][barrier flags][3 Lamport buffers]
  void* ctrl = nullptr;    // int[5]: counter, two-shot flag, Lamport flag, comm size, clear size
  void** table = nullptr;  // FlashInfer's workspace pointer table (fusion, MoE)
  std::uint32_t legacy_flag = 0;
  std::vector<CallBuffers> calls;
  std::int32_t* state_host = nullptr;  // pinned: a hung call's control words and buffers
};

// The driver functions for green contexts, found through the runtime: the program does not
// link libcuda, so that it starts (and says "no CUDA device") where no driver is installed.
template <typename F> F* driver_function(const char* name) {
#if CUDART_VERSION >= 12050
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12040, cudaEnableDefault, &found) ==
          cudaSuccess &&
      found == cudaDriverEntryPointSuccess)
    return reinterpret_cast<F*>(fn);
#endif
  (void)name;
  return nullptr;
}

// Makes the rank's context current: its GPU, and its share of the SMs where ranks share one.
void use_rank(const Rank& rank) {
  check(cudaSetDevice(rank.device), "cudaSetDevice");
  if (rank.partition == nullptr) return;
  static auto* set_current = driver_function<decltype(cuCtxSetCurrent)>("cuCtxSetCurrent");
  if (set_current == nullptr || set_current(rank.partition) != CUDA_SUCCESS)
    cannot_run("cuCtxSetCurrent of a rank's green context failed");
}

constexpr std::uint64_t kBarrierBytes = 256ull * kN * 4;  // int[kBarrierFlagCount][N]

std::uint64_t lamport_offset() { return repro::kTwoshotBytes + kBarrierBytes; }

void fill_sentinel(Rank& rank) {
  use_rank(rank);
  const std::vector<std::uint16_t> neg_zero(3 * repro::kCommSize / 2, 0x8000u);
  check(cudaMemcpy(static_cast<std::uint8_t*>(rank.shared) + lamport_offset(), neg_zero.data(),
                   3 * repro::kCommSize, cudaMemcpyHostToDevice),
        "Lamport buffers");
}

void make_workspace(std::vector<Rank>& ranks) {
  for (Rank& r : ranks) {
    use_rank(r);
    r.shared = device_alloc(lamport_offset() + 3 * repro::kCommSize, 0);
    fill_sentinel(r);
    check(cudaMallocHost(&r.state_host, 8 * sizeof(std::int32_t) + 3 * repro::kCommSize),
          "pinned memory for a hang's diagnosis");
    const std::int32_t ctrl[5] = {0, 0, 0, static_cast<std::int32_t>(repro::kCommSize), 0};
    r.ctrl = device_alloc(sizeof(ctrl), 0);
    check(cudaMemcpy(r.ctrl, ctrl, sizeof(ctrl), cudaMemcpyHostToDevice), "ctrl");
  }
  for (Rank& r : ranks) {  // [N two-shot data][N barrier flags][N Lamport][own ctrl]
    std::vector<void*> table;
    for (int part = 0; part < 3; ++part)
      for (const Rank& peer : ranks) {
        const std::uint64_t offset = part == 0   ? 0
                                     : part == 1 ? repro::kTwoshotBytes
                                                 : lamport_offset();
        table.push_back(static_cast<std::uint8_t*>(peer.shared) + offset);
      }
    table.push_back(r.ctrl);
    use_rank(r);
    r.table = static_cast<void**>(device_alloc(table.size() * sizeof(void*), 0));
    check(cudaMemcpy(r.table, table.data(), table.size() * sizeof(void*), cudaMemcpyHostToDevice),
          "workspace table");
  }
}

void make_call_buffers(Rank& rank, int rank_index) {
  use_rank(rank);
  for (int i = 0; i < repro::kCalls; ++i) {
    const repro::CallCase& c = repro::kCallCases[i];
    const std::size_t elems = static_cast<std::size_t>(c.tokens) * repro::kHidden;
    CallBuffers b;
    const auto input = read_data(repro::data_name(i, rank_index, "input"), elems * 2);
    const auto residual = read_data(repro::data_name(i, -1, "residual_in"), elems * 2);
    const auto gamma = read_data(repro::data_name(i, -1, "gamma"), repro::kHidden * 2);
    if (c.pdl_producer) {  // the staged inputs; the live ones hold poison until the producer
      b.staged_input = upload(input);
      b.staged_residual = upload(residual);
      b.staged_gamma = upload(gamma);
      b.input = device_alloc(elems * 2, 0xFF);
      b.residual_in = device_alloc(elems * 2, 0xFF);
      b.gamma = device_alloc(repro::kHidden * 2, 0xFF);
    } else {
      b.input = upload(input);
      b.residual_in = upload(residual);
      b.gamma = upload(gamma);
    }
    for (int part = 0; part < repro::kMoeParts; ++part) {
      if (c.moe_part_bytes[part] == 0) continue;  // the call has no such input
      const auto host = read_data(repro::data_name(i, rank_index, repro::kMoePartNames[part]), 0);
      const std::size_t bytes = host.size();
      b.moe_bytes[part] = align16(bytes);
      if (c.pdl_producer) {
        b.moe_staged[part] = upload(host);
        b.moe[part] = device_alloc(bytes, 0xFF);
      } else {
        b.moe[part] = upload(host);
      }
    }
    for (void** out : {&b.allreduce_out, &b.residual_out, &b.norm_out, &b.consumer_copy})
      *out = device_alloc(elems * 2, 0xFF);
    b.quant_out = device_alloc(elems, 0xFF);
    b.scale_out = device_alloc(c.scale_bytes + 256, 0xFF);
    if (c.scale_factor != 0.0f) {
      b.scale_factor = static_cast<float*>(device_alloc(sizeof(float), 0));
      check(cudaMemcpy(b.scale_factor, &c.scale_factor, sizeof(float), cudaMemcpyHostToDevice),
            "scale factor");
    }
    check(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming), "cudaEventCreate");
    rank.calls.push_back(b);
  }
}

// Fresh outputs before every run: 0xFF (NaN) canaries, as the suite leaves them.
void reset_outputs(Rank& rank) {
  use_rank(rank);
  for (int i = 0; i < repro::kCalls; ++i) {
    const std::size_t elems =
        static_cast<std::size_t>(repro::kCallCases[i].tokens) * repro::kHidden;
    CallBuffers& b = rank.calls[static_cast<std::size_t>(i)];
    for (void* out : {b.allreduce_out, b.residual_out, b.norm_out, b.consumer_copy})
      check(cudaMemset(out, 0xFF, elems * 2), "canary");
    if (repro::kCallCases[i].pdl_producer) {
      for (void* in : {b.input, b.residual_in}) check(cudaMemset(in, 0xFF, elems * 2), "poison");
      check(cudaMemset(b.gamma, 0xFF, repro::kHidden * 2), "poison");
      for (int part = 0; part < repro::kMoeParts; ++part)
        if (b.moe[part] != nullptr)
          check(cudaMemset(b.moe[part], 0xFF, b.moe_bytes[part]), "poison");
    }
  }
}

// ---- the kernel families -------------------------------------------------------------------

#if FC_FAMILY_FUSION || FC_FAMILY_MOE
// The fields FlashInfer's fusion and MoE parameter structs share, as the adapter fills them
// (scale_factor and weight_bias are the family's: a pointer or a value, a field some trees lack).
template <typename Params>
void fill_common(Params& p, Rank& rank, int rank_index, const repro::CallCase& c, CallBuffers& b) {
  p.nranks = kN;
  p.rank = rank_index;
  p.size = c.tokens * repro::kHidden;
  p.hidden_dim = repro::kHidden;
  p.workspace = rank.table;
  p.residual_in = b.residual_in;
  p.residual_out = b.residual_out;
  p.norm_out = c.norm_out ? b.norm_out : nullptr;
  // Only where the pattern writes them, as the adapter passes them (the MoE ops pick their
  // quantising kernel by quant_out alone).
  p.quant_out = c.quantises ? b.quant_out : nullptr;
  p.scale_out = c.scale_bytes > 0 ? b.scale_out : nullptr;
  p.rms_gamma = b.gamma;
  p.rms_eps = repro::kEps;
  p.layout = static_cast<flashinfer::QuantizationSFLayout>(c.sf_layout);
  p.stream = rank.stream;
}
#endif

#if FC_FAMILY_FUSION
namespace fif = flashinfer::trtllm_allreduce_fusion;

// Call I's launch: its pattern is a template argument of FlashInfer's launcher. Params is a
// template parameter so that fields an older tree lacks are named only where a call uses them.
template <int I, typename Params> cudaError_t launch_fusion(Params& p, bool pdl) {
  constexpr repro::CallCase c = repro::kCallCases[I];
  if constexpr (c.group_size > 0) {
    p.block_quant_group_size = c.group_size;
    p.tma_aligned_mn = c.tma_aligned_mn;
  }
  if constexpr (repro::kWeightBias != 0.0f) p.weight_bias = repro::kWeightBias;
  constexpr auto pattern = static_cast<fif::AllReduceFusionPattern>(c.fi_pattern);
  return fif::allreduce_fusion_kernel_launcher<pattern, T, kN, repro::kFp32Acc>(p, pdl);
}

template <int... I>
cudaError_t dispatch_fusion(int call, fif::AllReduceFusionParams<T>& p, bool pdl,
                            std::integer_sequence<int, I...>) {
  cudaError_t e = cudaErrorInvalidValue;
  ((call == I ? (e = launch_fusion<I>(p, pdl), 0) : 0), ...);
  return e;
}

cudaError_t launch_call(Rank& rank, int rank_index, int i) {
  const repro::CallCase& c = repro::kCallCases[i];
  CallBuffers& b = rank.calls[static_cast<std::size_t>(i)];
  fif::AllReduceFusionParams<T> p{};
  fill_common(p, rank, rank_index, c, b);
  p.allreduce_in = b.input;
  p.allreduce_out = b.allreduce_out;
  p.scale_factor = b.scale_factor;  // a device pointer here
  p.use_oneshot = !c.twoshot;
  p.pattern = static_cast<fif::AllReduceFusionPattern>(c.fi_pattern);
  p.trigger_completion_at_end = c.trigger_at_end;
  return dispatch_fusion(i, p, c.pdl, std::make_integer_sequence<int, repro::kCalls>{});
}
#endif

#if FC_FAMILY_MOE
namespace fim = flashinfer::trtllm_moe_allreduce_fusion;

cudaError_t launch_call(Rank& rank, int rank_index, int i) {
  const repro::CallCase& c = repro::kCallCases[i];
  CallBuffers& b = rank.calls[static_cast<std::size_t>(i)];
  if (c.moe_finalize) {
    fim::MoeFinalizeAllReduceFusionParams<T> p{};
    fill_common(p, rank, rank_index, c, b);
    p.weight_bias = repro::kWeightBias;
    p.scale_factor = c.scale_factor;
    p.allreduce_in = b.moe[repro::kExpertRows];
    p.top_k = c.moe_experts;
    p.expert_scale_factor = b.moe[repro::kTopkScales];
    p.shared_expert_output = b.moe[repro::kTokenRows];
    p.expanded_idx_to_permuted_idx = static_cast<std::int32_t*>(b.moe[repro::kPermutedIndex]);
    p.routed_scaling_factor = c.moe_routed_scaling;
    return fim::moefinalize_allreduce_fusion_op(p, c.pdl);
  }
  fim::MoeReductionAllReduceFusionParams<T> p{};
  fill_common(p, rank, rank_index, c, b);
  p.weight_bias = repro::kWeightBias;
  p.scale_factor = c.scale_factor;
  p.moe_allreduce_out = c.moe_allreduce_out ? b.allreduce_out : nullptr;
  p.moe_reduction_device_num_experts = c.moe_experts;
  p.moe_reduction_scale_input = static_cast<float*>(b.moe[repro::kReductionScales]);
  p.moe_reduction_active_experts_token_input = b.moe[repro::kExpertRows];
  p.moe_reduction_token_input = b.moe[repro::kTokenRows];
  return fim::moereduction_allreduce_fusion_op(p, c.pdl);
}
#endif

#if FC_FAMILY_LEGACY
namespace ar = flashinfer::trtllm_allreduce;

cudaError_t launch_call(Rank& rank, int rank_index, int i, const std::vector<Rank>& ranks) {
  const repro::CallCase& c = repro::kCallCases[i];
  CallBuffers& b = rank.calls[static_cast<std::size_t>(i)];
  ar::AllReduceParams<T> p{};
  p.elts_total = static_cast<std::size_t>(c.tokens) * repro::kHidden;
  p.ranks_per_node = kN;
  p.local_rank = static_cast<std::size_t>(rank_index);
  p.barrier_flag = rank.legacy_flag++;  // +1 per call on every rank, as its callers keep it
  p.local_input_buffer_ptr = b.input;
  p.local_output_buffer_ptr = b.norm_out;
  p.fusion_params.hidden_size = repro::kHidden;
  p.fusion_params.eps = repro::kEps;
  p.fusion_params.residual_buffer = b.residual_in;
  p.fusion_params.weight_buffer = b.gamma;
  p.fusion_params.intermediate_buffer = b.residual_out;
  for (int buffer = 0; buffer < 3; ++buffer)  // index r + 16 b (MAX_RANKS_PER_NODE)
    for (int r = 0; r < kN; ++r)
      p.fusion_params.lamport_peer_comm_buffer_ptrs[r + buffer * ar::MAX_RANKS_PER_NODE] =
          static_cast<std::uint8_t*>(ranks[static_cast<std::size_t>(r)].shared) + lamport_offset() +
          buffer * repro::kCommSize;
  return ar::reduce_fusion::lamport_style_one_shot_all_reduce_norm_kernel_launcher<T, kN, false,
                                                                                   true>(
      p, c.pdl, rank.stream);
}
#endif

}  // namespace

#include "repro_run.cuh"
