#pragma once
// What a Python environment has installed that holds comm kernels, for `audit --python`:
// the packages that Python can import (found without importing them) and FlashInfer's JIT
// cache, where the kernels FlashInfer compiles on this machine are kept.
#include <chrono>
#include <string>
#include <vector>

namespace fusioncheck::audit {

struct InstalledPlace {
  std::string what;    // "sgl_kernel", "flashinfer JIT cache", ...
  std::string folder;  // where it is
};

// The import names looked for, in this order.
const std::vector<std::string>& comm_kernel_packages();

// Asks `python` (a command on PATH or a path) where each package of comm_kernel_packages() is
// (importlib.util.find_spec) and where FlashInfer keeps its JIT cache
// ($FLASHINFER_WORKSPACE_BASE, else the home folder, then .cache/flashinfer, as FlashInfer's
// flashinfer/jit/env.py has it). Only folders that exist are returned. Throws AuditInputError
// when python cannot be run or does not answer within `time_limit`.
std::vector<InstalledPlace> installed_places(const std::string& python,
                                             std::chrono::milliseconds time_limit);

}  // namespace fusioncheck::audit
