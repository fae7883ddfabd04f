#include "fusioncheck/audit/device_code.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string_view>

#include "fusioncheck/audit/cuobjdump.hpp"

namespace fusioncheck::audit {
namespace {

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::uint16_t kElfMachineCuda = 190;
constexpr std::uint16_t kEntryPtx = 1;
constexpr std::uint16_t kEntryElf = 2;
constexpr std::uint32_t kMinEntryHeader = 64;  // arch at 28, flags at 40, uncompressed size at 56
// Flags of an entry: code for sm_XXa, for sm_XXf (read off nvcc's output for 90a, 100a, 120f)
constexpr std::uint32_t kFlagArchSpecific = 0x100000;
constexpr std::uint32_t kFlagFamily = 0x200000;

// A file read by offset; every read must be whole, else LayoutUnknown.
class InputFile {
 public:
  explicit InputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw AuditInputError(path + ": cannot be read: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw AuditInputError(path + ": " + std::strerror(errno));
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  std::uint64_t size() const { return size_; }
  void read(std::uint64_t offset, void* out, std::size_t bytes) const {
    if (offset > size_ || bytes > size_ - offset)
      throw LayoutUnknown(path_ + ": a size points past the end of the file");
    auto* to = static_cast<char*>(out);
    for (std::size_t done = 0; done < bytes;) {
      const ssize_t n = ::pread(fd_, to + done, bytes - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw AuditInputError(path_ + ": read failed: " + std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
  }
  template <typename T> T value(std::uint64_t offset) const {
    T v{};
    read(offset, &v, sizeof v);  // little-endian files on a little-endian host
    return v;
  }
  std::string bytes(std::uint64_t offset, std::size_t n) const {
    std::string s(n, '\0');
    read(offset, s.data(), n);
    return s;
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

struct Section {
  std::string name;
  std::uint32_t type = 0;
  std::uint32_t link = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// The section headers of an ELF64 little-endian file, with their names.
std::vector<Section> elf_sections(const InputFile& file) {
  const std::uint64_t shoff = file.value<std::uint64_t>(0x28);
  const std::uint16_t shentsize = file.value<std::uint16_t>(0x3A);
  std::uint64_t shnum = file.value<std::uint16_t>(0x3C);
  std::uint32_t shstrndx = file.value<std::uint16_t>(0x3E);
  if (shoff == 0) return {};
  if (shentsize < 64) throw LayoutUnknown("ELF section headers of an unknown size");
  // Many sections: the real counts are in section 0 (ELF's extended numbering).
  if (shnum == 0) shnum = file.value<std::uint64_t>(shoff + 32);
  if (shstrndx == 0xFFFF) shstrndx = file.value<std::uint32_t>(shoff + 40);
  if (shstrndx >= shnum) throw LayoutUnknown("ELF without section names");
  // Counts (extended numbering holds 64 bits) are believed only as far as the file holds them.
  if (shoff > file.size() || shnum > (file.size() - shoff) / shentsize)
    throw LayoutUnknown("ELF section headers past the end of the file");
  const auto header = [&](std::uint64_t i) { return shoff + i * shentsize; };
  const std::uint64_t names_offset = file.value<std::uint64_t>(header(shstrndx) + 24);
  const std::uint64_t names_size = file.value<std::uint64_t>(header(shstrndx) + 32);
  if (names_size > (64u << 20)) throw LayoutUnknown("ELF section names larger than 64 MiB");
  const std::string names = file.bytes(names_offset, names_size);
  std::vector<Section> sections;
  sections.reserve(shnum);
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const std::uint32_t name = file.value<std::uint32_t>(header(i));
    const std::uint32_t type = file.value<std::uint32_t>(header(i) + 4);
    Section s;
    if (name < names.size()) s.name = std::string(names.c_str() + name);
    s.type = type;
    s.link = file.value<std::uint32_t>(header(i) + 40);
    s.offset = file.value<std::uint64_t>(header(i) + 24);
    s.size = type == 8 /* SHT_NOBITS */ ? 0 : file.value<std::uint64_t>(header(i) + 32);
    sections.push_back(std::move(s));
  }
  return sections;
}

// The entries of the fatbins laid one after another (8-byte aligned) in [begin, end).
void read_fatbins(const InputFile& file, std::uint64_t begin, std::uint64_t end,
                  std::vector<FatbinEntry>& entries) {
  std::uint64_t pos = begin;
  while (pos + 16 <= end) {
    if (file.value<std::uint32_t>(pos) != kFatbinMagic) {
      pos += 8;  // padding between the fatbins of two translation units
      continue;
    }
    const std::uint16_t header_size = file.value<std::uint16_t>(pos + 6);
    const std::uint64_t body_size = file.value<std::uint64_t>(pos + 8);
    if (header_size < 16 || body_size > end - pos - header_size)
      throw LayoutUnknown("a fatbin header of an unknown form");
    const std::uint64_t body_end = pos + header_size + body_size;
    for (std::uint64_t at = pos + header_size; at + 16 <= body_end;) {
      const std::uint16_t kind = file.value<std::uint16_t>(at);
      const std::uint32_t entry_header = file.value<std::uint32_t>(at + 4);
      const std::uint64_t payload = file.value<std::uint64_t>(at + 8);
      if (entry_header < kMinEntryHeader || entry_header > body_end - at ||
          payload > body_end - at - entry_header)
        throw LayoutUnknown("a fatbin entry of an unknown form");
      if (kind == kEntryPtx || kind == kEntryElf) {
        FatbinEntry e;
        e.is_ptx = kind == kEntryPtx;
        e.arch = static_cast<int>(file.value<std::uint32_t>(at + 28));
        const std::uint32_t flags = file.value<std::uint32_t>(at + 40);
        e.arch_suffix = (flags & kFlagArchSpecific) ? "a" : (flags & kFlagFamily) ? "f" : "";
        e.fatbin_offset = pos;
        e.fatbin_header_size = header_size;
        e.offset = at;
        e.size = entry_header + payload;
        e.uncompressed_size = file.value<std::uint64_t>(at + 56);
        entries.push_back(e);
      }
      at += entry_header + payload;
    }
    pos = body_end;
  }
}

}  // namespace

DeviceCodeLayout read_device_code_layout(const std::string& path) {
  const InputFile file(path);
  if (file.size() < 16) throw LayoutUnknown(path + ": too short");
  DeviceCodeLayout layout;
  const std::string start = file.bytes(0, 16);
  if (file.value<std::uint32_t>(0) == kFatbinMagic) {
    layout.kind = ContainerKind::kFatbin;
    read_fatbins(file, 0, file.size(), layout.entries);
    return layout;
  }
  if (start.compare(0, 4,
                    "\x7f"
                    "ELF") != 0 ||
      start[4] != 2 || start[5] != 1)
    throw LayoutUnknown(path + ": not an ELF64 little-endian file nor a fatbin");
  if (file.value<std::uint16_t>(0x12) == kElfMachineCuda) {
    layout.kind = ContainerKind::kCubin;
    return layout;
  }
  const std::vector<Section> sections = elf_sections(file);
  for (const char* name : {".nv_fatbin", "__nv_relfatbin"}) {
    for (const Section& s : sections)
      if (s.name == name) read_fatbins(file, s.offset, s.offset + s.size, layout.entries);
    if (!layout.entries.empty()) break;  // relocatable copies only where no linked code is
  }
  return layout;
}

void write_single_entry_fatbin(const std::string& path, const FatbinEntry& entry,
                               const std::string& out) {
  const InputFile file(path);
  std::string bytes = file.bytes(entry.fatbin_offset, entry.fatbin_header_size);
  const std::uint64_t body_size = entry.size;
  std::memcpy(bytes.data() + 8, &body_size, sizeof body_size);
  bytes += file.bytes(entry.offset, entry.size);
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw AuditInputError("cannot create " + out + ": " + std::strerror(errno));
  int error = 0;
  for (std::size_t done = 0; error == 0 && done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    else done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) throw AuditInputError("cannot write " + out + ": " + std::strerror(error));
}

namespace {

// The functions of a cubin: each .text.<name> section with the symbol of that name.
std::vector<CubinFunction> read_cubin_functions(const InputFile& file) {
  constexpr std::string_view kText = ".text.";
  constexpr std::uint32_t kSymtab = 2;
  const std::vector<Section> sections = elf_sections(file);
  std::map<std::string, std::uint64_t> text_sizes;  // name -> bytes
  std::map<std::uint64_t, std::string> text_of_section;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const Section& s = sections[i];
    if (s.name.size() > kText.size() && s.name.compare(0, kText.size(), kText) == 0) {
      text_sizes[s.name.substr(kText.size())] = s.size;
      text_of_section[i] = s.name.substr(kText.size());
    }
  }
  std::vector<CubinFunction> functions;
  for (const Section& symtab : sections) {
    if (symtab.type != kSymtab || symtab.link >= sections.size()) continue;
    const Section& strtab = sections[symtab.link];
    if (strtab.size > (256u << 20)) throw LayoutUnknown("a string table larger than 256 MiB");
    const std::string names = file.bytes(strtab.offset, strtab.size);
    constexpr std::uint64_t kSymbolBytes = 24;
    for (std::uint64_t i = 0; i < symtab.size / kSymbolBytes; ++i) {
      const std::uint64_t at = symtab.offset + i * kSymbolBytes;
      const std::uint32_t name = file.value<std::uint32_t>(at);
      const std::uint16_t section = file.value<std::uint16_t>(at + 6);
      if (name >= names.size()) continue;
      const auto text = text_of_section.find(section);
      if (text == text_of_section.end() || text->second != names.c_str() + name) continue;
      functions.push_back({text->second, text_sizes[text->second], static_cast<std::uint32_t>(i)});
    }
  }
  return functions;
}

}  // namespace

std::vector<CubinFunction> cubin_functions(const std::string& path) {
  const InputFile file(path);
  try {
    return read_cubin_functions(file);
  } catch (const LayoutUnknown& e) {
    throw AuditInputError(path + ": a cubin that cannot be read: " + e.what());
  }
}

std::vector<std::vector<std::uint32_t>> function_batches(
    const std::vector<CubinFunction>& functions, std::uint64_t max_text_bytes,
    std::size_t max_functions) {
  std::vector<std::vector<std::uint32_t>> batches;
  std::uint64_t text = 0;
  for (const CubinFunction& f : functions) {
    const bool full =
        !batches.empty() && !batches.back().empty() &&
        (text + f.text_bytes > max_text_bytes || batches.back().size() >= max_functions);
    if (batches.empty() || full) {
      batches.emplace_back();
      text = 0;
    }
    batches.back().push_back(f.symbol_index);
    text += f.text_bytes;
  }
  return batches;
}

}  // namespace fusioncheck::audit
