#pragma once
// Reports of the GPU suite: a summary line per run, JSON, JUnit XML, the kill table.
#include <string>
#include <vector>

#include "fusioncheck/gpu/gpu_check.hpp"

namespace fusioncheck::gpu {

std::string summary_line(const CheckResult& r, int ranks);
// Where rank 0's time went, per case (what bounds the checked-cases rate).
std::string time_breakdown(const CheckResult& r);
nlohmann::json to_json(const CheckResult& r);
// One <testcase> per run; a failed run (or a mutant that survived) is a <failure>.
void write_junit(const std::string& path, const std::string& suite, const std::vector<CheckResult>& runs,
                 bool runs_are_mutants);
// Markdown: mutant -> killed?, by which check, time and cases to detect, minimal case size.
// Why `mutant` cannot be killed in this setup ("" if it must be): the arch-guard mutants are
// wrong only in sm_120 code; a missing release/acquire is not observable between ranks on
// one GPU; a torn element is not seen by time-sliced ranks, which never run together.
std::string expected_survival(const std::string& mutant, const GpuPlacement& placement);
std::string kill_table_markdown(const std::vector<CheckResult>& runs, const std::string& setup,
                                const GpuPlacement& placement);

}  // namespace fusioncheck::gpu
