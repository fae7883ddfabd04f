#pragma once
// Path checks of the command line, made before any work starts: an input must be a readable
// regular file, an output folder must be (or be creatable in) a folder we can write to, an
// output file must be creatable or writable. Each failure is bad input: UsageError naming the
// option (or argument) and the path.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fusioncheck/cli/command.hpp"

namespace fusioncheck::cli {
namespace paths_detail {

inline std::string label(const std::string& what, const std::string& path) {
  return what.empty() ? path : what + " " + path;
}

// Creates and removes a file in `dir`: the only sure test (access() says yes to root on a
// read-only or virtual file system such as /proc).
inline bool can_create_in(const std::filesystem::path& dir, std::string& why) {
  std::string name = (dir / ".fusioncheck-write-test-XXXXXX").string();
  std::vector<char> buffer(name.begin(), name.end());
  buffer.push_back('\0');
  const int fd = ::mkstemp(buffer.data());
  if (fd < 0) {
    why = std::strerror(errno);
    return false;
  }
  ::close(fd);
  ::unlink(buffer.data());
  return true;
}

// The nearest existing ancestor of `path` (itself when it exists); "." for a relative path
// none of whose parts exist.
inline std::filesystem::path nearest_existing(const std::filesystem::path& path) {
  std::error_code error;
  std::filesystem::path p = path;
  while (!p.empty() && !std::filesystem::exists(p, error)) p = p.parent_path();
  return p.empty() ? std::filesystem::path(".") : p;
}

}  // namespace paths_detail

// `path` names a regular file we can read.
inline void require_readable_file(const std::string& what, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string name = paths_detail::label(what, path);
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (path.empty()) throw UsageError(what + ": empty path");
  if (!fs::exists(status)) throw UsageError(name + ": no such file");
  if (fs::is_directory(status)) throw UsageError(name + ": is a folder, expected a file");
  if (!fs::is_regular_file(status)) throw UsageError(name + ": not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UsageError(name + ": cannot be read: " + std::strerror(errno));
  ::close(fd);
}

// `path` is a folder we can create files in, or can be created (create_directories) below
// the nearest existing folder, which must be writable.
inline void require_output_folder(const std::string& what, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string name = paths_detail::label(what, path);
  if (path.empty()) throw UsageError(what + ": empty path");
  const fs::path existing = paths_detail::nearest_existing(path);
  std::error_code error;
  if (!fs::is_directory(existing, error)) {
    throw UsageError(existing == fs::path(path)
                         ? name + ": not a folder"
                         : name + ": " + existing.string() + " is not a folder");
  }
  std::string why;
  if (!paths_detail::can_create_in(existing, why))
    throw UsageError(name + ": cannot create files in " + existing.string() + ": " + why);
}

// `path` can be written: an existing file that opens for writing (it is not truncated here),
// or a new file in an existing folder we can create files in.
inline void require_output_file(const std::string& what, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string name = paths_detail::label(what, path);
  if (path.empty()) throw UsageError(what + ": empty path");
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) throw UsageError(name + ": is a folder, expected a file");
  if (fs::exists(status)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw UsageError(name + ": cannot be written: " + std::strerror(errno));
    ::close(fd);
    return;
  }
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::exists(parent, error)) throw UsageError(name + ": folder " + parent.string() + " does not exist");
  if (!fs::is_directory(parent, error)) throw UsageError(name + ": " + parent.string() + " is not a folder");
  std::string why;
  if (!paths_detail::can_create_in(parent, why))
    throw UsageError(name + ": cannot create files in " + parent.string() + ": " + why);
}

}  // namespace fusioncheck::cli
