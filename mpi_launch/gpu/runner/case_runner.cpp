#include "fusioncheck/gpu/case_runner.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#ifdef __GLIBC__  // defined by the headers above
#include <malloc.h>
#endif

#include "fusioncheck/mpi/rank_watchdog.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/reference/reference.hpp"
#include "fusioncheck/gpu/device_inputs.hpp"
#include "fusioncheck/gpu/host_bounded_wait.hpp"
#include "fusioncheck/gpu/moe_inputs.hpp"
#include "fusioncheck/gpu/output_checks.hpp"
#include "fusioncheck/gpu/row_share.hpp"

namespace fusioncheck::gpu {
namespace {

namespace k = kernels;
namespace ref = reference;

// The launch variant a call runs: its summation order and what it does to zeros (a kernel
// without variants: rank order, the Lamport protocol's zeros).
const KernelVariant* variant_of(const KernelTraits& traits, const CallSpec& call) {
  if (traits.variants.empty()) return nullptr;
  return &traits.variants.at(static_cast<std::size_t>(call.variant));
}

// A copy of 16-bit outputs with every -0 read as +0: for variants whose zero results may take
// either sign (KernelVariant::zero_sign_free).
ref::Tensor zeros_unsigned(const ref::Tensor& t) {
  ref::Tensor out = t;
  for (std::uint16_t& bits : out.bits16())
    if (bits == 0x8000u) bits = 0;
  return out;
}

// The rows of a call this rank compares with the reference. A kernel whose ranks sum in
// rotated orders: every rank checks all rows in its own order (the ranks need not agree
// bitwise, so no rank's rows stand for another's).
RowShare checked_rows(const GpuCase& c, const CallSpec& spec, int rank, bool rotated) {
  return rotated ? RowShare{0, static_cast<std::size_t>(spec.tokens)}
                 : row_share(spec.tokens, c.ranks, rank, spec.pattern == k::Pattern::nvfp4);
}

// Every checked call allocates and frees tensors of up to tens of MB (inputs, reference
// outputs, downloads). glibc's defaults give them back to the kernel on free (mmap for large
// blocks, heap trimming) and the next call pays page faults and zeroing for them again: a
// quarter to a third of the host time of a call in bench_reference. Keep freed memory for
// reuse instead, unless the user tuned malloc through the environment.
void keep_freed_memory_for_reuse() {
#ifdef __GLIBC__
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
      std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr)
    return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: blocks below 32 MiB come from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);   // and the heap is not shrunk below 1 GiB of free space
#endif
}

// Fixed-size text records so that findings of every rank can be gathered to rank 0.
constexpr std::size_t kFindingBytes = 4096;

// Adds the duration of a scope to one PhaseTimes field.
class Timed {
 public:
  explicit Timed(double& sum) : sum_(sum), start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    sum_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  double& sum_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

ref::FusedConfig reference_config(const GpuCase& c, const CallSpec& call,
                                  const KernelTraits& traits) {
  ref::FusedConfig rc;
  rc.ranks = c.ranks;
  rc.tokens = call.tokens;
  rc.hidden = c.hidden;
  rc.dtype = c.dtype;
  rc.accumulation = c.fp32_accumulation ? ref::Accumulation::fp32 : ref::Accumulation::per_step;
  rc.eps = 1e-6f;
  rc.weight_bias = c.weight_bias;
  rc.canonicalize_neg_zero = !call.twoshot;                 // only the Lamport push maps -0 to +0
  if (const KernelVariant* v = variant_of(traits, call)) {  // its zeros, order and build
    rc.canonicalize_neg_zero = !call.twoshot && v->neg_zero_sentinel;
    rc.sanitise_pos_zero = v->sanitises_pos_zero;
    rc.sum_order = v->sum_order;
    const std::uint64_t bytes = static_cast<std::uint64_t>(call.tokens) *
                                static_cast<std::uint64_t>(c.hidden) * k::dtype_bytes(c.dtype);
    if (v->large_from_bytes != 0 && bytes >= v->large_from_bytes) rc.sum_order = v->large_sum_order;
    rc.fast_math = v->fast_math;
  }
  rc.quant.fp8_static = call.pattern == k::Pattern::fp8_static;
  rc.quant.fp8_inv_scale = kFp8InvScale;
  rc.quant.fp8_dynamic = call.pattern == k::Pattern::fp8_dynamic;
  rc.quant.nvfp4 = call.pattern == k::Pattern::nvfp4;
  rc.quant.nvfp4_global_scale = kNvfp4GlobalScale;
  rc.quant.nvfp4_layout = ref::Nvfp4Layout::swizzled128x4;
  rc.quant.mxfp8 = call.pattern == k::Pattern::mxfp8;
  rc.quant.mxfp8_layout = call.scale_layout;
  rc.quant.group_fp8 = call.pattern == k::Pattern::group_fp8;
  rc.quant.group_size = call.group_size;
  rc.quant.tma_aligned_mn = group_fp8_tma_aligned_mn(call);
  return rc;
}

// The input sits this far into its allocation (DeviceBuffer's offset), as a tensor does in a
// caching allocator's block.
constexpr std::size_t kInputOffset = 512;

struct CaseRunner::CallBuffers {
  DeviceBuffer input, residual_in, gamma, allreduce_out, residual_out, norm_out, quant_out,
      scale_out, consumer_copy;
  // Where a call behind a PDL producer gets its inputs made: the producer copies them over
  // the poison in input, residual_in and gamma.
  DeviceBuffer staged_input, staged_residual, staged_gamma;
  std::unique_ptr<MoeBuffers> moe;  // a MoE kernel's expert inputs
  explicit CallBuffers(std::size_t elems, std::size_t hidden, std::size_t scale_bytes)
      : input(elems * 2, kInputOffset), residual_in(elems * 2), gamma(hidden * 2),
        allreduce_out(elems * 2), residual_out(elems * 2), norm_out(elems * 2), quant_out(elems),
        scale_out(scale_bytes), consumer_copy(elems * 2), staged_input(elems * 2),
        staged_residual(elems * 2), staged_gamma(hidden * 2) {}
  // 0xFF bytes: NaN in fp16 and bf16. What a kernel reads of an input before the producer
  // wrote it.
  void fill_poison(cudaStream_t stream, std::size_t elems, std::size_t hidden) {
    input.fill(0xFF, stream, elems * 2);
    residual_in.fill(0xFF, stream, elems * 2);
    gamma.fill(0xFF, stream, hidden * 2);
  }
  // 0xFF bytes: NaN in fp16/bf16, fp32 scales and e4m3 codes; the call's extent only, and
  // a tail past its scales (kScaleCanaryTail) that must stay so.
  void fill_canaries(cudaStream_t stream, std::size_t tokens, std::size_t hidden,
                     std::size_t scale_bytes) {
    const std::size_t elems = tokens * hidden;
    for (DeviceBuffer* b : {&allreduce_out, &residual_out, &norm_out, &consumer_copy})
      b->fill(0xFF, stream, elems * 2);
    quant_out.fill(0xFF, stream, elems);
    scale_out.fill(0xFF, stream, scale_bytes + kScaleCanaryTail);
  }
  // What the PDL consumer copies: the call's last output.
  const DeviceBuffer& consumed(k::Pattern pattern) const {
    return pattern == k::Pattern::allreduce ? allreduce_out : norm_out;
  }
};

// What one call's outputs must be on this rank's share of its rows (checked_rows): computed
// while the kernels run, compared once they have finished.
struct CaseRunner::Expected {
  RowShare share;
  bool all_rows = true;
  ref::FusedConfig config;  // of the share
  ref::FusedOutputs want;
};

struct CaseRunner::CallData {
  ref::FusedConfig config;
  // On the host: every input whole (complete_inputs), or only the checked rows of every
  // rank's input and of the residual, the GPU generating this rank's input and the residual
  // whole (own_input_in_scan_copy: a copy of the own input in scan_input_).
  ref::FusedInputs inputs;
  bool complete_inputs = true;
  bool own_input_in_scan_copy = false;
  std::uint64_t call_index = 0;
  std::optional<Expected> expected;  // expect_outputs, once the call is enqueued
};

// What every rank contributes after a call (or a sequence of calls), gathered in one
// collective: the hang record, the protocol's words (compared across ranks, and the hang
// diagnosis), the hash of each call's outputs (invariant 8) and how many findings the rank has.
struct CaseRunner::RankReport {
  k::HangRecord hang{};
  ProtocolWords words{};
  std::uint64_t output_hash[kMaxCallsPerCase] = {};
  std::uint64_t findings = 0;
};

CaseRunner::CaseRunner(mpi::MpiComm& comm, KernelUnderTest& kernel, const CaseLimits& limits)
    : comm_(comm), kernel_(kernel), limits_(limits) {
  keep_freed_memory_for_reuse();
  protocol_ = &kernel_.protocol_checks(comm_.rank());
  const auto elems = static_cast<std::size_t>(limits.elems_per_call());
  for (int i = 0; i < std::min(limits.max_calls, kMaxCallsPerCase); ++i) {
    buffers_.push_back(
        std::make_unique<CallBuffers>(elems, limits.max_hidden, limits.scale_out_capacity()));
    if (kernel_.traits().moe) buffers_.back()->moe = std::make_unique<MoeBuffers>(limits);
  }
  scan_input_elems_ = elems;
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaStreamCreateWithFlags(&second_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "cudaEventCreate");
  cuda_check(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming), "cudaEventCreate");
}

CaseRunner::~CaseRunner() {
  cudaEventDestroy(join_);
  cudaEventDestroy(fork_);
  cudaStreamDestroy(second_stream_);
  cudaStreamDestroy(stream_);
}

void CaseRunner::fork_second_stream() {
  cuda_check(cudaEventRecord(fork_, stream_), "cudaEventRecord");
  cuda_check(cudaStreamWaitEvent(second_stream_, fork_, 0), "cudaStreamWaitEvent");
}

// Harmless when the second stream holds nothing: the wait is met at once.
void CaseRunner::join_second_stream() {
  cuda_check(cudaEventRecord(join_, second_stream_), "cudaEventRecord");
  cuda_check(cudaStreamWaitEvent(stream_, join_, 0), "cudaStreamWaitEvent");
}

void CaseRunner::prepare_call(const GpuCase& c, int position, std::uint64_t call_index,
                              CallData& call) {
  const CallSpec& spec = c.calls[static_cast<std::size_t>(position)];
  call.config = reference_config(c, spec, kernel_.traits());
  call.call_index = call_index;
  call.expected.reset();  // this call's inputs are new
  // What this rank needs of each input: its own and the residual whole on the GPU, gamma
  // whole, and its checked rows of every rank's input and of the residual on the host (the
  // reference). The GPU generates the own input and the residual itself (device_inputs.hpp),
  // so the host makes only the checked rows: at 8 ranks about 1.1 tensors per call instead
  // of 2.9. The protocol's checks after the last call of a checked group may need more
  // (ProtocolChecks::evidence_needed): every rank's whole input, generated on the host and
  // uploaded, or a copy of the own input the GPU generated, which the kernel never sees.
  const bool last_of_group =
      c.mode == IssueMode::checked_each_call || position + 1 == static_cast<int>(c.calls.size());
  const InputEvidence evidence =
      last_of_group ? protocol_->evidence_needed(spec) : InputEvidence::none;
  // A MoE call's rank inputs are reductions of expert outputs, made on the host whole.
  const bool moe = spec.moe_experts > 0;
  const bool scan_needs_all = evidence == InputEvidence::every_input_on_host || moe;
  const RowShare share = checked_rows(c, spec, comm_.rank(), kernel_.traits().rotated_reduction);
  ref::PartialInputs partial;
  if (!scan_needs_all) {
    partial.complete_ranks.assign(static_cast<std::size_t>(c.ranks), false);
    partial.first_row = static_cast<int>(share.first);
    partial.rows = static_cast<int>(share.count);
    partial.residual_rows_only = true;
  } else if (moe) {  // the rank inputs are the MoE reductions (MoeBuffers::prepare): none drawn
    partial.complete_ranks.assign(static_cast<std::size_t>(c.ranks), false);
    partial.rows = 0;
  }
  call.complete_inputs = scan_needs_all;
  call.own_input_in_scan_copy = !scan_needs_all && evidence == InputEvidence::own_input_on_gpu;
  if (call.own_input_in_scan_copy && scan_input_.bytes() == 0)
    scan_input_ = DeviceBuffer(scan_input_elems_ * 2);
  const ref::ExactSpec exact{c.seed, call_index, c.ranks, c.neg_zero_inputs};
  ref::SpecialsSpec specials;
  specials.seed = c.seed;
  specials.call_index = call_index;
  specials.with_neg_zero = c.neg_zero_inputs;
  {
    Timed timed(times_.inputs);
    if (spec.exact_values)
      call.inputs =
          ref::make_exact_inputs(call.config, c.seed, call_index, c.neg_zero_inputs, partial);
    else call.inputs = ref::make_random_inputs(call.config, specials, partial);
  }
  Timed timed(times_.uploads);
  CallBuffers& b = *buffers_[static_cast<std::size_t>(position)];
  const std::size_t elems = static_cast<std::size_t>(spec.tokens) * c.hidden;
  DeviceBuffer& input = spec.pdl_producer ? b.staged_input : b.input;
  DeviceBuffer& residual_in = spec.pdl_producer ? b.staged_residual : b.residual_in;
  DeviceBuffer& gamma = spec.pdl_producer ? b.staged_gamma : b.gamma;
  if (spec.pdl_producer) b.fill_poison(stream_, elems, static_cast<std::size_t>(c.hidden));
  if (moe) {
    if (!b.moe)
      throw std::logic_error("a MoE call for a kernel without MoE buffers (KernelTraits::moe)");
    b.moe->prepare(c, spec, call_index, kernel_.traits(), comm_, spec.pdl_producer, call.inputs,
                   stream_);
  }
  if (call.complete_inputs) {
    input.upload(call.inputs.rank_inputs[static_cast<std::size_t>(comm_.rank())].data(), elems * 2,
                 stream_);
    residual_in.upload(call.inputs.residual_in.data(), elems * 2, stream_);
  } else {
    auto generate = [&](int input_stream, DeviceBuffer& out, std::uint16_t* copy) {
      auto* bits = static_cast<std::uint16_t*>(out.get());
      if (spec.exact_values)
        generate_on_device(exact, input_stream, c.dtype, elems, bits, copy, stream_);
      else generate_on_device(specials, input_stream, c.dtype, elems, bits, copy, stream_);
    };
    generate(
        comm_.rank(), input,
        call.own_input_in_scan_copy ? static_cast<std::uint16_t*>(scan_input_.get()) : nullptr);
    generate(ref::kResidualStream, residual_in, nullptr);
  }
  gamma.upload(call.inputs.gamma.data(), static_cast<std::size_t>(c.hidden) * 2, stream_);
  const std::size_t scale_bytes = scale_out_bytes(spec, c.hidden);
  if (scale_bytes + kScaleCanaryTail > b.scale_out.bytes())  // CaseLimits::scale_out_capacity
    throw std::logic_error(fmt::format("scale_out of {} bytes cannot hold {} ({})",
                                       b.scale_out.bytes(), scale_bytes, describe(spec)));
  b.fill_canaries(stream_, static_cast<std::size_t>(spec.tokens),
                  static_cast<std::size_t>(c.hidden), scale_bytes);
}

void CaseRunner::launch_call(const GpuCase& c, int position, const CallData& call,
                             cudaStream_t stream) {
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
  p.write_norm_out = spec.norm_out;
  p.eps = call.config.eps;
  p.weight_bias = c.weight_bias;
  p.fp8_inv_scale = call.config.quant.fp8_inv_scale;
  p.nvfp4_global_scale = call.config.quant.nvfp4_global_scale;
  p.nvfp4_layout =
      spec.pattern == k::Pattern::mxfp8 ? spec.scale_layout : k::Nvfp4Layout::swizzled128x4;
  p.group_size = spec.group_size;
  p.tma_aligned_mn = group_fp8_tma_aligned_mn(spec);
  p.use_pdl = spec.use_pdl;
  p.trigger = spec.trigger;
  p.cluster = spec.cluster;
  p.variant = spec.variant;
  p.delay_seed = c.delay_seed;
  p.delay_max_ns = c.delay_max_ns;
  const bool held = c.hold.active() && c.hold.rank == comm_.rank() && c.hold.call == position;
  const bool held_in_kernel = held && kernel_.traits().holds_in_kernel(c.hold.point, c.dtype);
  if (held_in_kernel) {
    p.hold_point = c.hold.point;
    p.hold_ns = c.hold.ns;
  }
  p.input = b.input.get();
  p.residual_in = b.residual_in.get();
  p.gamma = b.gamma.get();
  p.allreduce_out = b.allreduce_out.get();
  if (spec.pattern != k::Pattern::allreduce) {
    p.residual_out = b.residual_out.get();
    p.norm_out = b.norm_out.get();
  }
  if (spec.moe_experts > 0) p.moe = b.moe->params(spec, kernel_.traits());
  if (k::pattern_quantises(spec.pattern)) p.quant_out = b.quant_out.get();
  if (scale_out_bytes(spec, c.hidden) > 0) p.scale_out = b.scale_out.get();
  if (spec.pdl_producer) {  // the kernel before the call that writes its inputs
    const std::size_t elems = static_cast<std::size_t>(spec.tokens) * c.hidden;
    k::PdlProducerCopies copies;
    copies.copy[0] = {b.staged_input.get(), b.input.get(), elems * 2};
    copies.copy[1] = {b.staged_residual.get(), b.residual_in.get(), elems * 2};
    copies.copy[2] = {b.staged_gamma.get(), b.gamma.get(), static_cast<std::size_t>(c.hidden) * 2};
    copies.count = 3;
    if (spec.moe_experts > 0) b.moe->add_producer_copies(copies);
    k::launch_pdl_producer(copies, spec.producer_delay_ns, stream);
    p.follows_pdl_producer = true;
  }
  // A kernel without holds of its own is held before its push: this rank's call starts late.
  // (outside_traits: never a call behind its PDL producer, where nothing may come between.)
  if (held && !held_in_kernel) launch_pause(c.hold.ns, stream);
  if (spec.unfused) kernel_.launch_unfused(p, b.allreduce_out.get(), stream);
  else kernel_.launch(p, spec.twoshot, stream);
  if (spec.pdl_consumer)  // a next layer that reads the output before its own wait
    k::launch_pdl_consumer_copy(b.consumed(spec.pattern).get(), b.consumer_copy.get(),
                                static_cast<std::size_t>(spec.tokens) * c.hidden * 2, true, stream);
  ++calls_run_;
}

CaseRunner::Expected CaseRunner::expect_outputs(const GpuCase& c, int position,
                                                const CallData& call) const {
  const CallSpec& spec = c.calls[static_cast<std::size_t>(position)];
  const bool rotated = kernel_.traits().rotated_reduction;
  Expected e;
  e.share = checked_rows(c, spec, comm_.rank(), rotated);
  e.all_rows = e.share.count == static_cast<std::size_t>(spec.tokens);
  e.config = call.config;
  if (rotated) e.config.sum_from = comm_.rank();
  e.config.tokens = static_cast<int>(e.share.count);
  e.config.first_row = static_cast<int>(e.share.first);  // the share's place in the call's parts
  e.config.call_tokens = spec.tokens;
  if (e.share.count == 0) return e;
  if (e.all_rows) e.want = ref::compute_fused(e.config, call.inputs);
  else
    e.want = ref::compute_fused(
        e.config, slice_rows(call.inputs, e.share, static_cast<std::size_t>(c.hidden)));
  return e;
}

// The reference outputs of calls [first, first + count), computed on the host while their
// kernels run. One that throws is computed again where its outputs are checked, after the
// wait, so that its error leaves no kernel running.
void CaseRunner::expect_calls(const GpuCase& c, int first, int count,
                              std::vector<CallData>& calls) {
  Timed timed(times_.reference);
  for (int i = first; i < first + count; ++i) {
    CallData& call = calls[static_cast<std::size_t>(i)];
    try {
      call.expected = expect_outputs(c, i, call);
    } catch (const std::exception&) {
      call.expected.reset();
    }
  }
}

// Checks this rank's share of one call's outputs against the reference (row_share); returns
// the hash of its whole outputs for the cross-rank agreement.
std::uint64_t CaseRunner::check_outputs(const GpuCase& c, int position, const CallData& call,
                                        std::vector<Finding>& out) {
  const CallSpec& spec = c.calls[static_cast<std::size_t>(position)];
  const CallBuffers& b = *buffers_[static_cast<std::size_t>(position)];
  const std::size_t hidden = static_cast<std::size_t>(c.hidden);
  const std::size_t elems = static_cast<std::size_t>(spec.tokens) * hidden;
  std::optional<Expected> computed;
  if (!call.expected) computed = expect_outputs(c, position, call);
  const Expected& expected = call.expected ? *call.expected : *computed;
  const RowShare& share = expected.share;
  const bool all_rows = expected.all_rows;
  const ref::FusedConfig& rc = expected.config;
  const ref::FusedOutputs& want = expected.want;
  const ref::Tensor& gamma = call.inputs.gamma;
  auto download = [&](const DeviceBuffer& buffer) {
    ref::Tensor t(rc.dtype, elems);
    buffer.download(t.data(), elems * 2);
    return t;
  };
  auto mine = [&](const ref::Tensor& t) { return all_rows ? t : slice_rows(t, share, hidden); };
  auto report = [&](std::optional<ref::Mismatch> m) {
    if (!m) return;
    m = in_whole_output(*m, share, hidden);
    out.push_back(
        {"reference",
         fmt::format("rank {} call {} ({}): {} at element {}: got {} expected {} (allowed {})",
                     comm_.rank(), call.call_index, describe(spec), m->what, m->index, m->actual,
                     m->expected, m->allowed)});
  };
  std::uint64_t agreement = 0;
  ref::Tensor consumed(rc.dtype, 0);
  if (spec.pattern == k::Pattern::allreduce) {
    consumed = download(b.allreduce_out);
    const KernelVariant* variant = variant_of(kernel_.traits(), spec);
    if (variant != nullptr && variant->zero_sign_free) {  // compared and hashed unsigned
      const ref::Tensor got = zeros_unsigned(consumed);
      if (share.count > 0)
        report(ref::first_bit_mismatch(zeros_unsigned(want.allreduce), mine(got), "allreduce_out"));
      agreement = hash_bytes(got.data(), got.bytes());
    } else {
      if (share.count > 0)
        report(ref::first_bit_mismatch(want.allreduce, mine(consumed), "allreduce_out"));
      agreement = hash_bytes(consumed.data(), consumed.bytes());
    }
  } else {
    const ref::Tensor residual = download(b.residual_out);
    consumed = download(b.norm_out);
    std::vector<float> allowed;
    if (share.count > 0) {
      report(ref::first_bit_mismatch(want.residual_out, mine(residual), "residual_out"));
      allowed = ref::norm_out_tolerance(rc, want.residual_out, gamma);
      if (spec.norm_out) report(ref::first_norm_mismatch(want.norm_out, mine(consumed), allowed));
    }
    if (!spec.norm_out) report_written_canary(consumed, comm_.rank(), call.call_index, spec, out);
    agreement = hash_bytes(consumed.data(), consumed.bytes(),
                           hash_bytes(residual.data(), residual.bytes()));
    if (spec.moe_allreduce_out) {  // the MoE reduction kernel's sum, beside its epilogue
      const ref::Tensor sum = download(b.allreduce_out);
      if (share.count > 0)
        report(ref::first_bit_mismatch(want.allreduce, mine(sum), "allreduce_out"));
      agreement = hash_bytes(sum.data(), sum.bytes(), agreement);
    }
    if (k::pattern_quantises(spec.pattern))
      agreement = check_quantised(
          spec, call.config, rc, share, b.quant_out, b.scale_out, want.norm_out, allowed, report,
          [&](const std::string& problem) {
            out.push_back({"reference", fmt::format("rank {} call {} ({}): {}", comm_.rank(),
                                                    call.call_index, describe(spec), problem)});
          },
          agreement);
  }
  if (spec.pdl_consumer) {
    // The consumer read before its grid-dependency wait: it may only see the final output
    // if the kernel triggered its dependents after writing it.
    const ref::Tensor copy = download(b.consumer_copy);
    if (std::memcmp(copy.data(), consumed.data(), consumed.bytes()) != 0) {
      std::size_t first = 0;
      const auto a = copy.bits16();
      const auto w = consumed.bits16();
      while (first < elems && a[first] == w[first]) ++first;
      out.push_back(
          {"pdl-consumer",
           fmt::format(
               "rank {} call {} ({}): the PDL consumer, reading before its grid-dependency wait, "
               "saw element {} as {:#06x}, the kernel's output is {:#06x}: dependents were "
               "triggered before the output was written",
               comm_.rank(), call.call_index, describe(spec), first, a[first], w[first])});
    }
  }
  return agreement;
}

// After the kernels of calls [first, first + count) finished on this rank: checks them
// locally, then exchanges reports. Collective. Returns true when any rank found anything
// (every rank computes the same answer, so all stop together).
bool CaseRunner::check_calls(const GpuCase& c, int first, int count,
                             const std::vector<CallData>& calls, std::vector<Finding>& out) {
  RankReport mine;
  mine.hang = kernel_.hang_record();
  if (mine.hang.valid == 0) {
    {
      Timed timed(times_.reference);
      for (int i = first; i < first + count; ++i) {
        mpi::set_phase("checking outputs against the reference");  // per call: progress
        mine.output_hash[i] = check_outputs(c, i, calls[static_cast<std::size_t>(i)], out);
      }
    }
    Timed timed(times_.invariants);
    mpi::set_phase("checking the workspace for the invariants");
    const CallData& last = calls[static_cast<std::size_t>(first + count - 1)];
    CallEvidence evidence;
    evidence.call_index = last.call_index;
    if (last.own_input_in_scan_copy) {
      evidence.own_input_on_gpu = static_cast<const std::uint16_t*>(scan_input_.get());
      evidence.own_input_elems = scan_input_.bytes() / 2;
    }
    if (last.complete_inputs)
      for (const auto& t : last.inputs.rank_inputs) evidence.every_input.push_back(t.bits16());
    for (const std::string& v : protocol_->check_rank(c, first, count, evidence))
      out.push_back({"invariant", fmt::format("after call {}: {}", last.call_index, v)});
  } else {
    protocol_->read_words();  // for the diagnosis
  }
  mine.words = protocol_->words();
  mine.findings = out.size();
  Timed timed(times_.exchange);
  std::vector<RankReport> all(static_cast<std::size_t>(comm_.size()));
  comm_.all_gather(&mine, all.data(), sizeof(RankReport), "every rank's report after the calls");
  bool any =
      std::any_of(all.begin(), all.end(), [](const RankReport& r) { return r.findings > 0; });
  const bool hang =
      std::any_of(all.begin(), all.end(), [](const RankReport& r) { return r.hang.valid != 0; });
  std::vector<Finding> cross;  // cross-rank findings: every rank computes them, rank 0 keeps them
  if (hang) {
    // One diagnosis naming every rank that waited and the state of every rank.
    std::string states;
    for (int r = 0; r < comm_.size(); ++r)
      states += fmt::format("{}rank {}: {}", r ? "; " : "", r,
                            protocol_->describe(all[static_cast<std::size_t>(r)].words));
    for (const auto& r : all)
      if (r.hang.valid)
        cross.push_back({"hang", protocol_->describe_hang(r.hang) + " | " + states});
  } else {
    // Invariant 8: the ranks agree bitwise on their outputs (with rotated sums, on 2 ranks only).
    const bool agree = !kernel_.traits().rotated_reduction || comm_.size() <= 2;
    for (int i = first; i < first + count && agree; ++i)
      for (int r = 1; r < comm_.size(); ++r)
        if (all[static_cast<std::size_t>(r)].output_hash[i] != all[0].output_hash[i])
          cross.push_back(
              {"agreement",
               fmt::format("invariant 8: call {}: rank {}'s outputs differ bitwise from "
                           "rank 0's",
                           calls[static_cast<std::size_t>(i)].call_index, r)});
    std::vector<ProtocolWords> words;
    for (const auto& r : all) words.push_back(r.words);
    for (auto& v : protocol_->check_across_ranks(words))
      cross.push_back(
          {"invariant",
           fmt::format("after call {}: {}",
                       calls[static_cast<std::size_t>(first + count - 1)].call_index, v)});
  }
  any = any || !cross.empty();
  if (comm_.rank() == 0)
    out.insert(out.begin(), cross.begin(), cross.end());  // a hang explains the rest
  return any;
}

// After a launch that did not happen: a capture in progress is ended and dropped, and the
// calls enqueued before finish, or are released, within the kernel's bound.
void CaseRunner::end_capture_and_wait(const char* phase) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream_, &capturing);
  if (capturing != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(stream_, &partial);
    if (partial) cudaGraphDestroy(partial);
  }
  join_second_stream();
  mpi::set_phase(phase);
  kernel_.wait(stream_, WaitStart::this_rank_enqueued);  // the peers may be elsewhere
}

// The wait's budget starts once every rank has enqueued its calls: a peer whose host is slow
// to launch (a module loaded lazily) cannot make a call that waits for it look hung. It
// allows the case's own pauses in full on top of the base. The host computes the calls'
// reference outputs while their kernels run.
void CaseRunner::wait_for_every_rank(const GpuCase& c, int first, int count,
                                     std::vector<CallData>& calls) {
  {
    Timed timed(times_.kernels);
    comm_.barrier("every rank's calls enqueued");
  }
  mpi::set_phase("computing the reference while the kernels run");
  expect_calls(c, first, count, calls);
  Timed timed(times_.kernels);
  mpi::set_phase("waiting for the kernels to finish");
  const WaitBudget budget(WaitStart::every_rank_enqueued, seeded_pause_allowance(c));
  const auto start = std::chrono::steady_clock::now();
  kernel_.wait(stream_, budget);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (kernel_.hang_record().valid != 0) return;
  times_.longest_finished_wait = std::max(times_.longest_finished_wait, seconds);
  const double bound = std::chrono::duration<double>(wait_budget(budget)).count();
  if (seconds * times_.closest_wait_bound >= times_.closest_wait * bound) {  // a larger share
    times_.closest_wait = seconds;
    times_.closest_wait_bound = bound;
    times_.closest_wait_case = c;
  }
}

CaseVerdict CaseRunner::gather_verdict(std::vector<Finding> mine, bool refused,
                                       const std::string& refusal) {
  Timed timed(times_.exchange);
  CaseVerdict verdict;
  verdict.refused = refused;
  verdict.refusal = refusal;
  // Every rank learns every rank's finding count and hang flag; the first finding of each
  // rank (check + message, truncated) reaches rank 0 only when there is one.
  const bool my_hang =
      std::any_of(mine.begin(), mine.end(), [](const Finding& f) { return f.check == "hang"; });
  const long long summary[2] = {static_cast<long long>(mine.size()), my_hang ? 1 : 0};
  std::vector<long long> all(2 * static_cast<std::size_t>(comm_.size()));
  comm_.all_gather(summary, all.data(), sizeof(summary), "finding counts");
  bool any = false;
  for (int r = 0; r < comm_.size(); ++r) {
    any = any || all[2 * r] > 0;
    verdict.hang = verdict.hang || all[2 * r + 1] != 0;
  }
  if (!any) return verdict;
  std::string text;
  if (!mine.empty()) text = mine.front().check + "\n" + mine.front().message;
  text.resize(kFindingBytes, '\0');
  std::vector<char> texts(comm_.rank() == 0 ? kFindingBytes * comm_.size() : 0);
  comm_.gather(text.data(), texts.data(), kFindingBytes, 0, "findings");
  if (comm_.rank() == 0) {
    verdict.findings = mine;  // rank 0's own, in full
    for (int r = 1; r < comm_.size(); ++r) {
      std::string rec(texts.data() + kFindingBytes * r, kFindingBytes);
      rec.resize(std::strlen(rec.c_str()));
      if (rec.empty()) continue;
      const auto nl = rec.find('\n');
      verdict.findings.push_back({rec.substr(0, nl), rec.substr(nl + 1)});
    }
  } else {
    verdict.findings = mine;
    if (verdict.findings.empty())
      verdict.findings.push_back({"remote", "a rank reported findings (see rank 0)"});
  }
  return verdict;
}

CaseVerdict CaseRunner::run(const GpuCase& c) {
  std::uint64_t max_elems = 0;
  for (const auto& call : c.calls)
    max_elems =
        std::max<std::uint64_t>(max_elems, static_cast<std::uint64_t>(call.tokens) * c.hidden);
  mpi::set_phase("preparing the kernel's workspace");
  kernel_.prepare(max_elems, c.fp32_lamport);
  kernel_.begin_case(c);
  kernel_.clear_hang_record();
  // The state before the first call; later calls start from the state the protocol's checks
  // read after the previous ones (one read-back per checked group).
  protocol_->start_case();
  std::vector<Finding> findings;
  std::vector<CallData> calls(c.calls.size());
  const int n = static_cast<int>(c.calls.size());
  const int replays = c.mode == IssueMode::graph_replay ? 2 : 1;
  try {
    if (c.mode == IssueMode::checked_each_call) {
      for (int i = 0; i < n; ++i) {
        mpi::set_phase("generating and uploading inputs");
        prepare_call(c, i, static_cast<std::uint64_t>(i), calls[i]);  // times inputs and uploads
        {
          Timed timed(times_.kernels);
          // Ranks enqueue together: a rank still checking the previous call must not leave
          // its peers spinning through their wait budget (a false hang).
          comm_.barrier("call start");
          launch_call(c, i, calls[i], stream_);
        }
        wait_for_every_rank(c, i, 1, calls);
        if (check_calls(c, i, 1, calls, findings)) break;
      }
    } else {
      cudaGraphExec_t graph_exec = nullptr;
      bool stop = false;
      for (int replay = 0; replay < replays && !stop; ++replay) {
        mpi::set_phase("generating and uploading inputs");
        for (int i = 0; i < n; ++i)
          prepare_call(c, i, static_cast<std::uint64_t>(replay * n + i), calls[i]);
        {
          Timed timed(times_.kernels);
          comm_.barrier("sequence start");
          if (c.mode == IssueMode::back_to_back) {
            for (int i = 0; i < n; ++i) launch_call(c, i, calls[i], stream_);
          } else if (c.mode == IssueMode::two_streams) {
            // As two users of one communicator: nothing orders a call on one stream after
            // a call on the other.
            fork_second_stream();
            for (int i = 0; i < n; ++i)
              launch_call(c, i, calls[i], i % 2 ? second_stream_ : stream_);
            join_second_stream();
          } else {
            if (graph_exec == nullptr) {
              cudaGraph_t graph = nullptr;
              cuda_check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
                         "cudaStreamBeginCapture");
              for (int i = 0; i < n; ++i) launch_call(c, i, calls[i], stream_);
              cuda_check(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
              try {
                kernel_.after_capture();
              } catch (...) {
                cudaGraphDestroy(graph);
                throw;
              }
              const cudaError_t e = cudaGraphInstantiate(&graph_exec, graph, 0);
              cudaGraphDestroy(graph);
              if (k::is_launch_configuration_error(e)) {
                (void)cudaGetLastError();
                throw k::LaunchFailed(fmt::format(
                    "cudaGraphInstantiate: {}: a captured launch cannot run on this GPU",
                    cudaGetErrorString(e)));
              }
              cuda_check(e, "cudaGraphInstantiate");
            }
            cuda_check(cudaGraphLaunch(graph_exec, stream_), "cudaGraphLaunch");
          }
        }
        wait_for_every_rank(c, 0, n, calls);
        stop = check_calls(c, 0, n, calls, findings);
      }
      if (graph_exec) cudaGraphExecDestroy(graph_exec);
    }
  } catch (const k::InvalidLaunch& e) {
    // Refusals depend only on the case, so every rank refuses at the same call.
    end_capture_and_wait("waiting for the calls before a refused one");
    return gather_verdict({}, true, e.what());
  } catch (const k::LaunchFailed& e) {
    // So does a launch the GPU cannot run (the same shape on every rank): a finding.
    end_capture_and_wait("waiting for the calls before a launch that failed");
    return gather_verdict({{"launch", fmt::format("rank {}: {}", comm_.rank(), e.what())}}, false,
                          "");
  }
  return gather_verdict(std::move(findings), false, "");
}

}  // namespace fusioncheck::gpu
