#pragma once
// Path checks of the command line, made before any work starts, and the one way outputs are
// written. An input must be a readable regular file; an output folder must be (or be
// creatable in) a folder we can write to; an output file must be a regular file (or a new
// name) in an existing folder we can create files in, or /dev/null. Each failure is bad
// input: UsageError naming the option (or argument) and the path.
//
// Outputs are written to a temporary file beside the target and renamed into place, so that
// a failed write leaves the old file (or none) and never half a file. A special file (a
// FIFO, a device, /dev/stdout) cannot be renamed over, and opening a FIFO for writing blocks
// until a reader comes: those are refused as bad input, without opening them. /dev/null is
// the one special file accepted; it is written directly.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/files/whole_file.hpp"

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

// The folder a new file `path` goes in exists and takes new files.
inline void require_creatable_in_parent(const std::string& name,
                                        const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  fs::path parent = path.parent_path();
  if (parent.empty()) parent = ".";
  struct stat st {};
  if (::stat(parent.c_str(), &st) != 0) {
    if (errno == ENOENT) throw UsageError(name + ": folder " + parent.string() + " does not exist");
    if (errno == ENOTDIR)
      throw UsageError(name + ": " + nearest_existing(parent).string() + " is not a folder");
    throw UsageError(name + ": folder " + parent.string() + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) throw UsageError(name + ": " + parent.string() + " is not a folder");
  std::string why;
  if (!can_create_in(parent, why))
    throw UsageError(name + ": cannot create files in " + parent.string() + ": " + why);
}

}  // namespace paths_detail

// `path` names a regular file we can read.
inline void require_readable_file(const std::string& what, const std::string& path) {
  const std::string name = paths_detail::label(what, path);
  if (path.empty())
    throw UsageError((what.empty() ? std::string("input file") : what) + ": empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      struct stat link {};
      if (::lstat(path.c_str(), &link) == 0)
        throw UsageError(name + ": a symbolic link to nothing");
      throw UsageError(name + ": no such file");
    }
    throw UsageError(name + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw UsageError(name + ": is a folder, expected a file");
  // Not opened: opening a FIFO blocks until a writer comes.
  if (!S_ISREG(st.st_mode)) throw UsageError(name + ": not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw UsageError(name + ": cannot be read: " + std::strerror(errno));
  ::close(fd);
}

// `path` is a folder we can create files in, or can be created (create_directories) below
// the nearest existing folder, which must be writable.
inline void require_output_folder(const std::string& what, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string name = paths_detail::label(what, path);
  if (path.empty()) throw UsageError(what + ": empty path");
  struct stat link {};
  if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode) && !fs::exists(path))
    throw UsageError(name + ": a symbolic link to nothing");
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

// `path` can be written as a whole: /dev/null, or an existing regular file that opens for
// writing (it is not truncated here), or a new name, in an existing folder we can create
// files in (the temporary file of write_output_file goes there). A symbolic link counts as
// its target; one to nothing is refused.
inline void require_output_file(const std::string& what, const std::string& path) {
  const std::string name = paths_detail::label(what, path);
  if (path.empty()) throw UsageError(what + ": empty path");
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) throw UsageError(name + ": " + std::strerror(errno));
    paths_detail::require_creatable_in_parent(name, path);  // says which part is missing or a file
    return;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw UsageError(name + ": a symbolic link to nothing");
  if (S_ISDIR(st.st_mode)) throw UsageError(name + ": is a folder, expected a file");
  if (files::is_dev_null(st)) return;
  if (!S_ISREG(st.st_mode))
    throw UsageError(name +
                     ": not a regular file (outputs are written to a temporary file and renamed "
                     "into place: give a file name, or /dev/null)");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw UsageError(name + ": cannot be written: " + std::strerror(errno));
  ::close(fd);
  paths_detail::require_creatable_in_parent(name, files::write_target(path));
}

// Writes `text` to `path` as a whole (fusioncheck/files/whole_file.hpp); WriteError naming
// the path when it cannot (a full disk, a folder gone).
inline void write_output_file(const std::string& path, const std::string& text) {
  if (const std::string why = files::write_whole_file(path, text); !why.empty())
    throw WriteError("writing " + path + ": " + why);
}

}  // namespace fusioncheck::cli
