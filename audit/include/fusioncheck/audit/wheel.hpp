#pragma once
// Python wheels (.whl, zip archives) as audit inputs: the members that may hold device code,
// each extracted to a temporary file only while it is audited.
#include <cstdint>
#include <functional>
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
};

// The members of `wheel` whose first bytes are those of an ELF, a fatbin or an ar archive,
// in the wheel's order. Throws AuditInputError when the wheel cannot be read, this build
// reads no wheels, or no member may hold device code.
std::vector<WheelMember> device_code_members(const std::string& wheel);

// Extracts `member` into a temporary file, calls `audit(path)`, removes the file (also when
// `audit` throws). Members larger than 8 GiB are refused (AuditInputError).
void with_extracted_member(const std::string& wheel, const WheelMember& member,
                           const std::function<void(const std::string& path)>& audit);

}  // namespace fusioncheck::audit
