#pragma once
// The kill table: every catalogue mutant on every profile -> killed or not, time to
// detect, schedules needed and the size of the minimised counterexample.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fusioncheck/sim/counterexample.hpp"

namespace fusioncheck::sim {

struct KillRow {
  Mutant mutant = Mutant::none;
  SimProtocol protocol = SimProtocol::lamport;  // which model
  std::string profile;
  bool killed = false;
  double seconds_to_detect = 0;  // search time until the first violation
  std::uint64_t schedules = 0;   // schedules run until then (or in all, when not killed)
  SchedulerKind scheduler = SchedulerKind::random;  // the one that found it
  Counterexample minimal;                           // when killed
};

struct KillTableOptions {
  std::uint64_t random_budget =
      20000;  // per (mutant, profile), then as many PCT and held-rank ones
  std::uint64_t exhaustive_budget = 1000000;  // then the exhaustive tiny search (<= 2 deviations)
  bool include_correct = true;                // a row per profile for each correct protocol
  // Each search of a row stops after this long: at 72 ranks (the MNNVL model) a schedule
  // takes milliseconds; the single-node models end their budgets well within it.
  double row_time_limit_s = 30;
  // The models, each with its mutants (kInSim, kInSimPcie, kInSimVllm, kInSimMnnvl), each on
  // its profiles (profiles_of).
  std::vector<SimProtocol> protocols = {SimProtocol::lamport, SimProtocol::pcie,
                                        SimProtocol::vllm,    SimProtocol::mnnvl,
                                        SimProtocol::sglang,  SimProtocol::ce_ring};
  std::function<void(const KillRow&)> on_row;  // progress
};

// One search per (mutant, profile): random, then PCT, then held-rank, then the bounded exhaustive
// search of the tiny configuration (the mutant's provoking ones, see provoking_config).
KillRow kill_row(Mutant mutant, const Profile& profile, const KillTableOptions& options,
                 SimProtocol protocol = SimProtocol::lamport);
std::vector<KillRow> kill_table(const KillTableOptions& options);
// The row's name in the table: the mutant id, then the model's label (" (PCIe)", " (vLLM)").
std::string row_label(const KillRow& row);
std::string format_kill_table(const std::vector<KillRow>& rows);  // Markdown
// "2 ranks x 1 block x 1 vector x 1 elem, 3 calls, 1 deviation, 57 steps"
std::string counterexample_size(const Counterexample& cx);

}  // namespace fusioncheck::sim
