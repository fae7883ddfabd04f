#pragma once
// The per-rank workspace of the fused kernels (docs/design.md "One-shot Lamport protocol"):
// Lamport buffers and two-shot buffers shared with every peer, a private control block,
// guard words around both, a host-mapped hang record. Two ways to build one:
//   * create_ipc: one rank per process; peers' buffers opened through CUDA IPC, the
//     handles exchanged over a Bootstrap (MPI implements it in mpi_launch).
//   * create_in_process: one process owns all N ranks' workspaces on the current device;
//     each rank is driven on its own stream (the GPU tests and benchmarks use this).
// Initialisation fills the Lamport buffers with the sentinel of their element width, then
// every rank waits at a barrier before any kernel may push (invariant 12). The destructor
// closes opened IPC handles and frees what it allocated. Errors throw (types.hpp).
#include <cstdint>
#include <memory>
#include <vector>

#include "fusioncheck/kernels/types.hpp"
#include "fusioncheck/kernels/validate.hpp"

namespace fusioncheck::kernels {

namespace detail {
struct DeviceWorkspace;
}
struct ControlState;
class Workspace;
enum class LamportCopy : bool { without_buffers, with_buffers };
// Copies the control block, the guard words, the two-shot barrier flags and (with_buffers)
// the Lamport buffers back (synchronises the device first). Without the buffers, invariants
// 4-6 are checked where they are (DeviceLamportScanner, lamport_scan.hpp).
ControlState read_control_state(const Workspace& workspace,
                                LamportCopy lamport = LamportCopy::with_buffers);
// Only the control block (48 bytes; synchronises the device first).
protocol::ControlBlock read_control_block(const Workspace& workspace);

// Exchange between the ranks of one job; matches fusioncheck::mpi::MpiComm.
class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // recv holds size() * bytes; rank r's bytes land at offset r * bytes.
  virtual void all_gather(const void* send, void* recv, std::size_t bytes, const char* what) = 0;
  virtual void barrier(const char* what) = 0;
};

struct WorkspaceConfig {
  int ranks = 2;
  std::uint64_t comm_size = 1u << 20;  // bytes per Lamport buffer (3 of them)
  bool fp32_lamport = false;           // Lamport element width: fp32, else 16-bit
  // The two-shot grid, fixed per workspace: one block per SM of the rank's share, at most
  // this many (<= 256). A grid of 32 left two H200s' links half idle at large calls.
  int max_twoshot_blocks = 256;
};

// Snapshot of one rank's protocol state, for the invariant checks (invariants.hpp).
struct ControlState {
  protocol::ControlBlock control{};
  std::vector<std::uint8_t> lamport;  // kLamportBuffers * comm_size bytes (empty: not copied)
  std::vector<std::uint32_t> barrier_flags;  // [2][twoshot_blocks][ranks]
  bool buffer_guards_intact = false;         // guard words around the shared buffers
  int elem_bytes = 2;                        // Lamport element width
  std::uint64_t comm_size = 0;
  int ranks = 0;
  int twoshot_blocks = 0;
  // How far one two-shot call advances the two-shot flag (mod 3): 1 for ours (one barrier
  // round per call), 2 for a kernel with two barrier rounds per call (FlashInfer's).
  int twoshot_flag_steps = 1;
};

class Workspace {
 public:
  static Workspace create_ipc(Bootstrap& bootstrap, const WorkspaceConfig& config);
  static std::vector<Workspace> create_in_process(const WorkspaceConfig& config);

  Workspace(Workspace&&) noexcept;
  Workspace& operator=(Workspace&&) noexcept;
  ~Workspace();

  int rank() const;
  int ranks() const;
  int ranks_on_device()
      const;  // most ranks on any one GPU of the job, same on every rank (bounds grids)
  int device() const;
  int twoshot_blocks() const;
  const WorkspaceConfig& config() const;
  LaunchLimits limits() const;  // for validate_*(); includes the device's compute capability

  // The hang record of the last kernel whose bounded wait expired (valid == 0: none).
  // Read it after synchronising the rank's stream.
  HangRecord hang_record() const;
  void clear_hang_record();
  void throw_if_hung() const;  // KernelHang with the record

  // Wait profile buffer (per block of the last one-shot call) for FUSIONCHECK_WAIT_PROFILE
  // builds; empty otherwise.
  std::vector<WaitProfileEntry> wait_profile(int blocks) const;

  // Used by the launchers.
  const detail::DeviceWorkspace& device_view() const;
  // Device address of this rank's three Lamport buffers (kLamportBuffers * comm_size bytes).
  const void* lamport_device() const;
  // The same for rank `rank`'s buffers, as mapped in this process (throws InvalidLaunch for
  // a rank outside [0, ranks)).
  const void* lamport_device(int rank) const;
  std::uint32_t next_call_index();

  struct Impl;

 private:
  friend ControlState read_control_state(const Workspace& workspace, LamportCopy lamport);
  friend protocol::ControlBlock read_control_block(const Workspace& workspace);
  explicit Workspace(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fusioncheck::kernels
