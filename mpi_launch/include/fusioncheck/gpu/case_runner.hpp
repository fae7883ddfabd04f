#pragma once
// Runs one GpuCase on every rank (collective) and checks every call: outputs against the
// Eigen reference (bitwise for allreduce and residual, derived bounds for the norm and the
// quantised outputs), NaN canaries, cross-rank bitwise agreement, the invariants of the
// kernel's protocol (ProtocolChecks; gathered to rank 0), and hang records (gathered into one
// diagnosis).
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusioncheck/gpu/device_buffer.hpp"
#include "fusioncheck/mpi/mpi_comm.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"

namespace fusioncheck::gpu {

struct Finding {
  std::string check;    // "hang", "reference", "invariant", "agreement", "pdl-consumer"
  std::string message;  // one line, names rank, call and the first differing element
};

struct CaseVerdict {
  bool refused = false;  // the kernel does not support the case (every rank agrees)
  std::string refusal;
  std::vector<Finding> findings;  // complete on rank 0 (gathered); this rank's own elsewhere
  bool hang = false;              // a bounded wait expired: the workspace is not reusable
  bool failed() const { return !findings.empty(); }
};

// Where a run's time goes, summed over its cases (seconds), for "what bounds it".
struct PhaseTimes {
  double inputs = 0;      // generating on the host the inputs this rank needs (the checked rows
                          // of every input; the whole own input and residual where the GPU
                          // does not make them)
  double uploads = 0;     // copying them to the GPU or launching its generator, the output canaries
  double kernels = 0;     // barriers, launch, the wait for the kernels left after the reference
  double reference = 0;   // Eigen reference (while the kernels run), output download,
                          // comparison, consumer copy
  double invariants = 0;  // workspace read-back and the per-rank invariant scan
  double exchange = 0;    // gathering every rank's report and the verdict (MPI)
  // Not sums: the longest wait for a case's kernels that ended without a hang (from the end of
  // the reference computation, where the bounded wait starts), and the one
  // that came closest to its own hang bound (wait_budget: the base and the case's pauses, for
  // kernels whose polls have no bound of their own), with that bound and the case (its draws
  // say why: holds, delays, sizes), for the report.
  double longest_finished_wait = 0;
  double closest_wait = 0;
  double closest_wait_bound = 0;
  std::optional<GpuCase> closest_wait_case;
};

// The reference's configuration of one call of a case on a kernel of these traits: its sum
// order and zeros (the call's launch variant), the quantisation of its pattern.
reference::FusedConfig reference_config(const GpuCase& c, const CallSpec& call,
                                        const KernelTraits& traits);

class CaseRunner {
 public:
  // Buffers are sized once for the largest call the limits allow (validated by the caller).
  CaseRunner(mpi::MpiComm& comm, KernelUnderTest& kernel, const CaseLimits& limits);
  ~CaseRunner();
  CaseRunner(const CaseRunner&) = delete;
  CaseRunner& operator=(const CaseRunner&) = delete;

  CaseVerdict run(const GpuCase& c);
  const CaseLimits& limits() const { return limits_; }
  int calls_run() const { return calls_run_; }
  const PhaseTimes& times() const { return times_; }

 private:
  struct CallBuffers;
  struct Expected;
  struct CallData;

  struct RankReport;

  void prepare_call(const GpuCase& c, int position, std::uint64_t call_index, CallData& call);
  void launch_call(const GpuCase& c, int position, const CallData& call, cudaStream_t stream);
  // IssueMode::two_streams: the second stream starts after the inputs' uploads (fork) and
  // the first waits for it before the calls are awaited (join).
  void fork_second_stream();
  void join_second_stream();
  Expected expect_outputs(const GpuCase& c, int position, const CallData& call) const;
  void expect_calls(const GpuCase& c, int first, int count, std::vector<CallData>& calls);
  std::uint64_t check_outputs(const GpuCase& c, int position, const CallData& call,
                              std::vector<Finding>& out);
  bool check_calls(const GpuCase& c, int first, int count, const std::vector<CallData>& calls,
                   std::vector<Finding>& out);
  CaseVerdict gather_verdict(std::vector<Finding> mine, bool refused, const std::string& refusal);
  void end_capture_and_wait(const char* phase);
  // A barrier, the reference outputs of calls [first, first + count), then the kernel's wait
  // for case c's calls (times the wait).
  void wait_for_every_rank(const GpuCase& c, int first, int count, std::vector<CallData>& calls);

  mpi::MpiComm& comm_;
  KernelUnderTest& kernel_;
  CaseLimits limits_;
  std::vector<std::unique_ptr<CallBuffers>> buffers_;
  cudaStream_t stream_{};
  cudaStream_t second_stream_{};  // the odd calls of a two-streams case
  cudaEvent_t fork_{}, join_{};
  int calls_run_ = 0;
  PhaseTimes times_;
  ProtocolChecks* protocol_ = nullptr;  // the kernel's (KernelUnderTest::protocol_checks)
  // The own input of the last call of a checked group, as generated on the GPU, for the
  // protocol's checks (InputEvidence::own_input_on_gpu): a copy the kernel is never given.
  DeviceBuffer scan_input_;
  std::size_t scan_input_elems_ = 0;
};

}  // namespace fusioncheck::gpu
