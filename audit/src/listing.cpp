#include "fusioncheck/audit/listing.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace fusioncheck::audit {
namespace {

bool is_hex_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c));
  });
}

// A SASS instruction line is "/*0040*/  <instruction> ;  /* 0x<encoding> */". The encoding
// continuation line starts with "/* 0x" and has no address. Returns the instruction text
// without the address, the encoding and the trailing ';', or an empty view.
std::string_view sass_instruction_text(std::string_view line) {
  line = trim(line);
  if (!line.starts_with("/*")) return {};
  const auto close = line.find("*/");
  if (close == std::string_view::npos || !is_hex_digits(line.substr(2, close - 2))) return {};
  std::string_view rest = line.substr(close + 2);
  const auto encoding = rest.find("/*");
  if (encoding != std::string_view::npos) rest = rest.substr(0, encoding);
  rest = trim(rest);
  while (!rest.empty() && (rest.back() == ';' || rest.back() == ' ')) rest.remove_suffix(1);
  return rest;
}

// Name of the function a PTX header line declares, e.g.
//   ".visible .entry _Z3fooPf("  or  ".func (.param .b32 func_retval0) _Z3barv()".
std::string ptx_function_name(std::string_view line, std::string_view keyword) {
  auto rest = trim(line.substr(line.find(keyword) + keyword.size()));
  if (rest.starts_with("(")) {  // return-value parameter list of a .func
    const auto close = rest.find(')');
    if (close == std::string_view::npos) return {};
    rest = trim(rest.substr(close + 1));
  }
  const auto end = rest.find_first_of("( \t;");
  return std::string(rest.substr(0, end));
}

// Whether `line` declares a PTX function with `keyword` (".entry" / ".func") as a word.
bool declares(std::string_view line, std::string_view keyword) {
  const auto at = line.find(keyword);
  if (at == std::string_view::npos) return false;
  const bool starts_word = at == 0 || line[at - 1] == ' ' || line[at - 1] == '\t';
  const auto after = at + keyword.size();
  const bool ends_word =
      after == line.size() || line[after] == ' ' || line[after] == '\t' || line[after] == '(';
  return starts_word && ends_word && !line.starts_with("//");
}

}  // namespace

int arch_number(std::string_view arch) {
  const auto underscore = arch.find('_');
  if (underscore == std::string_view::npos) return 0;
  int number = 0;
  for (char c : arch.substr(underscore + 1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    number = number * 10 + (c - '0');
  }
  return number;
}

void ListingParser::start_function(std::string mangled, bool is_entry) {
  end_function();
  current_ = FunctionCode{};
  current_.mangled = std::move(mangled);
  current_.arch = arch_;
  current_.source = section_ == Section::kPtx ? CodeSource::kPtx : CodeSource::kSass;
  current_.is_entry = is_entry;
  cta_fence_last_ = false;
  in_function_ = true;
}

void ListingParser::end_function() {
  if (in_function_ && !current_.mangled.empty()) listing_.functions.push_back(std::move(current_));
  in_function_ = false;
}

void ListingParser::count_instruction(std::string_view instruction) {
  ++current_.instructions;
  const bool sass = current_.source == CodeSource::kSass;
  if (sass ? is_body_instruction_sass(instruction) : is_body_instruction_ptx(instruction))
    ++current_.body_instructions;
  const auto sync =
      sass ? classify_sass_instruction(instruction) : classify_ptx_instruction(instruction);
  if (!sync) return;
  if (sass && cta_fence_last_ && is_async_release_reduction_sass(instruction) &&
      *sync != "atomic.cta") {
    // MEMBAR.ALL.CTA; REDGR.<scope>: a release at <scope> (see is_async_release_reduction_sass)
    if (--current_.sync_counts["fence.cta"] == 0) current_.sync_counts.erase("fence.cta");
    ++current_.sync_counts["fence." + sync->substr(sync->find('.') + 1)];
  }
  cta_fence_last_ = sass && *sync == "fence.cta";
  ++current_.sync_counts[*sync];
}

void ListingParser::feed_line(std::string_view raw_line) {
  const std::string_view line = trim(raw_line);
  if (line.starts_with("Fatbin elf code") || line.starts_with("Fatbin ptx code")) {
    end_function();
    section_ = line.starts_with("Fatbin elf") ? Section::kSass : Section::kPtx;
    arch_.clear();
    pending_ptx_name_.clear();
    ptx_brace_depth_ = 0;
    return;
  }
  // A standalone cubin has no fatbin header: its SASS starts at "code for sm_XX".
  if (section_ == Section::kNone && line.starts_with("code for ")) {
    section_ = Section::kSass;
    arch_ = std::string(trim(line.substr(9)));
    return;
  }
  if (line.starts_with("arch = ") && !in_function_) {
    arch_ = std::string(trim(line.substr(7)));
    return;
  }
  if (section_ == Section::kSass) feed_sass_line(line);
  if (section_ == Section::kPtx) feed_ptx_line(line);
}

void ListingParser::feed_sass_line(std::string_view line) {
  if (line.starts_with("Function :")) {
    start_function(std::string(trim(line.substr(10))), /*is_entry=*/true);
    return;
  }
  if (line.starts_with("code for ") && arch_.empty()) {
    arch_ = std::string(trim(line.substr(9)));
    return;
  }
  if (!in_function_) return;
  const auto instruction = sass_instruction_text(line);
  if (!instruction.empty()) count_instruction(instruction);
}

void ListingParser::feed_ptx_line(std::string_view line) {
  if (line.empty() || line.starts_with("//")) return;
  if (ptx_brace_depth_ == 0) {
    if (line.starts_with(".target ") && arch_.empty()) {
      arch_ = std::string(trim(line.substr(8)));
      const auto comma = arch_.find(',');  // ".target sm_90, debug"
      if (comma != std::string::npos) arch_ = std::string(trim(arch_.substr(0, comma)));
    } else if (declares(line, ".entry")) {
      pending_ptx_name_ = ptx_function_name(line, ".entry");
      pending_ptx_is_entry_ = true;
    } else if (declares(line, ".func")) {
      pending_ptx_name_ = ptx_function_name(line, ".func");
      pending_ptx_is_entry_ = false;
    }
  }
  const auto opens = std::count(line.begin(), line.end(), '{');
  const auto closes = std::count(line.begin(), line.end(), '}');
  if (ptx_brace_depth_ == 0 && opens > closes) {
    if (!pending_ptx_name_.empty())
      start_function(std::move(pending_ptx_name_), pending_ptx_is_entry_);
    pending_ptx_name_.clear();
  } else if (ptx_brace_depth_ == 0 && line.ends_with(";")) {
    pending_ptx_name_.clear();  // a prototype or a variable, no body follows
  } else if (ptx_brace_depth_ > 0 && in_function_) {
    count_ptx_statements(line);
  }
  ptx_brace_depth_ = std::max<int>(0, ptx_brace_depth_ + static_cast<int>(opens - closes));
  if (ptx_brace_depth_ == 0 && in_function_ && closes > 0) end_function();
}

// A line may hold several statements ("{ .reg .pred p; mbarrier.try_wait...; selp...; }", as
// inline asm is often written): each is counted; braces, directives and labels are not.
void ListingParser::count_ptx_statements(std::string_view line) {
  while (!line.empty()) {
    const auto semicolon = line.find(';');
    std::string_view statement = trim(line.substr(0, semicolon));
    line = semicolon == std::string_view::npos ? std::string_view() : line.substr(semicolon + 1);
    while (!statement.empty() && (statement.front() == '{' || statement.front() == '}'))
      statement = trim(statement.substr(1));
    const auto first_space = statement.find_first_of(" \t");
    const std::string_view first_token = statement.substr(0, first_space);
    if (first_token.ends_with(":") && first_space != std::string_view::npos)
      statement = trim(statement.substr(first_space));  // "LABEL: instruction"
    if (statement.empty() || statement.starts_with(".") || statement.ends_with(":") ||
        statement.starts_with("//"))
      continue;
    count_instruction(statement);
  }
}

Listing ListingParser::finish() {
  end_function();
  return std::move(listing_);
}

Listing parse_listing(std::string_view text) {
  ListingParser parser;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    parser.feed_line(text.substr(0, newline));
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  return parser.finish();
}

}  // namespace fusioncheck::audit
