#pragma once
// Finding and running NVIDIA's cuobjdump, with a time limit, feeding its output to the
// listing parser as it arrives.
#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fusioncheck/audit/listing.hpp"

namespace fusioncheck::audit {

// The audit's error model: anything wrong with the input or the tools (missing file, not a
// CUDA binary, cuobjdump missing or failing) throws AuditInputError with a one-line message.
// The CLI reports it as bad input (exit 2).
struct AuditInputError : std::runtime_error {
  explicit AuditInputError(const std::string& what) : std::runtime_error(what) {}
};

// The file is readable but holds no device code: a run over several inputs skips it.
struct NoDeviceCodeError : AuditInputError {
  explicit NoDeviceCodeError(const std::string& what) : AuditInputError(what) {}
};

inline constexpr const char* kCuobjdumpInstallHint =
    "python3 -m pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm";

// $CUOBJDUMP if set (it must then name an executable), else `cuobjdump` on PATH, else
// /usr/local/cuda/bin/cuobjdump. Nothing when none is found.
std::optional<std::string> find_cuobjdump();

// Runs `<cuobjdump> -sass -ptx <file>` and parses its output. Throws AuditInputError when the
// file is missing or unreadable, holds no device code (NoDeviceCodeError), or cuobjdump fails or
// runs past `time_limit` (it is then killed). While cuobjdump runs, `report` (if set) is called
// every `every` with the seconds so far: a large binary can take half a minute.
struct DumpProgress {
  std::chrono::milliseconds every{5000};
  std::function<void(double seconds)> report;
};
// With `archs` (e.g. {"sm_120a"}), one run per architecture with `-arch ARCH`, as cuobjdump
// selects it (sm_120 also selects sm_120a), and only that code is read: much faster on a
// library built for many architectures. A file with no code for any of them throws
// NoDeviceCodeError; `time_limit` bounds each run.
Listing dump_listing(const std::string& cuobjdump, const std::string& file,
                     std::chrono::milliseconds time_limit, const DumpProgress& progress = {},
                     const std::vector<std::string>& archs = {});

// Whether `arch` is an architecture cuobjdump's -arch takes: sm_<number> with an optional
// a or f suffix.
bool is_sass_arch_name(const std::string& arch);

}  // namespace fusioncheck::audit
