// The in-process multi-rank rig (gpu_rig.hpp).
#include "gpu_rig.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/reference/generators.hpp"
#include "fusioncheck/reference/tolerance.hpp"

namespace fusioncheck::kernels::testing {
namespace ref = fusioncheck::reference;

namespace {
constexpr float kFp8InvScale = 2.0f;
constexpr float kNvfp4GlobalScale = 100.0f;
constexpr float kEps = 1e-6f;

std::string describe(const ref::Mismatch& m) {
  std::ostringstream s;
  s << m.what << " at element " << m.index << ": expected " << m.expected << ", got " << m.actual
    << " (allowed " << m.allowed << ")";
  return s.str();
}

ref::Tensor to_tensor(DType d, const std::vector<std::uint8_t>& bytes, std::size_t count) {
  ref::Tensor t(d, count);
  std::memcpy(t.data(), bytes.data(), t.bytes());
  return t;
}
}  // namespace

std::string gpu_skip_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device";
  if (compute_capability() < 90)
    return "device is sm_" + std::to_string(compute_capability()) + "; the kernels need sm_90+";
  return "";
}

int compute_capability() {
  int d = 0, major = 0, minor = 0;
  if (cudaGetDevice(&d) != cudaSuccess) return 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d);
  return major * 10 + minor;
}

const char* path_name(Path p) {
  return p == Path::oneshot ? "one-shot" : p == Path::twoshot ? "two-shot" : "unfused";
}

std::string Findings::summary(std::size_t max_lines) const {
  std::string s;
  for (std::size_t i = 0; i < lines.size() && i < max_lines; ++i) s += "    " + lines[i] + "\n";
  if (lines.size() > max_lines)
    s += "    ... " + std::to_string(lines.size() - max_lines) + " more\n";
  return s;
}

// ---- DeviceBuffer ----------------------------------------------------------------------
DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  cuda_check(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 16)), "cudaMalloc");
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  return *this;
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) (void)cudaFree(ptr_);
}
void DeviceBuffer::fill(std::uint8_t byte) const {
  cuda_check(cudaMemset(ptr_, byte, bytes_), "cudaMemset");
}
void DeviceBuffer::upload(const void* src, std::size_t bytes) const {
  cuda_check(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice), "upload");
}
std::vector<std::uint8_t> DeviceBuffer::download() const {
  std::vector<std::uint8_t> out(bytes_);
  cuda_check(cudaMemcpy(out.data(), ptr_, bytes_, cudaMemcpyDeviceToHost), "download");
  return out;
}

// ---- Rig -------------------------------------------------------------------------------
struct Rig::RankBuffers {
  DeviceBuffer input, residual, gamma, allreduce, residual_out, norm, quant, scale, consumer_copy;
};

Rig::Rig(int ranks, DType dtype, bool fp32_lamport, std::uint64_t comm_size)
    : ranks_(ranks), dtype_(dtype), fp32_lamport_(fp32_lamport) {
  WorkspaceConfig config;
  config.ranks = ranks;
  config.comm_size = comm_size;
  config.fp32_lamport = fp32_lamport;
  ws_ = Workspace::create_in_process(config);
  streams_.resize(ranks);
  for (auto& s : streams_)
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  scanner_ = std::make_unique<DeviceLamportScanner>();
}

Rig::~Rig() {
  (void)cudaDeviceSynchronize();
  for (auto s : streams_) (void)cudaStreamDestroy(s);
}

ref::FusedConfig Rig::reference_config(const CallSpec& spec) const {
  ref::FusedConfig c;
  c.ranks = ranks_;
  c.tokens = spec.tokens;
  c.hidden = spec.hidden;
  c.dtype = dtype_;
  c.accumulation = spec.fp32_accumulation ? ref::Accumulation::fp32 : ref::Accumulation::per_step;
  c.eps = kEps;
  c.weight_bias = spec.weight_bias;
  // Only the Lamport push maps -0 to +0; the two-shot path sums the inputs as they are.
  // (The unfused path here uses the one-shot allreduce, so it canonicalises too.)
  c.canonicalize_neg_zero = spec.path != Path::twoshot;
  c.quant.fp8_static = spec.pattern == Pattern::fp8_static;
  c.quant.fp8_inv_scale = kFp8InvScale;
  c.quant.fp8_dynamic = spec.pattern == Pattern::fp8_dynamic;
  c.quant.nvfp4 = spec.pattern == Pattern::nvfp4;
  c.quant.nvfp4_global_scale = kNvfp4GlobalScale;
  c.quant.nvfp4_layout = ref::Nvfp4Layout::swizzled128x4;
  return c;
}

FusedParams Rig::params_for(const CallSpec& spec, int rank, RankBuffers& b) const {
  FusedParams p;
  p.ranks = ranks_;
  p.rank = rank;
  p.tokens = spec.tokens;
  p.hidden = spec.hidden;
  p.dtype = dtype_;
  p.fp32_lamport = fp32_lamport_;
  p.fp32_accumulation = spec.fp32_accumulation;
  p.pattern = spec.pattern;
  p.eps = kEps;
  p.weight_bias = spec.weight_bias;
  p.fp8_inv_scale = kFp8InvScale;
  p.nvfp4_global_scale = kNvfp4GlobalScale;
  p.nvfp4_layout = Nvfp4Layout::swizzled128x4;
  p.use_pdl = spec.use_pdl;
  p.trigger = spec.trigger;
  p.cluster = spec.cluster;
  p.spin_budget_cycles = spec.spin_budget_cycles;
  p.delay_seed = spec.delay_seed;
  p.delay_max_ns = spec.delay_max_ns;
  p.input = b.input.get();
  p.allreduce_out = b.allreduce.get();
  if (spec.pattern != Pattern::allreduce) {
    p.residual_in = b.residual.get();
    p.gamma = b.gamma.get();
    p.residual_out = b.residual_out.get();
    p.norm_out = b.norm.get();
  }
  if (pattern_quantises(spec.pattern)) p.quant_out = b.quant.get();
  if (spec.pattern == Pattern::fp8_dynamic || spec.pattern == Pattern::nvfp4)
    p.scale_out = b.scale.get();
  return p;
}

void Rig::upload_inputs(const CallSpec& spec, const ref::FusedInputs& in,
                        std::vector<RankBuffers>& bufs) {
  const std::size_t n = static_cast<std::size_t>(spec.tokens) * spec.hidden;
  const std::size_t bytes = n * 2;
  const std::size_t scale_bytes =
      spec.pattern == Pattern::nvfp4
          ? ref::nvfp4_scale_storage(ref::Nvfp4Layout::swizzled128x4, spec.tokens, spec.hidden / 16)
          : spec.tokens * sizeof(float);
  bufs.clear();
  for (int r = 0; r < ranks_; ++r) {
    RankBuffers b{DeviceBuffer(bytes),
                  DeviceBuffer(bytes),
                  DeviceBuffer(spec.hidden * 2),
                  DeviceBuffer(bytes),
                  DeviceBuffer(bytes),
                  DeviceBuffer(bytes),
                  DeviceBuffer(spec.pattern == Pattern::nvfp4 ? n / 2 : n),
                  DeviceBuffer(scale_bytes),
                  DeviceBuffer(bytes)};
    b.input.upload(in.rank_inputs[r].data(), bytes);
    b.residual.upload(in.residual_in.data(), bytes);
    b.gamma.upload(in.gamma.data(), spec.hidden * 2);
    for (const DeviceBuffer* out :
         {&b.allreduce, &b.residual_out, &b.norm, &b.quant, &b.consumer_copy})
      out->fill(0xFF);  // NaN canary (bf16/fp16 0xFFFF, e4m3 0xFF): unwritten outputs show
    b.scale.fill(spec.pattern == Pattern::nvfp4 ? 0x00 : 0xFF);  // nvfp4 padding must read 0
    bufs.push_back(std::move(b));
  }
  // The copies and fills ran on the legacy stream, the kernels run on non-blocking streams
  // that do not wait for it (a pageable cudaMemcpy may return before its DMA lands).
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the inputs");
}

void Rig::synchronise_and_collect_hangs(Findings& f) {
  for (int r = 0; r < ranks_; ++r) {
    const cudaError_t e = cudaStreamSynchronize(streams_[r]);
    if (e != cudaSuccess)
      f.lines.push_back("rank " + std::to_string(r) + ": CUDA error " + cudaGetErrorString(e));
  }
  for (auto& w : ws_) {
    const HangRecord h = w.hang_record();
    if (h.valid != 0) {
      f.hung = true;
      f.lines.push_back(describe(h));
    }
  }
}

void Rig::check_outputs(const CallSpec& spec, const ref::FusedInputs& in,
                        std::vector<RankBuffers>& bufs, Findings& f) {
  const ref::FusedConfig config = reference_config(spec);
  const ref::FusedOutputs expected = ref::compute_fused(config, in);
  const std::size_t n = static_cast<std::size_t>(spec.tokens) * spec.hidden;
  const std::string call =
      std::string(path_name(spec.path)) + " " + std::string(pattern_name(spec.pattern)) +
      " tokens=" + std::to_string(spec.tokens) + " hidden=" + std::to_string(spec.hidden);
  std::vector<std::uint8_t> rank0_norm, rank0_quant;
  for (int r = 0; r < ranks_; ++r) {
    auto add = [&](const std::optional<ref::Mismatch>& m) {
      if (m) f.lines.push_back("rank " + std::to_string(r) + " " + call + ": " + describe(*m));
    };
    add(ref::first_bit_mismatch(
        expected.allreduce, to_tensor(dtype_, bufs[r].allreduce.download(), n), "allreduce_out"));
    if (spec.pattern == Pattern::allreduce) continue;
    add(ref::first_bit_mismatch(expected.residual_out,
                                to_tensor(dtype_, bufs[r].residual_out.download(), n),
                                "residual_out"));
    const auto norm_bytes = bufs[r].norm.download();
    const auto allowed = ref::norm_out_tolerance(config, expected.residual_out, in.gamma);
    add(ref::first_norm_mismatch(expected.norm_out, to_tensor(dtype_, norm_bytes, n), allowed));
    std::vector<std::uint8_t> quant;
    if (pattern_quantises(spec.pattern)) {
      quant = bufs[r].quant.download();
      ref::QuantOutputs q;
      const auto scale = bufs[r].scale.download();
      if (spec.pattern == Pattern::fp8_static) q.fp8_static = quant;
      if (spec.pattern == Pattern::fp8_dynamic) {
        q.fp8_dynamic = quant;
        q.fp8_dynamic_scale.resize(spec.tokens);
        std::memcpy(q.fp8_dynamic_scale.data(), scale.data(), spec.tokens * sizeof(float));
      }
      if (spec.pattern == Pattern::nvfp4) {
        q.nvfp4 = quant;
        q.nvfp4_scale = scale;
      }
      add(ref::first_quant_mismatch(config, expected.norm_out, allowed, q));
    }
    if (spec.consumer_reads_before_wait && bufs[r].consumer_copy.download() != norm_bytes) {
      f.consumer_read_stale = true;
      f.lines.push_back("rank " + std::to_string(r) + " " + call +
                        ": the PDL consumer read norm_out before the producer wrote it");
    }
    if (r == 0) {
      rank0_norm = norm_bytes;
      rank0_quant = quant;
    } else if (norm_bytes != rank0_norm || quant != rank0_quant) {
      f.lines.push_back("rank " + std::to_string(r) + " " + call +
                        ": norm/quant outputs differ bitwise from rank 0");
    }
  }
}

Findings Rig::call(const CallSpec& spec) { return call_sequence({spec}); }

Findings Rig::call_sequence(const std::vector<CallSpec>& specs) {
  Findings f;
  std::vector<ref::FusedInputs> inputs;
  std::vector<std::vector<RankBuffers>> bufs(specs.size());
  for (std::size_t k = 0; k < specs.size(); ++k) {
    inputs.push_back(
        ref::make_exact_inputs(reference_config(specs[k]), specs[k].seed, call_counter_++, true));
    upload_inputs(specs[k], inputs.back(), bufs[k]);
  }
  std::vector<ControlState> before;
  for (auto& w : ws_) before.push_back(read_control_state(w));  // synchronises the device

  for (std::size_t k = 0; k < specs.size(); ++k) {
    const CallSpec& spec = specs[k];
    for (int r = 0; r < ranks_; ++r) {
      RankBuffers& b = bufs[k][r];
      const FusedParams p = params_for(spec, r, b);
      LaunchInfo info;
      switch (spec.path) {
        case Path::oneshot: info = launch_oneshot(p, ws_[r], streams_[r], spec.mutant); break;
        case Path::twoshot: info = launch_twoshot(p, ws_[r], streams_[r], spec.mutant); break;
        case Path::unfused:
          launch_unfused_baseline(p, ws_[r], b.allreduce.get(), streams_[r]);
          break;
      }
      if (r == 0 && k == 0) {
        f.cluster_size = info.cluster_size;
        f.epilogue = info.epilogue;
        f.cluster_free = info.cluster_free;
      }
      // The consumer goes on the rank's stream right behind its fused kernel, as a next layer
      // would. Every kernel was loaded when the workspaces were made (preload_kernels), so
      // this launch cannot stall the context while rank r's kernel waits for later ranks.
      if (spec.consumer_reads_before_wait)
        launch_pdl_consumer_copy(b.norm.get(), b.consumer_copy.get(), b.norm.bytes(), true,
                                 streams_[r]);
      if (r == 0 && spec.peer_launch_delay_us > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(spec.peer_launch_delay_us));
    }
  }
  synchronise_and_collect_hangs(f);
  if (f.hung) return f;  // outputs of a hung call are garbage; the record says why
  for (std::size_t k = 0; k < specs.size(); ++k) check_outputs(specs[k], inputs[k], bufs[k], f);

  if (!specs.back().check_invariants) return f;
  std::vector<ControlState> after;
  for (auto& w : ws_) after.push_back(read_control_state(w));
  std::vector<std::string> violations;
  if (specs.size() == 1) {
    const CallSpec& spec = specs.front();
    if (spec.path == Path::twoshot) {
      violations = check_twoshot_invariants(before, after);
    } else {
      std::vector<std::vector<std::uint16_t>> in;
      for (const auto& t : inputs.front().rank_inputs)
        in.emplace_back(t.bits16().begin(), t.bits16().end());
      violations = check_oneshot_invariants(before, after, in, dtype_);
      for (int r = 0; r < ranks_; ++r) {
        LamportScanRequest request;
        request.data_buffer = static_cast<int>(before[r].control.flag % protocol::kLamportBuffers);
        request.dtype = dtype_;
        for (const auto& t : inputs.front().rank_inputs) request.inputs.push_back(t.bits16());
        if (scanner_->scan(ws_[r], request) != scan_lamport_on_host(after[r], request))
          violations.push_back("lamport scan: rank " + std::to_string(r) +
                               ": the GPU scan of the Lamport buffers differs from the host scan");
      }
    }
  } else {
    // Back-to-back one-shot calls: the final state must be K calls ahead, on every rank.
    for (int r = 0; r < ranks_; ++r) {
      const auto& a = after[r].control;
      const std::uint32_t want =
          (before[r].control.flag + specs.size()) % protocol::kLamportBuffers;
      if (a.arrival_counter != 0)
        violations.push_back("invariant 1: rank " + std::to_string(r) + " counter " +
                             std::to_string(a.arrival_counter));
      if (a.flag != want)
        violations.push_back("invariant 2: rank " + std::to_string(r) + " flag " +
                             std::to_string(a.flag) + " after " + std::to_string(specs.size()) +
                             " calls, expected " + std::to_string(want));
      if (!protocol::guards_intact(a) || !after[r].buffer_guards_intact)
        violations.push_back("invariant 11: rank " + std::to_string(r) +
                             " guard words overwritten");
    }
  }
  f.lines.insert(f.lines.end(), violations.begin(), violations.end());
  return f;
}

std::vector<CallSpec> growing_twoshot_sequence(std::uint32_t delay_seed, protocol::Mutant mutant) {
  std::vector<CallSpec> specs;
  for (int tokens : {7, 64, 7, 130, 3, 64}) {
    CallSpec spec;
    spec.path = Path::twoshot;
    spec.mutant = mutant;
    spec.hidden = 4096;
    spec.tokens = tokens;
    spec.trigger = Trigger::early;
    spec.delay_seed = delay_seed;
    spec.delay_max_ns = 200'000;
    specs.push_back(spec);
  }
  return specs;
}

}  // namespace fusioncheck::kernels::testing
