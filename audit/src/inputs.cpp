#include "fusioncheck/audit/inputs.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>

#include "fusioncheck/audit/cuobjdump.hpp"

namespace fusioncheck::audit {

bool may_hold_device_code(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 8> head{};
  if (!in.read(head.data(), head.size()) && in.gcount() < 4) return false;
  return starts_like_device_code(
      std::string_view(head.data(), static_cast<std::size_t>(in.gcount())));
}

bool starts_like_device_code(std::string_view bytes) {
  constexpr std::string_view kElf(
      "\x7f"
      "ELF",
      4);
  constexpr std::string_view kFatbin("\x50\xed\x55\xba", 4);  // 0xBA55ED50, little-endian
  constexpr std::string_view kArchive("!<arch>\n", 8);
  return bytes.starts_with(kElf) || bytes.starts_with(kFatbin) || bytes.starts_with(kArchive);
}

std::vector<std::string> files_in_folder(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, error);
  if (error) throw AuditInputError(folder + ": cannot read the folder: " + error.message());
  std::vector<std::string> files;
  for (const fs::recursive_directory_iterator end; it != end; it.increment(error)) {
    if (error) throw AuditInputError(folder + ": cannot read the folder: " + error.message());
    if (it->is_symlink(error) || !it->is_regular_file(error)) continue;
    if (may_hold_device_code(it->path().string())) files.push_back(it->path().string());
  }
  if (files.empty())
    throw AuditInputError(folder +
                          ": no file in the folder may hold device code (ELF, fatbin or archive)");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace fusioncheck::audit
