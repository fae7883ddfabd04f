#pragma once
// In-process multi-rank test rig for the fused kernels: N ranks' workspaces on the current
// GPU, one stream per rank, exact inputs from the reference's generators, NaN-canary
// outputs, the reference's comparison, and the protocol invariants read back after each
// call (and the GPU Lamport scan compared with the host's). One call = one Findings value;
// empty means the call was correct.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fusioncheck/kernels/baseline.hpp"
#include "fusioncheck/kernels/invariants.hpp"
#include "fusioncheck/kernels/lamport_scan.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/reference/fused.hpp"

namespace fusioncheck::kernels::testing {

// The device present, or why the GPU tests skip.
std::string gpu_skip_reason();  // "" when a usable (sm_90+) device exists
int compute_capability();

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  ~DeviceBuffer();
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  void fill(std::uint8_t byte) const;
  void upload(const void* src, std::size_t bytes) const;
  std::vector<std::uint8_t> download() const;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

enum class Path { oneshot, twoshot, unfused };
const char* path_name(Path p);

struct CallSpec {
  Path path = Path::oneshot;
  int tokens = 1;
  int hidden = 256;
  Pattern pattern = Pattern::residual_rmsnorm;
  bool fp32_accumulation = true;
  float weight_bias = 0.0f;
  bool use_pdl = true;
  Trigger trigger = Trigger::at_end;
  ClusterMode cluster = ClusterMode::automatic;
  protocol::Mutant mutant = protocol::Mutant::none;
  std::uint64_t spin_budget_cycles = 1ull << 28;  // ~0.15 s at 1.8 GHz
  std::uint64_t seed = 1;
  bool check_invariants = true;
  bool consumer_reads_before_wait = false;  // early-trigger control: a PDL consumer copies norm_out
  // Host pause after rank 0's launches (fused kernel and consumer) before the other ranks
  // launch: rank 0 cannot finish before its peers arrive, so an early-launched consumer
  // reads norm_out while it is certainly unwritten. Must stay well below the spin budget.
  std::uint32_t peer_launch_delay_us = 0;
  std::uint32_t delay_seed = 0;  // seeded injected delays in the kernels (FusedParams)
  std::uint32_t delay_max_ns = 0;
};

struct Findings {
  std::vector<std::string> lines;                // each: what went wrong, one line
  int cluster_size = 1;                          // of rank 0's launch
  EpilogueScope epilogue = EpilogueScope::full;  // of rank 0's fused instance
  bool cluster_free = false;  // rank 0's one-shot ran the twin without the cluster path
  bool hung = false;
  bool consumer_read_stale = false;  // the PDL consumer's copy differs from norm_out
  bool ok() const { return lines.empty(); }
  std::string summary(std::size_t max_lines = 6) const;
};

class Rig {
 public:
  Rig(int ranks, DType dtype, bool fp32_lamport = false, std::uint64_t comm_size = 4u << 20);
  ~Rig();
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  int ranks() const { return ranks_; }
  DType dtype() const { return dtype_; }
  std::vector<Workspace>& workspaces() { return ws_; }
  cudaStream_t stream(int r) const { return streams_[r]; }

  // Runs one call on every rank and checks it: outputs against the reference (bit-exact
  // allreduce and residual, derived tolerance for norm, interval check for quantised),
  // ranks agreeing bitwise, hang records, and the invariants (1-7, 11) of the path.
  Findings call(const CallSpec& spec);

  // Enqueues `specs.size()` one-shot calls back to back on every rank (PDL, no host sync
  // between them), then checks every call's outputs and the final control state.
  Findings call_sequence(const std::vector<CallSpec>& specs);

  reference::FusedConfig reference_config(const CallSpec& spec) const;

 private:
  struct RankBuffers;
  FusedParams params_for(const CallSpec& spec, int rank, RankBuffers& b) const;
  void upload_inputs(const CallSpec& spec, const reference::FusedInputs& in,
                     std::vector<RankBuffers>& bufs);
  void check_outputs(const CallSpec& spec, const reference::FusedInputs& in,
                     std::vector<RankBuffers>& bufs, Findings& f);
  void synchronise_and_collect_hangs(Findings& f);

  int ranks_;
  DType dtype_;
  bool fp32_lamport_;
  std::vector<Workspace> ws_;
  std::vector<cudaStream_t> streams_;
  std::uint64_t call_counter_ = 0;
  // The MPI suite scans the Lamport buffers on the GPU; every one-shot call here checks
  // that it agrees with the host scan of the copied buffers.
  std::unique_ptr<DeviceLamportScanner> scanner_;
};

// Two-shot calls that grow and shrink, issued back to back (no host sync between them) with
// seeded delays (`delay_seed`): a rank may start call k+1's reduce-scatter while a peer still
// gathers call k. The twoshot-gather-overlap mutant is this sequence's negative control; seeds
// 1 to kGrowingTwoShotSeeds are the ones the tests run.
std::vector<CallSpec> growing_twoshot_sequence(std::uint32_t delay_seed, protocol::Mutant mutant);
inline constexpr std::uint32_t kGrowingTwoShotSeeds = 6;

}  // namespace fusioncheck::kernels::testing
