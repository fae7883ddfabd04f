#include "fusioncheck/gpu/case_runner.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

#include "fusioncheck/kernels/invariants.hpp"
#include "fusioncheck/reference/reference.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;
namespace ref = reference;

ref::DType to_ref(k::DType d) { return d == k::DType::bf16 ? ref::DType::bf16 : ref::DType::f16; }

bool has_quant(k::Pattern p) {
  return p == k::Pattern::fp8_static || p == k::Pattern::fp8_dynamic || p == k::Pattern::nvfp4;
}

std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

ref::FusedConfig reference_config(const GpuCase& c, const CallSpec& call) {
  ref::FusedConfig rc;
  rc.ranks = c.ranks;
  rc.tokens = call.tokens;
  rc.hidden = c.hidden;
  rc.dtype = to_ref(c.dtype);
  rc.accumulation = c.fp32_accumulation ? ref::Accumulation::fp32 : ref::Accumulation::per_step;
  rc.eps = 1e-6f;
  rc.weight_bias = c.weight_bias;
  rc.canonicalize_neg_zero = !call.twoshot;  // only the Lamport push maps -0 to +0
  rc.quant.fp8_static = call.pattern == k::Pattern::fp8_static;
  rc.quant.fp8_inv_scale = 2.0f;
  rc.quant.fp8_dynamic = call.pattern == k::Pattern::fp8_dynamic;
  rc.quant.nvfp4 = call.pattern == k::Pattern::nvfp4;
  rc.quant.nvfp4_global_scale = 448.0f * 6.0f / 64.0f;
  rc.quant.nvfp4_layout = ref::ScaleLayout::swizzled128x4;
  return rc;
}

// Fixed-size text records so that findings of every rank can be gathered to rank 0.
constexpr std::size_t kFindingBytes = 4096;

}  // namespace

struct CaseRunner::CallBuffers {
  DeviceBuffer input, residual_in, gamma, allreduce_out, residual_out, norm_out, quant_out, scale_out;
  explicit CallBuffers(std::size_t elems, std::size_t hidden, std::size_t tokens)
      : input(elems * 2), residual_in(elems * 2), gamma(hidden * 2), allreduce_out(elems * 2),
        residual_out(elems * 2), norm_out(elems * 2), quant_out(elems),
        scale_out(std::max(tokens * 4, ref::nvfp4_scale_storage(ref::ScaleLayout::swizzled128x4,
                                                                tokens, hidden / 16))) {}
  // 0xFF bytes: NaN in fp16/bf16, fp32 scales and e4m3 codes; the call's extent only.
  void fill_canaries(cudaStream_t stream, std::size_t tokens, std::size_t hidden) {
    const std::size_t elems = tokens * hidden;
    for (DeviceBuffer* b : {&allreduce_out, &residual_out, &norm_out}) b->fill(0xFF, stream, elems * 2);
    quant_out.fill(0xFF, stream, elems);
    scale_out.fill(0xFF, stream, std::max(tokens * 4, ref::nvfp4_scale_storage(ref::ScaleLayout::swizzled128x4,
                                                                               tokens, hidden / 16)));
  }
};

struct CaseRunner::CallData {
  ref::FusedConfig config;
  ref::FusedInputs inputs;
  std::uint64_t call_index = 0;
};

CaseRunner::CaseRunner(mpi::MpiComm& comm, KernelUnderTest& kernel, const GpuPlacement& placement,
                       int max_tokens, int max_hidden, int max_calls)
    : comm_(comm), kernel_(kernel), placement_(placement), max_tokens_(max_tokens), max_hidden_(max_hidden) {
  const std::size_t elems = static_cast<std::size_t>(max_tokens) * max_hidden;
  for (int i = 0; i < max_calls; ++i)
    buffers_.push_back(std::make_unique<CallBuffers>(elems, max_hidden, max_tokens));
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

CaseRunner::~CaseRunner() { cudaStreamDestroy(stream_); }

void CaseRunner::prepare_call(const GpuCase& c, int position, std::uint64_t call_index, CallData& call) {
  const CallSpec& spec = c.calls[static_cast<std::size_t>(position)];
  call.config = reference_config(c, spec);
  call.call_index = call_index;
  if (spec.exact_values) {
    call.inputs = ref::make_exact_inputs(call.config, c.seed, call_index);
  } else {
    ref::SpecialsSpec specials;
    specials.seed = c.seed;
    specials.call_index = call_index;
    call.inputs = ref::make_random_inputs(call.config, specials);
  }
  CallBuffers& b = *buffers_[static_cast<std::size_t>(position)];
  const std::size_t bytes = static_cast<std::size_t>(spec.tokens) * c.hidden * 2;
  b.input.upload(call.inputs.rank_inputs[static_cast<std::size_t>(comm_.rank())].data(), bytes);
  b.residual_in.upload(call.inputs.residual_in.data(), bytes);
  b.gamma.upload(call.inputs.gamma.data(), static_cast<std::size_t>(c.hidden) * 2);
  b.fill_canaries(stream_, static_cast<std::size_t>(spec.tokens), static_cast<std::size_t>(c.hidden));
}

void CaseRunner::launch_call(const GpuCase& c, int position, const CallData& call) {
  const CallSpec& spec = c.calls[static_cast<std::size_t>(position)];
  CallBuffers& b = *buffers_[static_cast<std::size_t>(position)];
  k::FusedParams p;
  p.ranks = c.ranks;
  p.rank = comm_.rank();
  p.tokens = spec.tokens;
  p.hidden = c.hidden;
  p.dtype = c.dtype;
  p.fp32_lamport = c.fp32_lamport;
  p.fp32_accumulation = c.fp32_accumulation;
  p.pattern = spec.pattern;
  p.eps = call.config.eps;
  p.weight_bias = c.weight_bias;
  p.fp8_inv_scale = call.config.quant.fp8_inv_scale;
  p.nvfp4_global_scale = call.config.quant.nvfp4_global_scale;
  p.nvfp4_layout = k::Nvfp4Layout::swizzled128x4;
  p.use_pdl = spec.use_pdl;
  p.trigger = spec.trigger;
  p.cluster = spec.cluster;
  p.input = b.input.get();
  p.residual_in = b.residual_in.get();
  p.gamma = b.gamma.get();
  p.allreduce_out = b.allreduce_out.get();
  if (spec.pattern != k::Pattern::allreduce) {
    p.residual_out = b.residual_out.get();
    p.norm_out = b.norm_out.get();
  }
  if (has_quant(spec.pattern)) p.quant_out = b.quant_out.get();
  if (spec.pattern == k::Pattern::fp8_dynamic || spec.pattern == k::Pattern::nvfp4)
    p.scale_out = b.scale_out.get();
  kernel_.launch(p, spec.twoshot, stream_);
  ++calls_run_;
}

void CaseRunner::check_outputs(const GpuCase& c, int position, const CallData& call,
                               std::vector<Finding>& out) {
  const CallSpec& spec = c.calls[static_cast<std::size_t>(position)];
  const CallBuffers& b = *buffers_[static_cast<std::size_t>(position)];
  const ref::FusedConfig& rc = call.config;
  const std::size_t elems = static_cast<std::size_t>(spec.tokens) * c.hidden;
  const ref::FusedOutputs want = ref::compute_fused(rc, call.inputs);
  auto download = [&](const DeviceBuffer& buffer) {
    ref::Tensor t(rc.dtype, elems);
    buffer.download(t.data(), elems * 2);
    return t;
  };
  auto report = [&](const std::optional<ref::Mismatch>& m) {
    if (m)
      out.push_back({"reference", fmt::format("rank {} call {} ({}): {} at element {}: got {} expected {} (allowed {})",
                                              comm_.rank(), call.call_index, describe(spec), m->what, m->index,
                                              m->actual, m->expected, m->allowed)});
  };
  std::uint64_t agreement = 0;
  if (spec.pattern == k::Pattern::allreduce) {
    const ref::Tensor got = download(b.allreduce_out);
    report(ref::first_bit_mismatch(want.allreduce, got, "allreduce_out"));
    agreement = fnv1a(got.data(), got.bytes());
  } else {
    const ref::Tensor residual = download(b.residual_out);
    const ref::Tensor norm = download(b.norm_out);
    report(ref::first_bit_mismatch(want.residual_out, residual, "residual_out"));
    const auto allowed = ref::norm_out_tolerance(rc, want.residual_out, call.inputs.gamma);
    report(ref::first_norm_mismatch(want.norm_out, norm, allowed));
    agreement = fnv1a(norm.data(), norm.bytes(), fnv1a(residual.data(), residual.bytes()));
    if (has_quant(spec.pattern)) {
      ref::QuantOutputs q;
      std::vector<std::uint8_t> codes(rc.quant.nvfp4 ? elems / 2 : elems);
      b.quant_out.download(codes.data(), codes.size());
      if (rc.quant.fp8_static) q.fp8_static = codes;
      if (rc.quant.fp8_dynamic) {
        q.fp8_dynamic = codes;
        q.fp8_dynamic_scale.resize(static_cast<std::size_t>(rc.tokens));
        b.scale_out.download(q.fp8_dynamic_scale.data(), q.fp8_dynamic_scale.size() * 4);
      }
      if (rc.quant.nvfp4) {
        q.nvfp4 = codes;
        q.nvfp4_scale.resize(want.nvfp4_scale.size());
        b.scale_out.download(q.nvfp4_scale.data(), q.nvfp4_scale.size());
      }
      report(ref::first_quant_mismatch(rc, want.norm_out, allowed, q));
      agreement = fnv1a(codes.data(), codes.size(), agreement);
    }
  }
  // Invariant 8: the ranks agree bitwise on their outputs.
  const auto hashes = comm_.all_gather_value(static_cast<long long>(agreement), "output hashes");
  if (comm_.rank() == 0)
    for (int r = 1; r < comm_.size(); ++r)
      if (hashes[static_cast<std::size_t>(r)] != hashes[0])
        out.push_back({"agreement", fmt::format("invariant 8: call {}: rank {}'s outputs differ bitwise from rank 0's",
                                                call.call_index, r)});
}

// Collective. Every rank's hang record and control block reach rank 0, which prints one
// diagnosis naming every rank that waited and the state of every rank.
bool CaseRunner::check_hang(std::vector<Finding>& out) {
  const k::HangRecord mine = kernel_.hang_record();
  std::vector<k::HangRecord> records(static_cast<std::size_t>(comm_.size()));
  comm_.all_gather(&mine, records.data(), sizeof(mine), "hang records");
  const bool any = std::any_of(records.begin(), records.end(), [](const auto& r) { return r.valid != 0; });
  if (!any) return false;
  const protocol::ControlBlock cb = kernel_.read_state().control;
  std::vector<protocol::ControlBlock> blocks(static_cast<std::size_t>(comm_.size()));
  comm_.all_gather(&cb, blocks.data(), sizeof(cb), "control blocks after a hang");
  if (comm_.rank() == 0) {
    std::string states;
    for (int r = 0; r < comm_.size(); ++r) {
      const auto& b = blocks[static_cast<std::size_t>(r)];
      states += fmt::format("{}rank {}: flag {}, counter {}, clear_size {}, two-shot flag {}", r ? "; " : "", r,
                            b.flag, b.arrival_counter, b.clear_size, b.two_shot_flag);
    }
    for (const auto& r : records)
      if (r.valid) out.push_back({"hang", k::describe(r) + " | " + states});
  }
  return true;
}

// Every rank checks its own state (the Lamport buffers stay where they are); only the
// control blocks travel, for the cross-rank invariant 3, checked on rank 0.
void CaseRunner::check_invariants(const GpuCase& c, const k::ControlState& before_sequence,
                                  const std::vector<CallData>& calls, std::vector<Finding>& out) {
  // The state before the last call, derived from the state before the sequence: one-shot
  // calls advance the Lamport flag and set clear_size, two-shot calls advance their flag.
  k::ControlState before = before_sequence;
  const std::size_t last = c.calls.size() - 1;
  for (std::size_t i = 0; i < last; ++i) {
    if (c.calls[i].twoshot) {
      before.control.two_shot_flag = (before.control.two_shot_flag + 1) % 3;
    } else {
      before.control.flag = (before.control.flag + 1) % protocol::kLamportBuffers;
      before.control.clear_size = static_cast<std::uint64_t>(c.ranks) * c.calls[i].tokens * c.hidden;
    }
  }
  last_state_ = kernel_.read_state();
  const k::ControlState& after = last_state_;
  std::vector<std::string> violations;
  if (c.calls[last].twoshot) {
    violations = k::check_twoshot_rank_invariants(comm_.rank(), before, after);
  } else {
    const std::size_t elems = static_cast<std::size_t>(c.calls[last].tokens) * c.hidden;
    std::vector<std::vector<std::uint16_t>> inputs;
    for (const auto& t : calls[last].inputs.rank_inputs) {
      const auto bits = t.bits16();
      inputs.emplace_back(bits.begin(), bits.begin() + static_cast<std::ptrdiff_t>(elems));
    }
    violations = k::check_oneshot_rank_invariants(comm_.rank(), before, after, inputs, c.dtype);
  }
  std::vector<protocol::ControlBlock> blocks(static_cast<std::size_t>(comm_.size()));
  comm_.all_gather(&after.control, blocks.data(), sizeof(protocol::ControlBlock), "control blocks");
  if (comm_.rank() == 0) {
    const auto same = k::check_same_control_state(blocks);
    violations.insert(violations.end(), same.begin(), same.end());
  }
  for (auto& v : violations)
    out.push_back({"invariant", fmt::format("after call {}: {}", calls[last].call_index, v)});
}

CaseVerdict CaseRunner::gather_verdict(std::vector<Finding> mine, bool refused, const std::string& refusal) {
  CaseVerdict verdict;
  verdict.refused = refused;
  verdict.refusal = refusal;
  verdict.hang = std::any_of(mine.begin(), mine.end(), [](const Finding& f) { return f.check == "hang"; });
  // Every rank's first finding (check + message, truncated) reaches rank 0; all learn the count.
  std::string text;
  if (!mine.empty()) text = mine.front().check + "\n" + mine.front().message;
  text.resize(kFindingBytes, '\0');
  std::vector<char> all(comm_.rank() == 0 ? kFindingBytes * comm_.size() : 0);
  comm_.gather(text.data(), all.data(), kFindingBytes, 0, "findings");
  const auto counts = comm_.all_gather_value(static_cast<long long>(mine.size()), "finding counts");
  const auto hangs = comm_.all_gather_value(verdict.hang ? 1 : 0, "hang verdicts");
  verdict.hang = std::any_of(hangs.begin(), hangs.end(), [](long long h) { return h != 0; });
  if (comm_.rank() == 0) {
    verdict.findings = mine;  // rank 0's own, in full
    for (int r = 1; r < comm_.size(); ++r) {
      std::string rec(all.data() + kFindingBytes * r, kFindingBytes);
      rec.resize(std::strlen(rec.c_str()));
      if (rec.empty()) continue;
      const auto nl = rec.find('\n');
      verdict.findings.push_back({rec.substr(0, nl), rec.substr(nl + 1)});
    }
  } else {
    for (long long n : counts)
      if (n > 0) verdict.findings.push_back({"remote", "a rank reported findings (see rank 0)"});
    if (!mine.empty()) verdict.findings = mine;
  }
  return verdict;
}

CaseVerdict CaseRunner::run(const GpuCase& c) {
  std::uint64_t max_elems = 0;
  for (const auto& call : c.calls)
    max_elems = std::max<std::uint64_t>(max_elems, static_cast<std::uint64_t>(call.tokens) * c.hidden);
  kernel_.prepare(max_elems, c.fp32_lamport);
  kernel_.clear_hang_record();
  // The state before the first call; later calls start from the state read after the
  // previous one (one read-back per call).
  last_state_ = kernel_.read_state();
  std::vector<Finding> findings;
  std::vector<CallData> calls(c.calls.size());
  const int n = static_cast<int>(c.calls.size());
  const int replays = c.mode == IssueMode::graph_replay ? 2 : 1;
  try {
    if (c.mode == IssueMode::checked_each_call) {
      for (int i = 0; i < n; ++i) {
        prepare_call(c, i, static_cast<std::uint64_t>(i), calls[i]);
        const k::ControlState before = std::move(last_state_);
        // Ranks enqueue together: a rank still checking the previous call must not leave
        // its peers spinning through their wait budget (a false hang).
        comm_.barrier("call start");
        launch_call(c, i, calls[i]);
        cuda_check(cudaStreamSynchronize(stream_), "kernel");
        if (check_hang(findings)) break;
        check_outputs(c, i, calls[i], findings);
        GpuCase prefix = c;  // invariants of this call alone
        prefix.calls.assign(c.calls.begin() + i, c.calls.begin() + i + 1);
        check_invariants(prefix, before, {calls[i]}, findings);
        if (!findings.empty()) break;
      }
    } else {
      cudaGraphExec_t graph_exec = nullptr;
      for (int replay = 0; replay < replays && findings.empty(); ++replay) {
        for (int i = 0; i < n; ++i) prepare_call(c, i, static_cast<std::uint64_t>(replay * n + i), calls[i]);
        const k::ControlState before = std::move(last_state_);
        comm_.barrier("sequence start");
        if (c.mode == IssueMode::back_to_back) {
          for (int i = 0; i < n; ++i) launch_call(c, i, calls[i]);
        } else {
          if (graph_exec == nullptr) {
            cudaGraph_t graph = nullptr;
            cuda_check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
            for (int i = 0; i < n; ++i) launch_call(c, i, calls[i]);
            cuda_check(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
            cuda_check(cudaGraphInstantiate(&graph_exec, graph, 0), "cudaGraphInstantiate");
            cudaGraphDestroy(graph);
          }
          cuda_check(cudaGraphLaunch(graph_exec, stream_), "cudaGraphLaunch");
        }
        cuda_check(cudaStreamSynchronize(stream_), "kernels");
        if (check_hang(findings)) break;
        for (int i = 0; i < n; ++i) check_outputs(c, i, calls[i], findings);
        check_invariants(c, before, calls, findings);
      }
      if (graph_exec) cudaGraphExecDestroy(graph_exec);
    }
  } catch (const k::InvalidLaunch& e) {
    // Refusals depend only on the case, so every rank refuses at the same call.
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(stream_, &capturing);
    if (capturing != cudaStreamCaptureStatusNone) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(stream_, &partial);
      if (partial) cudaGraphDestroy(partial);
    }
    cudaStreamSynchronize(stream_);
    return gather_verdict({}, true, e.what());
  }
  return gather_verdict(std::move(findings), false, "");
}

}  // namespace fusioncheck::gpu
