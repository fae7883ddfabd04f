#pragma once
// Python wheels (.whl, zip archives) as audit inputs: the members that may hold device code,
// each extracted to a temporary file only while it is audited.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fusioncheck::audit {

// Whether this build reads wheels (it needs libzip).
bool wheels_supported();

// Whether the file starts as a zip archive does (a wheel).
bool is_zip_archive(const std::string& path);

struct WheelMember {
  std::string name;  // the path inside the wheel
  std::uint64_t size = 0;
  std::uint64_t index = 0;  // in the wheel's central directory
};

// A wheel opened once for all its members: its central directory is read once (a wheel of
// 16,000 cubins, flashinfer-cubin's, would otherwise be read again for every member).
class Wheel {
 public:
  // Throws AuditInputError when the wheel cannot be read or this build reads no wheels.
  explicit Wheel(const std::string& path);
  ~Wheel();
  Wheel(const Wheel&) = delete;
  Wheel& operator=(const Wheel&) = delete;

  // The members whose first bytes are those of an ELF, a fatbin or an ar archive, in the
  // wheel's order. Throws AuditInputError when none may hold device code.
  std::vector<WheelMember> device_code_members() const;

  // Extracts `member` into a temporary file, calls `audit(path)`, removes the file (also when
  // `audit` throws). Members larger than 8 GiB are refused (AuditInputError).
  void with_extracted_member(const WheelMember& member,
                             const std::function<void(const std::string& path)>& audit) const;

 private:
  struct Archive;
  std::string path_;
  std::unique_ptr<Archive> archive_;
};

}  // namespace fusioncheck::audit
