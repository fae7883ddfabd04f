#include "fusioncheck/audit/installed.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "fusioncheck/audit/cuobjdump.hpp"
#include "fusioncheck/audit/process.hpp"

namespace fusioncheck::audit {
namespace {

// Prints "NAME<TAB>FOLDER" per package found and the JIT cache's folder. find_spec of a
// dotted name imports its parent package only (nvidia, a namespace package). `python -c`
// puts the working folder first on sys.path; it is dropped, so that a folder named
// flashinfer (a source checkout, a build tree) is never taken for the installed package.
constexpr const char* kFindScript = R"PY(
import importlib.util, os, pathlib, sys
here = os.getcwd()
sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != here]
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        print(name + "\t" + list(spec.submodule_search_locations)[0])
base = os.getenv("FLASHINFER_WORKSPACE_BASE", pathlib.Path.home().as_posix())
print("flashinfer JIT cache\t" + str(pathlib.Path(base) / ".cache" / "flashinfer"))
)PY";

// `python` as given when it names a path, else the first executable of that name on PATH.
std::string resolve_program(const std::string& python) {
  if (python.find('/') != std::string::npos) {
    if (::access(python.c_str(), X_OK) != 0)
      throw AuditInputError("--python " + python + ": not an executable file");
    return python;
  }
  if (auto found = find_on_path(python)) return *found;
  throw AuditInputError("--python " + python + ": not found on PATH");
}

}  // namespace

const std::vector<std::string>& comm_kernel_packages() {
  static const std::vector<std::string> names{
      "sgl_kernel",            // sglang-kernel / sgl-kernel
      "vllm",                  // vllm's _C (custom allreduce)
      "flashinfer",            // its AOT modules (flashinfer/data/aot)
      "flashinfer_jit_cache",  // FlashInfer's prebuilt JIT modules
      "flashinfer_cubin",      // FlashInfer's prebuilt cubins
      "nvidia.nccl",           // NCCL as torch installs it (nvidia-nccl-cu*)
  };
  return names;
}

std::vector<InstalledPlace> installed_places(const std::string& python,
                                             std::chrono::milliseconds time_limit) {
  const std::string program = resolve_program(python);
  std::vector<std::string> argv{program, "-c", kFindScript};
  for (const auto& name : comm_kernel_packages()) argv.push_back(name);
  std::vector<InstalledPlace> places;
  const ChildResult run = run_bounded(
      argv,
      [&](std::string_view line) {
        const auto tab = line.find('\t');
        if (tab == std::string_view::npos) return;
        places.push_back({std::string(line.substr(0, tab)), std::string(line.substr(tab + 1))});
      },
      time_limit, {});
  if (run.timed_out)
    throw AuditInputError("--python " + python + ": no answer within " +
                          std::to_string(time_limit.count() / 1000) + " s");
  if (run.exit_status != 0) {
    const auto end = run.stderr_text.find_last_not_of("\n");
    const auto start = run.stderr_text.rfind('\n', end);
    const std::string last =
        end == std::string::npos
            ? std::string("exit code " + std::to_string(run.exit_status))
            : run.stderr_text.substr(start == std::string::npos ? 0 : start + 1,
                                     end - (start == std::string::npos ? 0 : start + 1) + 1);
    throw AuditInputError("--python " + python + ": cannot be run as Python (" + last + ")");
  }
  std::vector<InstalledPlace> existing;
  for (auto& place : places) {
    std::error_code error;
    if (std::filesystem::is_directory(place.folder, error)) existing.push_back(std::move(place));
  }
  return existing;
}

}  // namespace fusioncheck::audit
