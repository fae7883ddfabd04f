#pragma once
// The one-line error of every command line (fusioncheck's and run_gpu_main's): "PROGRAM:
// error: MESSAGE", written with a single write(2), and bad input shown once per mpirun job.
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "fusioncheck/cli/command.hpp"

namespace fusioncheck::cli {

// One line: without the prefixes a lower layer already added ("PROGRAM: error: ",
// "PROGRAM: "), with inner line breaks folded.
inline std::string one_line_message(std::string text, std::string_view program) {
  const std::string error_prefix = std::string(program) + ": error: ";
  const std::string plain_prefix = std::string(program) + ": ";
  for (bool again = true; again;) {
    again = false;
    for (const std::string& prefix : {error_prefix, plain_prefix})
      if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size()), again = true;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at))
    text.replace(at, 1, "; ");
  return text;
}

// This process's rank under an MPI launcher (Open MPI, or a PMI one such as MPICH or Slurm);
// -1 when none started it.
inline int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0')
      return std::atoi(value);
  return -1;
}

// One error line on stderr in a single write(2): lines of ranks that share one stderr
// (mpirun) never interleave mid-line.
inline void print_error_line(std::string_view program, const std::string& message) {
  const std::string line =
      std::string(program) + ": error: " + one_line_message(message, program) + "\n";
  std::fflush(stderr);
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
}

// Bad input is the same on every rank of an mpirun job (the same command line, the same
// files): rank 0 prints it, the others stay silent, so that the job shows one line instead of
// N. A silent rank waits a moment before it exits: the launcher ends the whole job at the
// first non-zero exit, and rank 0's line must be out by then. A line naming this rank
// ("rank 3") is about this rank alone and is printed by it. Returns exit code 2.
inline int report_bad_input(std::string_view program, const std::string& message) {
  const int rank = launcher_rank();
  bool names_this_rank = false;
  const std::string self = "rank " + std::to_string(rank);
  for (auto at = message.find(self); rank > 0 && at != std::string::npos;
       at = message.find(self, at + 1)) {
    const std::size_t end = at + self.size();
    if (end == message.size() || !std::isdigit(static_cast<unsigned char>(message[end])))
      names_this_rank = true;
  }
  if (rank <= 0 || names_this_rank) {
    print_error_line(program, message);
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  return kExitBadInput;
}

}  // namespace fusioncheck::cli
