// The host-bounded wait, hang record and release (host_bounded_wait.hpp).
#include "fusioncheck/gpu/host_bounded_wait.hpp"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "fusioncheck/kernels/cuda_check.hpp"
#include "fusioncheck/protocol/sentinel.hpp"

namespace fusioncheck::gpu {

namespace k = kernels;

namespace {
// The release needs only copies.
constexpr auto kReleaseBudget = std::chrono::seconds(10);
constexpr auto kReleaseRetry = std::chrono::milliseconds(500);  // then released again
constexpr std::uint64_t kStagingBytes = 1u << 20;
}  // namespace

HostBoundedWait::HostBoundedWait(std::string kernel) : kernel_(std::move(kernel)) {
  FC_CUDA_CHECK(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
  FC_CUDA_CHECK(cudaStreamCreateWithFlags(&copies_, cudaStreamNonBlocking));
  FC_CUDA_CHECK(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
  // Allocated up front: nothing on the release path may wait for the GPU to go idle.
  FC_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&staging_), kStagingBytes));
  preload_device_kernels();
}

HostBoundedWait::~HostBoundedWait() {
  for (const PendingCall& call : pending_)
    if (call.done != nullptr) (void)cudaEventDestroy(call.done);
  for (cudaEvent_t event : spare_events_) (void)cudaEventDestroy(event);
  if (staging_ != nullptr && !k::device_stuck()) (void)cudaFreeHost(staging_);
  (void)cudaEventDestroy(copied_);
  (void)cudaStreamDestroy(copies_);
  (void)cudaStreamDestroy(side_);
}

bool HostBoundedWait::capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (stream != nullptr) FC_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

void HostBoundedWait::enqueued(PendingCall call, cudaStream_t stream) {
  if (!capturing(stream)) {
    if (spare_events_.empty()) {
      cudaEvent_t event = nullptr;
      FC_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      spare_events_.push_back(event);
    }
    call.done = spare_events_.back();
    spare_events_.pop_back();
    FC_CUDA_CHECK(cudaEventRecord(call.done, stream));
  }
  pending_.push_back(call);
}

// The first enqueued call whose event has not completed; in a graph (no events) the last one
// enqueued, the best guess.
PendingCall HostBoundedWait::stuck_call() const {
  for (const PendingCall& call : pending_)
    if (call.done != nullptr && cudaEventQuery(call.done) == cudaErrorNotReady) return call;
  return pending_.empty() ? PendingCall{} : pending_.back();
}

bool HostBoundedWait::finished_by(cudaStream_t stream, Clock::time_point deadline) const {
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) k::cuda_check(e, kernel_.c_str());
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void HostBoundedWait::done() {
  for (const PendingCall& call : pending_)
    if (call.done != nullptr) spare_events_.push_back(call.done);
  pending_.clear();
}

void HostBoundedWait::wait(cudaStream_t stream, const WaitBudget& budget, int rank,
                           const Record& record, const std::function<void()>& release) {
  const auto start = Clock::now();
  if (finished_by(stream, start + wait_budget(budget))) return done();
  // The record's read-back and the release share one budget, whatever their size: the peers
  // wait for this rank's report with their own (MPI) bound.
  copies_deadline_ = Clock::now() + kReleaseBudget;
  hang_ = record(stuck_call(), std::chrono::duration<double>(Clock::now() - start).count());
  // Released again while the stream runs: calls queued behind the stuck one start on the
  // released state, and one of them may wait for a slot that its own reset cleared.
  const auto release_end = Clock::now() + kReleaseBudget;
  copies_deadline_ = release_end;
  release_attempt_ = 0;
  do {
    release();
    ++release_attempt_;
    if (finished_by(stream, std::min(release_end, Clock::now() + kReleaseRetry))) {
      copies_deadline_ = Clock::time_point::max();
      return done();
    }
  } while (Clock::now() < release_end);
  copies_deadline_ = Clock::time_point::max();
  k::mark_device_stuck();  // nothing frees device memory after this: it would wait for ever
  throw k::CudaError(kernel_ + " of rank " + std::to_string(rank) +
                     " still running after its buffers were released: " + k::describe(hang_));
}

// The copies beside a stuck kernel run on their own stream through pinned staging: on the
// hog's stream they would queue behind hog blocks that the stuck kernel keeps off the SMs,
// and a pageable copy may wait for more than its own stream. Bounded all the same.
void HostBoundedWait::copies_done(const char* what) {
  k::cuda_check(cudaEventRecord(copied_, copies_), what);
  const auto deadline = std::min(Clock::now() + kReleaseBudget, copies_deadline_);
  for (;;) {
    const cudaError_t e = cudaEventQuery(copied_);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) k::cuda_check(e, what);
    if (Clock::now() >= deadline) {
      // The stuck work holds back even the copies: nothing may now wait for the device to go
      // idle (a cudaFree on the way out would never return), as after a failed release.
      k::mark_device_stuck();
      throw k::CudaError(kernel_ + ": " + what + " did not complete within its " +
                         std::to_string(kReleaseBudget.count()) + " s beside the stuck kernel");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void HostBoundedWait::read_back(void* dst, const void* src, std::size_t bytes, const char* what) {
  auto* out = static_cast<std::uint8_t*>(dst);
  const auto* in = static_cast<const std::uint8_t*>(src);
  for (std::size_t off = 0; off < bytes; off += kStagingBytes) {
    const std::size_t n = std::min<std::size_t>(kStagingBytes, bytes - off);
    k::cuda_check(cudaMemcpyAsync(staging_, in + off, n, cudaMemcpyDeviceToHost, copies_), what);
    copies_done(what);
    std::memcpy(out + off, staging_, n);
  }
}

void HostBoundedWait::write(void* dst, const void* src, std::size_t bytes, const char* what) {
  auto* out = static_cast<std::uint8_t*>(dst);
  const auto* in = static_cast<const std::uint8_t*>(src);
  for (std::size_t off = 0; off < bytes; off += kStagingBytes) {
    const std::size_t n = std::min<std::size_t>(kStagingBytes, bytes - off);
    std::memcpy(staging_, in + off, n);
    k::cuda_check(cudaMemcpyAsync(out + off, staging_, n, cudaMemcpyHostToDevice, copies_), what);
    copies_done(what);
  }
}

void HostBoundedWait::sweep(std::int32_t* word, std::int32_t first, std::int32_t last,
                            const char* what) {
  for (std::int32_t value = first; value <= last; ++value) {
    std::memcpy(staging_, &value, sizeof(value));
    k::cuda_check(cudaMemcpyAsync(word, staging_, sizeof(value), cudaMemcpyHostToDevice, copies_),
                  what);
    copies_done(what);
  }
}

void HostBoundedWait::fill(std::uint8_t* dst, std::uint64_t bytes, std::uint32_t value, int width) {
  for (std::uint64_t i = 0; i < kStagingBytes; i += static_cast<std::uint64_t>(width))
    std::memcpy(staging_ + i, &value, static_cast<std::size_t>(width));
  for (std::uint64_t off = 0; off < bytes; off += kStagingBytes) {
    k::cuda_check(cudaMemcpyAsync(dst + off, staging_, std::min(kStagingBytes, bytes - off),
                                  cudaMemcpyHostToDevice, copies_),
                  "release copy");
  }
  copies_done("release copy");  // the staging buffer is not rewritten in between
}

k::HangRecord hang_base(int rank, const PendingCall& stuck, double seconds) {
  k::HangRecord h{};
  h.valid = 1;
  h.rank = static_cast<std::uint32_t>(rank);
  h.call_index = stuck.call_index;
  int clock_khz = 0, device = 0;
  (void)cudaGetDevice(&device);
  (void)cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  h.cycles_waited = static_cast<std::uint64_t>(seconds * clock_khz * 1e3);
  return h;
}

std::size_t first_sentinel(const std::vector<std::uint16_t>& data, std::size_t skip_from,
                           std::size_t skip_to) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (i == skip_from && skip_to > skip_from) i = skip_to;
    if (i < data.size() && data[i] == protocol::kNegZero16) return i;
  }
  return data.size();
}

void reset_on_every_rank(k::Bootstrap& bootstrap, const std::string& kernel,
                         const std::function<void()>& drop) {
  if (k::device_stuck())
    throw k::CudaError("the " + kernel + " reset: a kernel that nothing can end is still running");
  if (cudaDeviceSynchronize() != cudaSuccess)
    throw k::CudaError("cudaDeviceSynchronize before the " + kernel + " reset");
  bootstrap.barrier((kernel + " reset: all ranks idle").c_str());
  drop();
  bootstrap.barrier((kernel + " reset: all ranks released").c_str());
}

int HostBoundedWait::sm_count() {
  if (sm_count_ == 0) {
    int device = 0;
    FC_CUDA_CHECK(cudaGetDevice(&device));
    FC_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
  }
  return sm_count_;
}

void HostBoundedWait::stagger_next_start(std::uint32_t spread_ns) {
  launch_sm_hog(spread_ns, sm_count(), side_);
}

void pause_before(const k::FusedParams& p, std::uint32_t call_index, cudaStream_t stream,
                  HostBoundedWait& waiter) {
  // Behind a PDL producer nothing may come between it and the call (the producer's own delay
  // staggers the ranks instead).
  if (p.delay_seed == 0 || p.follows_pdl_producer) return;
  const std::uint32_t ns = delay_for(p.delay_seed, p.rank, call_index, p.delay_max_ns);
  if (ns == 0) return;
  // Half of the delayed calls start block by block (an SM hog on the side stream). Inside a
  // graph capture only the capturing stream's work is recorded: pause there.
  if (staggered_start_for(p.delay_seed, p.rank, call_index) && !HostBoundedWait::capturing(stream))
    waiter.stagger_next_start(ns);
  else launch_pause(ns, stream);
}

}  // namespace fusioncheck::gpu
