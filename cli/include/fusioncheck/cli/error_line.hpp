#pragma once
// The one-line error of every command line (fusioncheck's and run_gpu_main's): "PROGRAM:
// error: MESSAGE", written with a single write(2), and bad input shown once per mpirun job.
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// A failed write to stdout, reported once: one line naming it, exit code 3.
inline bool& stdout_failure_reported() {
  static bool reported = false;
  return reported;
}
inline int report_stdout_error(std::string_view program, int error) {
  stdout_failure_reported() = true;
  print_error_line(program, std::string("writing stdout: ") +
                                (error != 0 ? std::strerror(error) : "write failed"));
  return kExitInternalError;
}

// Everything printed reaches stdout (a full disk or a closed pipe shows here, at the latest at
// the final flush); otherwise exit code 3 instead of the command's own, even after bad input
// was reported.
inline int finish_stdout(std::string_view program, int exit_code) {
  errno = 0;
  if (std::fflush(stdout) != 0)
    return stdout_failure_reported() ? kExitInternalError : report_stdout_error(program, errno);
  if (!std::ferror(stdout)) return exit_code;
  if (stdout_failure_reported()) return kExitInternalError;
  // An earlier flush failed (std::endl in CLI11's help) and its errno is gone: the output is
  // incomplete already, so one more byte asks the file descriptor why.
  const ssize_t n = ::write(STDOUT_FILENO, "\n", 1);
  return report_stdout_error(program, n < 0 ? errno : 0);
}

}  // namespace fusioncheck::cli
