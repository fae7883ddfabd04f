#pragma once
// The error model of the GPU harness library (fusioncheck::gpu). Every rank of a job sees
// the same bad input and throws alike; the caller (cli/, or another project's driver)
// decides what each error means for its exit code.
//   * BadInput: the job cannot run as asked (options, a replay file, ranks that disagree,
//     rank counts, sizes beyond the buffers, no GPU). One line, says what and why.
//   * RunFailure: the run itself broke (a file could not be written, a CUDA call failed
//     outside a kernel's own checks). MPI timeouts (mpi::MpiTimeout) and kernel hangs
//     (kernels::KernelHang) keep their own types: they are findings with a diagnosis.
#include <stdexcept>
#include <string>

namespace fusioncheck::gpu {

struct BadInput : std::invalid_argument {
  explicit BadInput(const std::string& what) : std::invalid_argument(what) {}
};

struct RunFailure : std::runtime_error {
  explicit RunFailure(const std::string& what) : std::runtime_error(what) {}
};

// Writes a report or replay file whole; RunFailure naming the path if it cannot.
void write_file(const std::string& path, const std::string& text);

}  // namespace fusioncheck::gpu
