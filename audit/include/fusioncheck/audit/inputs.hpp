#pragma once
// What the audit reads: files named on the command line, and the files of folders (as a
// wheel or a CUDA toolkit unpacks them), picked by their first bytes so that Python
// sources, headers and data files never reach cuobjdump.
#include <string>
#include <string_view>
#include <vector>

namespace fusioncheck::audit {

// Whether the file starts as a container of device code can: ELF (executable, shared
// library, object, standalone cubin), a fatbin, or an ar archive (static library).
bool may_hold_device_code(const std::string& path);
// The same test on the first bytes of a file (at least 4 for ELF and fatbin, 8 for ar).
bool starts_like_device_code(std::string_view bytes);

// The regular files under `folder`, recursively, that may hold device code, sorted; symbolic
// links are not followed (a wheel's links point at files it holds anyway). Throws
// AuditInputError (cuobjdump.hpp) when the folder cannot be read or holds no such file.
std::vector<std::string> files_in_folder(const std::string& folder);

}  // namespace fusioncheck::audit
