#pragma once
// Finding and running NVIDIA's cuobjdump, with a time limit, feeding its output to the
// listing parser as it arrives.
#include <chrono>
#include <cstdint>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fusioncheck/audit/listing.hpp"
#include "fusioncheck/audit/user_regex.hpp"
#include "fusioncheck/audit/process.hpp"

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

// The code cuobjdump disassembles, by architecture: each item an sm_N (also selecting sm_Na
// and sm_Nf, as cuobjdump's -arch does), an sm_Na / sm_Nf alone, or sm_N+ (N and newer).
// Empty: all code.
using ArchSelection = std::vector<std::string>;
bool arch_selected(const ArchSelection& selection, std::string_view arch);  // "sm_90a"
bool arch_number_selected(const ArchSelection& selection, int number);      // 90

struct DumpOptions {
  std::chrono::milliseconds time_limit{300000};  // per cuobjdump run
  ArchSelection archs;
  std::size_t parallel = 1;  // cuobjdump runs at once
  // Disassemble the file in pieces (one fatbin entry, then one batch of functions, per run:
  // device_code.hpp), bounding cuobjdump's memory; false: one run over the whole file.
  bool in_pieces = true;
  std::uint64_t batch_text_bytes = 4u << 20;  // code per -fun batch
  // Only the functions whose demangled or mangled name this searches (--kernels): the others
  // are never disassembled where the file is read in pieces, and dropped from the listing
  // where it is read whole (a standalone cubin without one is skipped unread).
  std::optional<UserRegex> kernels;
};

// The end of the NoDeviceCodeError of a file none of whose kernels --kernels keeps.
inline constexpr const char* kNoKernelMatches = "no kernel matches --kernels";

// Whether `options` keeps the function of this mangled name (always without --kernels).
bool function_selected(const DumpOptions& options, const std::string& mangled);

// The demangled name (c++filt's), or the name as it is where it does not demangle.
std::string demangle(const std::string& mangled);

// Parses the SASS and PTX of `file` as cuobjdump prints them. Throws AuditInputError when the
// file is missing or unreadable, holds no device code, or none of the selection
// (NoDeviceCodeError), or a cuobjdump run fails or runs past the time limit (it is killed).
Listing dump_listing(const std::string& cuobjdump, const std::string& file,
                     const DumpOptions& options, const DumpProgress& progress = {});

// Whether `arch` is an item of an ArchSelection: sm_<number> with an optional a, f or +.
bool is_arch_selector(const std::string& arch);

}  // namespace fusioncheck::audit
