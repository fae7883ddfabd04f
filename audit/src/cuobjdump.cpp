#include "fusioncheck/audit/cuobjdump.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string_view>
#include <vector>

#include "fusioncheck/audit/process.hpp"

namespace fusioncheck::audit {
namespace {

bool is_executable_file(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

std::string first_line(std::string_view text) {
  const auto start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "(no message)";
  text.remove_prefix(start);
  return std::string(text.substr(0, text.find('\n')));
}

}  // namespace

std::optional<std::string> find_cuobjdump() {
  if (const char* from_env = std::getenv("CUOBJDUMP"); from_env != nullptr && *from_env != '\0') {
    if (is_executable_file(from_env)) return std::string(from_env);
    return std::nullopt;  // an explicit choice that does not work must not be silently replaced
  }
  if (auto on_path = find_on_path("cuobjdump")) return on_path;
#if defined(FUSIONCHECK_CUOBJDUMP_PATH)
  if (is_executable_file(FUSIONCHECK_CUOBJDUMP_PATH))
    return std::string(FUSIONCHECK_CUOBJDUMP_PATH);
#endif
  if (is_executable_file("/usr/local/cuda/bin/cuobjdump")) return "/usr/local/cuda/bin/cuobjdump";
  return std::nullopt;
}

bool is_sass_arch_name(const std::string& arch) {
  static const std::regex pattern("sm_[0-9]{2,4}[af]?");
  return std::regex_match(arch, pattern);
}

namespace {

// One cuobjdump run over `file` (all its code, or one architecture's), fed to `parser`.
void dump_into(const std::string& cuobjdump, const std::string& file, const std::string& arch,
               ListingParser& parser, std::chrono::milliseconds time_limit,
               const DumpProgress& progress) {
  std::vector<std::string> argv{cuobjdump, "-sass", "-ptx"};
  if (!arch.empty()) argv.insert(argv.end(), {"-arch", arch});
  argv.push_back(file);
  const ChildResult run = run_bounded(
      argv, [&parser](std::string_view line) { parser.feed_line(line); }, time_limit, progress);
  if (run.timed_out)
    throw AuditInputError("cuobjdump did not finish on " + file + " within " +
                          std::to_string(time_limit.count() / 1000) + " s (see --timeout)");
  if (run.exit_status != 0) {
    if (run.stderr_text.find("does not contain device code") != std::string::npos)
      throw NoDeviceCodeError(file + ": not a CUDA binary (it holds no device code)");
    if (run.stderr_text.find("nvdisasm") != std::string::npos)
      throw AuditInputError(
          "cuobjdump needs nvdisasm to show SASS and cannot find it; install it with: " +
          std::string(kCuobjdumpInstallHint));
    throw AuditInputError("cuobjdump failed on " + file + ": " + first_line(run.stderr_text));
  }
}

}  // namespace

Listing dump_listing(const std::string& cuobjdump, const std::string& file,
                     std::chrono::milliseconds time_limit, const DumpProgress& progress,
                     const std::vector<std::string>& archs) {
  std::error_code error;
  if (!std::filesystem::exists(file, error)) throw AuditInputError(file + ": no such file");
  if (!std::filesystem::is_regular_file(file, error) || ::access(file.c_str(), R_OK) != 0)
    throw AuditInputError(file + ": not a readable regular file");
  Listing listing;
  for (const std::string& arch : archs.empty() ? std::vector<std::string>{""} : archs) {
    ListingParser parser;  // one per run: each run's output starts its own sections
    dump_into(cuobjdump, file, arch, parser, time_limit, progress);
    Listing part = parser.finish();
    for (auto& function : part.functions) listing.functions.push_back(std::move(function));
  }
  if (listing.functions.empty() && !archs.empty()) {
    std::string names;
    for (const auto& arch : archs) names += (names.empty() ? "" : ", ") + arch;
    throw NoDeviceCodeError(file + ": no code for " + names + " (--arch)");
  }
  if (listing.functions.empty())
    throw NoDeviceCodeError(file +
                            ": not a CUDA binary (cuobjdump found no device functions in it)");
  return listing;
}

}  // namespace fusioncheck::audit
