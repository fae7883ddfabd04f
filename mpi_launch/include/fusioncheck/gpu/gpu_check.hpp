#pragma once
// The GPU property suite (`fusioncheck gpu check`) and its result, shared by the kill table.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusioncheck/gpu/case_runner.hpp"
#include "fusioncheck/mpi/mpi_comm.hpp"
#include "fusioncheck/gpu/gpu_session.hpp"

namespace fusioncheck::gpu {

// The share of two-shot calls for a mutant of the two-shot kernel alone (kill table).
inline constexpr int kTwoShotMutantPercent = 75;

struct CheckOptions {
  std::uint64_t seed = 1;
  int cases = 10000;
  int max_tokens = 2048;
  int max_hidden = 8192;
  int max_elems = 1 << 20;  // bounds tokens x hidden of one call (reference and read-back time)
  int max_calls = 4;
  std::string mutant = "none";
  bool shrink = true;
  bool delays = true;  // draw seeded injected delays in some cases (stress)
  int twoshot_percent = 25;  // share of two-shot calls in cases with 16-bit Lamport buffers
  std::string replay_file;  // run this case only
  std::string replay_out = "fusioncheck-gpu-counterexample.json";
};

struct CheckResult {
  std::string mutant;
  int twoshot_percent = 0;  // the run's CheckOptions::twoshot_percent
  bool failed = false;
  int cases = 0;     // run to completion (refused ones not counted)
  int refused = 0;
  std::map<std::string, int> refusals;  // why the kernel refused cases (reason prefix -> count)
  int calls = 0;     // kernel calls on this rank
  double seconds = 0;
  double seconds_to_first_failure = 0;
  int cases_to_first_failure = 0;
  int minimal_calls = 0;
  std::vector<Finding> findings;  // of the minimal failing case (rank 0)
  nlohmann::json minimal_case;
  std::string replay_command;
  PhaseTimes times;  // this rank's (rank 0's in reports): where the time went
};

// Collective. Bad options throw BadInput.
CheckResult run_check(mpi::MpiComm& comm, const CheckOptions& options, const GpuPlacement& placement);

}  // namespace fusioncheck::gpu
