#include "adapter.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "device_api.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/kernels/cuda_check.hpp"
#include "rules.hpp"

namespace my_kernel {
namespace {

namespace fp = fusioncheck::protocol;
namespace gpu = fusioncheck::gpu;

constexpr std::uint64_t kGuardBytes = 256;

template <class T>
std::unique_ptr<T, DeviceFree> device_alloc(std::uint64_t bytes, const char* what) {
  void* p = nullptr;
  fk::cuda_check(cudaMalloc(&p, bytes), std::string("cudaMalloc: ") + what);
  return std::unique_ptr<T, DeviceFree>(static_cast<T*>(p));
}

bool guard_intact(const std::uint8_t* device) {
  std::uint64_t words[kGuardBytes / 8];
  FC_CUDA_CHECK(cudaMemcpy(words, device, kGuardBytes, cudaMemcpyDeviceToHost));
  return std::all_of(std::begin(words), std::end(words),
                     [](std::uint64_t w) { return w == fp::kGuardWord; });
}

}  // namespace

void DeviceFree::operator()(void* p) const { (void)cudaFree(p); }

Workspace::Workspace(fk::Bootstrap& bootstrap, std::uint64_t comm_size)
    : ranks_(bootstrap.size()), comm_size_(comm_size) {
  const std::uint64_t lamport_bytes = fp::kLamportBuffers * comm_size;
  shared_ = device_alloc<std::uint8_t>(2 * kGuardBytes + lamport_bytes, "example kernel buffers");
  control_ =
      device_alloc<fp::ControlBlock>(sizeof(fp::ControlBlock), "example kernel control block");
  std::uint64_t guard[kGuardBytes / 8];
  std::fill(std::begin(guard), std::end(guard), fp::kGuardWord);
  FC_CUDA_CHECK(cudaMemcpy(shared_.get(), guard, kGuardBytes, cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(cudaMemcpy(shared_.get() + kGuardBytes + lamport_bytes, guard, kGuardBytes,
                           cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(fill_sentinel(shared_.get() + kGuardBytes, lamport_bytes, nullptr));
  const fp::ControlBlock initial = fp::initial_control_block(comm_size);
  FC_CUDA_CHECK(cudaMemcpy(control_.get(), &initial, sizeof initial, cudaMemcpyHostToDevice));
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  peers_ = std::make_unique<fk::PeerMappings>(bootstrap, shared_.get());
  bootstrap.barrier("example kernel: every rank's buffers hold the sentinel");
}

Workspace::~Workspace() = default;  // peers_ closes its mappings first (declared last)

std::uint8_t* Workspace::buffers_of(int rank) const { return peers_->of(rank) + kGuardBytes; }

fk::ControlState Workspace::read_state(fk::LamportCopy copy) const {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  fk::ControlState s;
  FC_CUDA_CHECK(cudaMemcpy(&s.control, control_.get(), sizeof s.control, cudaMemcpyDeviceToHost));
  const std::uint64_t lamport_bytes = fp::kLamportBuffers * comm_size_;
  s.buffer_guards_intact =
      guard_intact(shared_.get()) && guard_intact(shared_.get() + kGuardBytes + lamport_bytes);
  if (copy == fk::LamportCopy::with_buffers) {
    s.lamport.resize(lamport_bytes);
    FC_CUDA_CHECK(cudaMemcpy(s.lamport.data(), shared_.get() + kGuardBytes, lamport_bytes,
                             cudaMemcpyDeviceToHost));
  }
  s.elem_bytes = 2;
  s.comm_size = comm_size_;
  s.ranks = ranks_;
  s.twoshot_blocks = 0;  // no two-shot path: no barrier flags
  return s;
}

MyKernel::~MyKernel() {
  workspaces_.clear();
  if (hang_host_ != nullptr) (void)cudaFreeHost(hang_host_);
}

std::string MyKernel::name() const {
  const std::string base = "the example kernel (examples/my_kernel)";
  return mutant_ == fp::Mutant::none ? base
                                     : base + ", mutant " + std::string(fp::mutant_id(mutant_));
}

gpu::KernelTraits MyKernel::traits() const { return my_kernel::traits(); }
std::vector<gpu::MutantId> MyKernel::mutants() const {
  std::vector<gpu::MutantId> out;
  for (fp::Mutant m : my_kernel::mutants()) out.emplace_back(m);
  return out;
}

// On the rank's GPU, once: its SM count, how many ranks share a GPU (the grid bound), the
// hang record and its claim word.
void MyKernel::first_prepare() {
  int device = 0;
  FC_CUDA_CHECK(cudaGetDevice(&device));
  FC_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
  cudaDeviceProp prop{};
  FC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const int n = bootstrap_.size();
  std::vector<cudaUUID_t> all(static_cast<std::size_t>(n));
  bootstrap_.all_gather(&prop.uuid, all.data(), sizeof(cudaUUID_t),
                        "example kernel: every rank's GPU");
  ranks_on_device_ = 1;
  for (const cudaUUID_t& a : all) {
    const auto same = std::count_if(all.begin(), all.end(), [&](const cudaUUID_t& b) {
      return std::memcmp(&a, &b, sizeof a) == 0;
    });
    ranks_on_device_ = std::max(ranks_on_device_, static_cast<int>(same));
  }
  void* host = nullptr;
  FC_CUDA_CHECK(cudaHostAlloc(&host, sizeof(fk::HangRecord), cudaHostAllocMapped));
  hang_host_ = static_cast<fk::HangRecord*>(host);
  std::memset(hang_host_, 0, sizeof(fk::HangRecord));
  void* mapped = nullptr;
  FC_CUDA_CHECK(cudaHostGetDevicePointer(&mapped, host, 0));
  hang_device_ = static_cast<fk::HangRecord*>(mapped);
  hang_claim_ = device_alloc<unsigned>(sizeof(unsigned), "example kernel hang claim");
  FC_CUDA_CHECK(cudaMemset(hang_claim_.get(), 0, sizeof(unsigned)));
  FC_CUDA_CHECK(cudaDeviceSynchronize());
}

void MyKernel::prepare(std::uint64_t max_elems_per_rank, bool fp32_lamport) {
  if (fp32_lamport)
    throw fk::InvalidLaunch(
        "the example kernel (examples/my_kernel) has 16-bit Lamport elements only");
  if (hang_host_ == nullptr) first_prepare();
  const std::uint64_t comm_size = comm_size_for(bootstrap_.size(), max_elems_per_rank);
  std::unique_ptr<Workspace>& slot = workspaces_[comm_size];
  if (!slot)
    slot = std::make_unique<Workspace>(bootstrap_, comm_size);  // collective: every rank is here
  current_ = slot.get();
}

void MyKernel::launch(const fk::FusedParams& p, bool twoshot, cudaStream_t stream) {
  if (current_ == nullptr) throw fk::InvalidLaunch("the example kernel: launch before prepare");
  if (const std::string why = refusal(p, twoshot, mutant_, current_->comm_size()); !why.empty())
    throw fk::InvalidLaunch(why);
  if (p.ranks != current_->ranks() || p.rank != bootstrap_.rank())
    throw fk::InvalidLaunch("the example kernel: the call's ranks differ from the workspace's");
  Launch call;
  call.input = p.input;
  call.residual_in = p.residual_in;
  call.gamma = p.gamma;
  call.allreduce_out = p.allreduce_out;
  call.residual_out = p.residual_out;
  call.norm_out = p.norm_out;
  for (int r = 0; r < p.ranks; ++r) call.buffers[r] = current_->buffers_of(r);
  call.comm_size = current_->comm_size();
  call.control = current_->control();
  call.hang_claim = hang_claim_.get();
  call.hang = hang_device_;
  call.ranks = p.ranks;
  call.rank = p.rank;
  call.tokens = p.tokens;
  call.hidden = p.hidden;
  call.bf16 = p.dtype == fk::DType::bf16;
  call.allreduce_only = p.pattern == fk::Pattern::allreduce;
  call.fp32_accumulation = p.fp32_accumulation;
  call.early_trigger = p.trigger == fk::Trigger::early;
  call.use_pdl = p.use_pdl;
  call.eps = p.eps;
  call.weight_bias = p.weight_bias;
  call.spin_budget_cycles = p.spin_budget_cycles;
  call.call_index = calls_++;
  call.delay_seed = p.delay_seed;
  call.delay_max_ns = p.delay_max_ns;
  call.blocks = grid_blocks(p.tokens, sm_count_, ranks_on_device_, p.max_blocks);
  call.threads = block_threads(p.hidden);
  fk::cuda_check(my_kernel::launch(call, mutant_, stream), "example kernel launch");
}

fk::ControlState MyKernel::read_state(fk::LamportCopy lamport) {
  if (current_ == nullptr) throw fk::InvalidLaunch("the example kernel: read_state before prepare");
  return current_->read_state(lamport);
}

fk::HangRecord MyKernel::hang_record() {
  fk::HangRecord record{};
  if (hang_host_ != nullptr)
    std::memcpy(&record, hang_host_, sizeof record);  // after the stream's sync
  return record;
}

void MyKernel::clear_hang_record() {
  if (hang_host_ == nullptr) return;
  FC_CUDA_CHECK(cudaDeviceSynchronize());  // no kernel of ours still writes it
  std::memset(hang_host_, 0, sizeof(fk::HangRecord));
  FC_CUDA_CHECK(cudaMemset(hang_claim_.get(), 0, sizeof(unsigned)));
  FC_CUDA_CHECK(cudaDeviceSynchronize());
}

// After a failure the buffers may hold anything (a call that gave up left its pushes): every
// rank drops its workspaces, all ranks idle, and the next case starts on fresh ones.
void MyKernel::reset() {
  FC_CUDA_CHECK(cudaDeviceSynchronize());
  bootstrap_.barrier("example kernel reset: every rank idle");
  workspaces_.clear();
  current_ = nullptr;
  bootstrap_.barrier("example kernel reset: every rank dropped its workspaces");
}

gpu::KernelChoice choice() {
  gpu::KernelChoice c;
  c.name = "my-kernel";
  c.share_sms = false;  // it bounds its grid by the ranks sharing a GPU itself (grid_blocks)
  // Its mutants are the catalogue's (family() registers them), built as template arguments.
  c.make = [](fk::Bootstrap& bootstrap,
              const gpu::MutantId& mutant) -> std::unique_ptr<gpu::KernelUnderTest> {
    const auto in_catalogue = mutant.in_catalogue();
    if (!in_catalogue) throw fk::InvalidLaunch("the example kernel has no mutant " + mutant.id());
    return std::make_unique<MyKernel>(bootstrap, *in_catalogue);
  };
  return c;
}

gpu::KernelFamily family() {
  gpu::KernelFamily f;
  f.name = "my-kernel";
  f.description = "the example one-shot Lamport kernel of examples/my_kernel";
  f.choose = [](const std::string&) { return choice(); };
  for (fp::Mutant m : my_kernel::mutants()) f.mutants.push_back(gpu::catalogue_entry(m));
  f.comparable = true;
  return f;
}

}  // namespace my_kernel
