#include "fusioncheck/audit/cuobjdump.hpp"

#include <unistd.h>

#include <cxxabi.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <map>
#include <set>
#include <memory>
#include <regex>
#include <string_view>
#include <utility>
#include <vector>

#include "fusioncheck/audit/device_code.hpp"
#include "fusioncheck/audit/process.hpp"

namespace fusioncheck::audit {
namespace {

bool is_executable_file(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

std::string first_line(std::string_view text) {
  const auto start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "(no message)";
  text.remove_prefix(start);
  return std::string(text.substr(0, text.find('\n')));
}

}  // namespace

std::optional<std::string> find_cuobjdump() {
  if (const char* from_env = std::getenv("CUOBJDUMP"); from_env != nullptr && *from_env != '\0') {
    if (is_executable_file(from_env)) return std::string(from_env);
    return std::nullopt;  // an explicit choice that does not work must not be silently replaced
  }
  if (auto on_path = find_on_path("cuobjdump")) return on_path;
#if defined(FUSIONCHECK_CUOBJDUMP_PATH)
  if (is_executable_file(FUSIONCHECK_CUOBJDUMP_PATH))
    return std::string(FUSIONCHECK_CUOBJDUMP_PATH);
#endif
  if (is_executable_file("/usr/local/cuda/bin/cuobjdump")) return "/usr/local/cuda/bin/cuobjdump";
  return std::nullopt;
}

bool is_arch_selector(const std::string& arch) {
  static const std::regex pattern("sm_[0-9]{2,4}[af+]?");
  return std::regex_match(arch, pattern);
}

bool arch_selected(const ArchSelection& selection, std::string_view arch) {
  if (selection.empty()) return true;
  const int number = arch_number(arch);
  for (const std::string& item : selection) {
    if (item.back() == '+' ? number >= arch_number(item) : item == arch) return true;
    const bool plain = !item.empty() && std::isdigit(static_cast<unsigned char>(item.back()));
    if (plain && arch_number(item) == number) return true;  // sm_120 selects sm_120a, sm_120f
  }
  return false;
}

std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : mangled;  // C names stay as they are
}

bool function_selected(const DumpOptions& options, const std::string& mangled) {
  if (!options.kernels) return true;
  return options.kernels->search(mangled) || options.kernels->search(demangle(mangled));
}

bool arch_number_selected(const ArchSelection& selection, int number) {
  if (selection.empty()) return true;
  for (const std::string& item : selection)
    if (item.back() == '+' ? number >= arch_number(item) : number == arch_number(item)) return true;
  return false;
}

namespace {

// A failed or overlong cuobjdump run over (a piece of) `file` as the audit's error.
void check_run(const ChildResult& run, const std::string& file,
               std::chrono::milliseconds time_limit) {
  if (run.timed_out)
    throw AuditInputError("cuobjdump did not finish on " + file + " within " +
                          std::to_string(time_limit.count() / 1000) + " s (see --timeout)");
  if (run.exit_status == 0) return;
  if (run.stderr_text.find("does not contain device code") != std::string::npos)
    throw NoDeviceCodeError(file + ": not a CUDA binary (it holds no device code)");
  if (run.stderr_text.find("nvdisasm") != std::string::npos)
    throw AuditInputError(
        "cuobjdump needs nvdisasm to show SASS and cannot find it; install it with: " +
        std::string(kCuobjdumpInstallHint));
  throw AuditInputError("cuobjdump failed on " + file + ": " + first_line(run.stderr_text));
}

// nvdisasm beside cuobjdump (the toolkit's bin), else on PATH, else where the build found it
// (its own wheel's folder: pip puts cuobjdump and nvdisasm in folders of their own).
std::string find_nvdisasm(const std::string& cuobjdump) {
  const auto beside = std::filesystem::path(cuobjdump).parent_path() / "nvdisasm";
  if (is_executable_file(beside.string())) return beside.string();
  if (auto on_path = find_on_path("nvdisasm")) return *on_path;
#if defined(FUSIONCHECK_NVDISASM_PATH)
  if (is_executable_file(FUSIONCHECK_NVDISASM_PATH)) return std::string(FUSIONCHECK_NVDISASM_PATH);
#endif
  throw AuditInputError("nvdisasm not found beside " + cuobjdump +
                        " nor on PATH; install it with: " + std::string(kCuobjdumpInstallHint));
}

// `nvdisasm -c` output fed as cuobjdump prints a cubin: a ".section .text.<name>," line
// starts function <name>; instruction lines are alike; directives and labels are skipped.
void feed_nvdisasm_line(ListingParser& parser, std::string_view line) {
  const auto start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos) return;
  line.remove_prefix(start);
  constexpr std::string_view kSection = ".section";
  if (line.starts_with(kSection)) {
    std::string_view name = line.substr(kSection.size());
    name.remove_prefix(std::min(name.find_first_not_of(" \t"), name.size()));
    name = name.substr(0, name.find(','));
    if (name.starts_with(".text.")) parser.feed_line("Function : " + std::string(name.substr(6)));
    return;
  }
  if (line.starts_with("/*")) parser.feed_line(line);
}

// A folder of our own under the temporary folder, removed with everything in it.
class TempFolder {
 public:
  TempFolder() {
    std::error_code error;
    std::filesystem::path base = std::filesystem::temp_directory_path(error);
    if (error) base = "/tmp";
    std::string name = (base / "fusioncheck-audit-XXXXXX").string();
    std::vector<char> buffer(name.begin(), name.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr)
      throw AuditInputError("cannot create a temporary folder in " + base.string() + ": " +
                            std::strerror(errno));
    path_ = buffer.data();
  }
  ~TempFolder() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The pieces of one file, disassembled by a pool of cuobjdump runs; each run parses into its
// own Listing, joined in file order at the end.
class PieceDump {
 public:
  PieceDump(const std::string& cuobjdump, const std::string& file, const DumpOptions& options)
      : cuobjdump_(cuobjdump), file_(file), options_(options),
        pool_(options.parallel, options.time_limit) {}

  Listing run(const DeviceCodeLayout& layout, const DumpProgress& progress) {
    for (std::size_t i = 0; i < layout.entries.size(); ++i) {
      const FatbinEntry& entry = layout.entries[i];
      if (!arch_number_selected(options_.archs, entry.arch)) {
        unread_.insert("sm_" + std::to_string(entry.arch) + entry.arch_suffix);
        continue;
      }
      if (entry.is_ptx) add_ptx(i, entry);
      else add_cubin_entry(i, entry);
    }
    pool_.run(progress);
    Listing listing;
    for (auto& [key, part] : parts_)
      for (auto& function : part.functions) listing.functions.push_back(std::move(function));
    listing.unread_archs.assign(unread_.begin(), unread_.end());
    return listing;
  }

 private:
  using Key = std::pair<std::size_t, std::size_t>;  // entry, batch: the order of the file
  using LineFeed = void (*)(ListingParser&, std::string_view);

  static void feed_cuobjdump_line(ListingParser& parser, std::string_view line) {
    parser.feed_line(line);
  }

  // A task whose stdout `feed` hands to `parser`, parsed into parts_[key]; `then` runs after
  // a successful run.
  ChildTask parsing_task(Key key, std::vector<std::string> argv,
                         std::shared_ptr<ListingParser> parser, LineFeed feed,
                         std::function<void()> then) {
    ChildTask task;
    task.argv = std::move(argv);
    task.on_line = [parser, feed](std::string_view line) { feed(*parser, line); };
    task.on_exit = [this, parser, key, then = std::move(then)](const ChildResult& result) {
      check_run(result, file_, options_.time_limit);
      parts_[key] = parser->finish();
      if (then) then();
    };
    return task;
  }

  std::string entry_fatbin(std::size_t index) const {
    return (folder_.path() / ("e" + std::to_string(index) + ".fatbin")).string();
  }

  void add_ptx(std::size_t index, const FatbinEntry& entry) {
    const std::string piece = entry_fatbin(index);
    ChildTask task =
        parsing_task({index, 0}, {cuobjdump_, "-ptx", piece}, std::make_shared<ListingParser>(),
                     feed_cuobjdump_line, [piece] { std::filesystem::remove(piece); });
    task.prepare = [this, entry, piece] { write_single_entry_fatbin(file_, entry, piece); };
    pool_.add(std::move(task));
  }

  // Extracts the entry's cubin (cuobjdump decompresses it), then adds its batches.
  void add_cubin_entry(std::size_t index, const FatbinEntry& entry) {
    const std::string piece = entry_fatbin(index);
    const std::filesystem::path out = folder_.path() / ("e" + std::to_string(index));
    ChildTask task;
    task.argv = {cuobjdump_, "-xelf", "all", piece};
    task.working_dir = out.string();
    task.prepare = [this, entry, piece, out] {
      std::filesystem::create_directory(out);
      write_single_entry_fatbin(file_, entry, piece);
    };
    const std::string arch = "sm_" + std::to_string(entry.arch) + entry.arch_suffix;
    task.on_exit = [this, index, piece, out, arch](const ChildResult& result) {
      check_run(result, file_, options_.time_limit);
      std::filesystem::remove(piece);
      for (const auto& item : std::filesystem::directory_iterator(out))
        if (item.path().extension() == ".cubin") add_batches(index, item.path().string(), arch);
    };
    pool_.add(std::move(task));
  }

  // One `nvdisasm -c -fun` run per batch of the cubin's functions, its output read as
  // cuobjdump prints a cubin; the last run to end removes the cubin.
  void add_batches(std::size_t index, const std::string& cubin, const std::string& arch) {
    std::vector<CubinFunction> functions = cubin_functions(cubin);
    std::erase_if(functions,
                  [this](const CubinFunction& f) { return !function_selected(options_, f.name); });
    const auto batches = function_batches(functions, options_.batch_text_bytes, kMaxBatchFunctions);
    auto left = std::make_shared<std::size_t>(batches.size());
    if (batches.empty()) std::filesystem::remove(cubin);
    for (const auto& symbols : batches) {
      std::string list;
      for (const auto symbol : symbols) list += (list.empty() ? "" : ",") + std::to_string(symbol);
      auto parser = std::make_shared<ListingParser>();
      parser->feed_line("code for " + arch);
      pool_.add(parsing_task({index, next_batch_++}, {nvdisasm_, "-c", "-fun", list, cubin}, parser,
                             feed_nvdisasm_line, [left, cubin] {
                               if (--*left == 0) std::filesystem::remove(cubin);
                             }));
    }
  }

  static constexpr std::size_t kMaxBatchFunctions = 4096;  // a command line of < 40 KB
  const std::string& cuobjdump_;
  const std::string nvdisasm_ = find_nvdisasm(cuobjdump_);
  const std::string& file_;
  const DumpOptions& options_;
  TempFolder folder_;
  ChildPool pool_;
  std::map<Key, Listing> parts_;
  std::set<std::string> unread_;  // architectures of the entries the selection leaves out
  std::size_t next_batch_ = 0;
};

// Whether a standalone cubin has a function --kernels keeps (read from its symbols, no tool).
bool cubin_has_selected_function(const std::string& file, const DumpOptions& options) {
  for (const CubinFunction& f : cubin_functions(file))
    if (function_selected(options, f.name)) return true;
  return false;
}

Listing dump_whole(const std::string& cuobjdump, const std::string& file,
                   const DumpOptions& options, const DumpProgress& progress) {
  ListingParser parser;
  const ChildResult run = run_bounded(
      {cuobjdump, "-sass", "-ptx", file},
      [&parser](std::string_view line) { parser.feed_line(line); }, options.time_limit, progress);
  check_run(run, file, options.time_limit);
  return parser.finish();
}

}  // namespace

Listing dump_listing(const std::string& cuobjdump, const std::string& file,
                     const DumpOptions& options, const DumpProgress& progress) {
  std::error_code error;
  if (!std::filesystem::exists(file, error)) throw AuditInputError(file + ": no such file");
  if (!std::filesystem::is_regular_file(file, error) || ::access(file.c_str(), R_OK) != 0)
    throw AuditInputError(file + ": not a readable regular file");
  Listing all;
  std::optional<DeviceCodeLayout> layout;
  if (options.in_pieces) {
    try {
      layout = read_device_code_layout(file);
    } catch (const LayoutUnknown&) {
      // an ar archive or a form this reader does not know: cuobjdump reads it whole
    }
  }
  if (layout && layout->kind != ContainerKind::kCubin && layout->entries.empty())
    throw NoDeviceCodeError(file + ": not a CUDA binary (it holds no device code)");
  if (layout && layout->kind == ContainerKind::kCubin) {  // small: read whole, if at all
    layout.reset();
    if (options.kernels && !cubin_has_selected_function(file, options))
      throw NoDeviceCodeError(file + ": " + std::string(kNoKernelMatches));
  }
  if (layout) all = PieceDump(cuobjdump, file, options).run(*layout, progress);
  else all = dump_whole(cuobjdump, file, options, progress);
  const bool had_code = !all.functions.empty();
  Listing listing;
  std::set<std::string> unread(all.unread_archs.begin(), all.unread_archs.end());
  bool any_selected_name = false;
  for (auto& function : all.functions) {
    if (!function_selected(options, function.mangled)) continue;
    any_selected_name = true;
    if (arch_selected(options.archs, function.arch))
      listing.functions.push_back(std::move(function));
    else unread.insert(function.arch);
  }
  if (options.kernels && !any_selected_name && (had_code || layout))
    throw NoDeviceCodeError(file + ": " + std::string(kNoKernelMatches));
  listing.unread_archs.assign(unread.begin(), unread.end());
  std::sort(listing.unread_archs.begin(), listing.unread_archs.end(),
            [](const std::string& a, const std::string& b) {
              return std::pair(arch_number(a), a) < std::pair(arch_number(b), b);
            });
  if (listing.functions.empty() && !options.archs.empty() && (had_code || layout)) {
    std::string names;
    for (const auto& arch : options.archs) names += (names.empty() ? "" : ", ") + arch;
    throw NoDeviceCodeError(file + ": no code for " + names + " (--arch)");
  }
  if (listing.functions.empty())
    throw NoDeviceCodeError(file +
                            ": not a CUDA binary (cuobjdump found no device functions in it)");
  return listing;
}

}  // namespace fusioncheck::audit
