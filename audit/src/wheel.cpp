#include "fusioncheck/audit/wheel.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>

#include "fusioncheck/audit/cuobjdump.hpp"
#include "fusioncheck/audit/inputs.hpp"

#if defined(FUSIONCHECK_HAVE_LIBZIP)
#include <zip.h>
#endif

namespace fusioncheck::audit {
namespace {

constexpr std::uint64_t kMaxMemberBytes = 8ull << 30;

}  // namespace

bool is_zip_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 4> head{};
  if (!in.read(head.data(), head.size())) return false;
  return std::string_view(head.data(), head.size()) == std::string_view("PK\x03\x04", 4);
}

#if defined(FUSIONCHECK_HAVE_LIBZIP)

bool wheels_supported() { return true; }

// Not in the anonymous namespace: Wheel::Archive, a class of the header, holds a Zip.
namespace wheel_detail {
struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
}  // namespace wheel_detail
using Zip = std::unique_ptr<zip_t, wheel_detail::ZipCloser>;

namespace {

struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipFile = std::unique_ptr<zip_file_t, ZipFileCloser>;

Zip open_wheel(const std::string& wheel) {
  int error = 0;
  zip_t* z = zip_open(wheel.c_str(), ZIP_RDONLY, &error);
  if (z == nullptr) {
    zip_error_t detail;
    zip_error_init_with_code(&detail, error);
    const std::string why = zip_error_strerror(&detail);
    zip_error_fini(&detail);
    throw AuditInputError(wheel + ": not a readable wheel (zip archive): " + why);
  }
  return Zip(z);
}

ZipFile open_member(zip_t* z, zip_uint64_t index, const std::string& where) {
  zip_file_t* f = zip_fopen_index(z, index, 0);
  if (f == nullptr) throw AuditInputError(where + ": cannot read the member: " + zip_strerror(z));
  return ZipFile(f);
}

// The first bytes of a member say whether it may hold device code (as for files on disk).
bool member_may_hold_device_code(zip_t* z, zip_uint64_t index, const std::string& where) {
  const ZipFile f = open_member(z, index, where);
  std::array<char, 8> head{};
  const zip_int64_t got = zip_fread(f.get(), head.data(), head.size());
  if (got < 0) throw AuditInputError(where + ": cannot read the member: " + zip_strerror(z));
  return starts_like_device_code(std::string_view(head.data(), static_cast<std::size_t>(got)));
}

}  // namespace

struct Wheel::Archive {
  Zip zip;
};

Wheel::Wheel(const std::string& path)
    : path_(path), archive_(std::make_unique<Archive>(Archive{open_wheel(path)})) {}

Wheel::~Wheel() = default;

std::vector<WheelMember> Wheel::device_code_members() const {
  zip_t* z = archive_->zip.get();
  std::vector<WheelMember> members;
  const zip_int64_t count = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) != 0) continue;
    const std::string name = st.name != nullptr ? st.name : "";
    if (name.empty() || name.back() == '/' || st.size < 4) continue;  // folders, tiny files
    const std::string where = path_ + ":" + name;
    if (member_may_hold_device_code(z, static_cast<zip_uint64_t>(i), where))
      members.push_back({name, st.size, static_cast<std::uint64_t>(i)});
  }
  if (members.empty())
    throw AuditInputError(path_ +
                          ": no member of the wheel may hold device code (ELF, fatbin or archive)");
  return members;
}

void Wheel::with_extracted_member(const WheelMember& member,
                                  const std::function<void(const std::string& path)>& audit) const {
  const std::string where = path_ + ":" + member.name;
  if (member.size > kMaxMemberBytes)
    throw AuditInputError(where + ": " + std::to_string(member.size) +
                          " bytes; members over 8 GiB are not extracted");
  zip_t* z = archive_->zip.get();
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = std::filesystem::path(member.name).filename().string();
  std::string name = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                     "/fusioncheck-audit-XXXXXX-" + base;
  std::vector<char> path(name.begin(), name.end());
  path.push_back('\0');
  const int fd = ::mkstemps(path.data(), static_cast<int>(base.size() + 1));
  if (fd < 0)
    throw AuditInputError(where + ": cannot create a temporary file: " + std::strerror(errno));
  struct Remove {
    const char* path;
    ~Remove() { ::unlink(path); }
  } remove{path.data()};
  {
    const ZipFile f = open_member(z, member.index, where);
    std::array<char, 1 << 16> buffer{};
    int error = 0;
    zip_int64_t got = 0;
    while (error == 0 && (got = zip_fread(f.get(), buffer.data(), buffer.size())) > 0) {
      for (zip_int64_t done = 0; error == 0 && done < got;) {
        const ssize_t n = ::write(fd, buffer.data() + done, static_cast<std::size_t>(got - done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) error = errno;
        else done += n;
      }
    }
    ::close(fd);
    if (error != 0) throw AuditInputError(where + ": cannot extract it: " + std::strerror(error));
    if (got < 0) throw AuditInputError(where + ": cannot extract it: " + zip_strerror(z));
  }
  audit(path.data());
}

#else

bool wheels_supported() { return false; }

namespace {
[[noreturn]] void no_wheels(const std::string& wheel) {
  throw AuditInputError(wheel +
                        ": this build reads no wheels (libzip was not found when it was built); "
                        "unzip it and audit the folder with --recursive");
}
}  // namespace

struct Wheel::Archive {};

Wheel::Wheel(const std::string& path) : path_(path) { no_wheels(path); }
Wheel::~Wheel() = default;
std::vector<WheelMember> Wheel::device_code_members() const { no_wheels(path_); }
void Wheel::with_extracted_member(const WheelMember&,
                                  const std::function<void(const std::string&)>&) const {
  no_wheels(path_);
}

#endif

}  // namespace fusioncheck::audit
