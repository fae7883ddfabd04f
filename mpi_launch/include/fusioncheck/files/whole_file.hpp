#pragma once
// The one way the project writes an output file (reports, tables, replays): to a temporary
// file beside the target, then renamed into place, so that a failed write (a full disk, a
// folder gone) leaves the old file, or none, never half a file. A symbolic link is followed
// (its target is replaced, with its mode); /dev/null is written directly; another special
// file (a FIFO, a device, /dev/stdout) cannot be renamed over and is refused unopened (a
// FIFO opened for writing blocks until a reader comes). Header-only, no exceptions: each
// layer turns the reason into its own error.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace fusioncheck::files {

inline bool is_dev_null(const struct stat& st) {
  struct stat null_st {};
  return S_ISCHR(st.st_mode) && ::stat("/dev/null", &null_st) == 0 && st.st_dev == null_st.st_dev &&
         st.st_ino == null_st.st_ino && st.st_rdev == null_st.st_rdev;
}

// Where an output named `path` is written: the target of a symbolic link, else `path`.
inline std::filesystem::path write_target(const std::string& path) {
  std::error_code error;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    const std::filesystem::path target = std::filesystem::canonical(path, error);
    if (!error) return target;
  }
  return path;
}

// Writes `text` to `path` as a whole. Returns an empty string on success, else why not
// (strerror's words, or "not a regular file").
inline std::string write_whole_file(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (is_dev_null(st)) return "";
    if (!S_ISREG(st.st_mode)) return "not a regular file";
  }
  const fs::path target = write_target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string name = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  std::vector<char> temp(name.begin(), name.end());
  temp.push_back('\0');
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return std::strerror(errno);
  // The mode a new file would get (mkstemp makes 0600), or the replaced file's.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  const mode_t mode = ::stat(target.c_str(), &st) == 0 ? (st.st_mode & 07777) : (0666 & ~mask);
  int error = ::fchmod(fd, mode) == 0 ? 0 : errno;
  for (std::size_t done = 0; error == 0 && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    else done += static_cast<std::size_t>(n);
  }
  if (error == 0 && ::fsync(fd) != 0 && errno != EINVAL) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temp.data(), target.c_str()) != 0) error = errno;
  if (error == 0) return "";
  ::unlink(temp.data());
  return std::strerror(error);
}

}  // namespace fusioncheck::files
