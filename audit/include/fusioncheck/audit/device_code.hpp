#pragma once
// Where a binary keeps its device code, read without cuobjdump: the ELF sections holding
// fatbins (.nv_fatbin; in an object without one, __nv_relfatbin, as cuobjdump reads them),
// the entries of those fatbins (one cubin or one PTX text for one architecture each), and the
// functions of a cubin (its .text.<name> sections). The audit hands cuobjdump one entry at a
// time (to extract its cubin), then nvdisasm one batch of that cubin's functions: both tools
// hold a whole disassembly in memory (4.4 GB for one 108 MB cubin of NCCL's).
//
// The fatbin layout is NVIDIA's and undocumented. What is read of it is checked (magic
// numbers, sizes inside the file); a layout that does not fit throws LayoutUnknown, and the
// caller falls back to one cuobjdump run over the whole file.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fusioncheck::audit {

struct LayoutUnknown : std::runtime_error {
  explicit LayoutUnknown(const std::string& what) : std::runtime_error(what) {}
};

enum class ContainerKind {
  kHostElf,  // an executable, library or object of the host: fatbins in ELF sections
  kFatbin,   // a fatbin file (nvcc -fatbin)
  kCubin,    // a standalone cubin (ELF of the CUDA machine)
};

struct FatbinEntry {
  bool is_ptx = false;              // else a cubin
  int arch = 0;                     // the number of its sm_XX / compute_XX
  std::string arch_suffix;          // "a" (sm_90a), "f" (sm_120f) or empty
  std::uint64_t fatbin_offset = 0;  // of the enclosing fatbin's header in the file
  std::uint32_t fatbin_header_size = 0;
  std::uint64_t offset = 0;             // of the entry's header in the file
  std::uint64_t size = 0;               // the entry's header and payload
  std::uint64_t uncompressed_size = 0;  // of the payload (as the entry states it)
};

struct DeviceCodeLayout {
  ContainerKind kind = ContainerKind::kHostElf;
  std::vector<FatbinEntry> entries;  // in file order; empty for kCubin
};

// Throws AuditInputError (cuobjdump.hpp) when the file cannot be read, LayoutUnknown when it
// is not an ELF64 or fatbin this reader knows (an ar archive, a damaged file).
DeviceCodeLayout read_device_code_layout(const std::string& path);

// Writes a fatbin holding `entry` alone (its fatbin header and the entry copied as they are,
// compressed or not) to `out`. Throws AuditInputError when it cannot.
void write_single_entry_fatbin(const std::string& path, const FatbinEntry& entry,
                               const std::string& out);

struct CubinFunction {
  std::string name;  // mangled
  std::uint64_t text_bytes = 0;
  std::uint32_t symbol_index = 0;  // as nvdisasm's -fun takes it
};
// The functions of the cubin at `path`: its .text.<name> sections, in symbol-table order.
std::vector<CubinFunction> cubin_functions(const std::string& path);

// The functions' symbol indices in groups for one `nvdisasm -fun` run each: at most
// `max_text_bytes` of code per group (a larger function alone), at most `max_functions`.
std::vector<std::vector<std::uint32_t>> function_batches(
    const std::vector<CubinFunction>& functions, std::uint64_t max_text_bytes,
    std::size_t max_functions);

}  // namespace fusioncheck::audit
