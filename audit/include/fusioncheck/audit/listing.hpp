#pragma once
// Parser for the text that `cuobjdump -sass -ptx FILE` prints: a sequence of sections
// ("Fatbin elf code:" = SASS, "Fatbin ptx code:" = PTX), each with an "arch = sm_XX"
// header, holding functions ("Function : <mangled>" in SASS, ".entry" / ".func" in PTX).
// A standalone .cubin prints SASS only, from "code for sm_XX" on, with no section header.
// The parser is fed line by line so that a large binary never has to sit in memory whole.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fusioncheck/audit/sync_classes.hpp"

namespace fusioncheck::audit {

// The code of one function for one architecture from one source.
struct FunctionCode {
  std::string mangled;
  std::string arch;  // "sm_90", "sm_90a", "sm_120", ... as cuobjdump names it
  CodeSource source = CodeSource::kSass;
  bool is_entry = true;  // PTX tells kernels (.entry) from device functions (.func); SASS does not
  int instructions = 0;  // every instruction, padding included
  int body_instructions = 0;  // without NOP / EXIT / BRA / RET padding and exit sequence
  std::map<std::string, int> sync_counts;  // sync class -> number of instructions
};

struct Listing {
  std::vector<FunctionCode> functions;  // in the order cuobjdump printed them
  // Architectures the file has code for that were not read (left out by the selection).
  std::vector<std::string> unread_archs;
};

class ListingParser {
 public:
  void feed_line(std::string_view line);
  // Ends the last function and returns everything parsed. Call once.
  Listing finish();

 private:
  enum class Section { kNone, kSass, kPtx };
  void start_function(std::string mangled, bool is_entry);
  void end_function();
  void feed_sass_line(std::string_view line);
  void feed_ptx_line(std::string_view line);
  void count_instruction(std::string_view instruction);
  void count_ptx_statements(std::string_view line);

  Section section_ = Section::kNone;
  std::string arch_;
  bool in_function_ = false;
  FunctionCode current_;
  // PTX only: the header seen (".entry name(") whose body has not opened yet, and the depth
  // of braces, to know where a function body ends.
  std::string pending_ptx_name_;
  bool pending_ptx_is_entry_ = false;
  int ptx_brace_depth_ = 0;
  bool cta_fence_last_ = false;  // SASS: the last sync instruction was MEMBAR.ALL.CTA
  Listing listing_;
};

Listing parse_listing(std::string_view text);

// "sm_120a" -> 120; used to order architectures. Unknown forms give 0.
int arch_number(std::string_view arch);

}  // namespace fusioncheck::audit
