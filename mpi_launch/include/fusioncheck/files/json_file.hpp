#pragma once
// The one way the project reads a small JSON input (a replay file, a ledger of known
// findings): a regular file of bounded size, parsed whole with a bound on nesting, so that a
// crafted file is refused with a reason instead of exhausting the stack or the memory.
// Header-only, no exceptions: each layer turns the reason into its own error.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

namespace fusioncheck::files {

// Nesting deeper than this is no input the project writes (a replay file nests 4 deep).
inline constexpr int kMaxJsonDepth = 32;

// Reads `path` into `text`: a regular file of at most max_bytes. Returns "" on success, else
// why not.
inline std::string read_small_file(const std::string& path, std::uintmax_t max_bytes,
                                   std::string& text) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error) return error.message();
  if (!std::filesystem::is_regular_file(status)) return "not a regular file";
  const auto bytes = std::filesystem::file_size(path, error);
  if (error) return error.message();
  if (bytes > max_bytes)
    return std::to_string(bytes) + " bytes; at most " + std::to_string(max_bytes) + " are read";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open";
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return "read error";
  return "";
}

// Parses `text` as one JSON document (nothing after it) nested at most kMaxJsonDepth deep.
// Returns "" on success, else why not (the parser's words, or the depth).
inline std::string parse_json(const std::string& text, nlohmann::json& out) {
  bool too_deep = false;
  // The callback sees each value's depth as it is read, so a deep file stops there.
  const nlohmann::json::parser_callback_t bound =
      [&too_deep](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxJsonDepth) {
          too_deep = true;
          throw std::length_error("nested too deep");
        }
        return true;
      };
  try {
    out = nlohmann::json::parse(text, bound);
  } catch (const std::length_error&) {
    return "nested more than " + std::to_string(kMaxJsonDepth) + " deep";
  } catch (const nlohmann::json::exception& e) {
    return std::string("not JSON: ") + e.what();
  }
  if (too_deep) return "nested more than " + std::to_string(kMaxJsonDepth) + " deep";
  return "";
}

// A JSON value quoted in an error message: its text, cut to `limit` characters. A value nested
// deeper than the parser allows never reaches here.
inline std::string quote_json(const nlohmann::json& value, std::size_t limit = 80) {
  std::string text = value.dump();
  if (text.size() > limit) text = text.substr(0, limit) + "...";
  return text;
}

}  // namespace fusioncheck::files
