#pragma once
// Shared helpers of the audit tests: fixture files and lookups in listings and reports.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fusioncheck/audit/audit.hpp"
#include "fusioncheck/audit/listing.hpp"

namespace fusioncheck::audit::test {

// FC_AUDIT_FIXTURE_DIR is set by CMake to property_tests/audit/fixtures.
inline std::string read_fixture(const std::string& name) {
  const std::string path = std::string(FC_AUDIT_FIXTURE_DIR) + "/" + name;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot read fixture " << path;
    return {};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline const FunctionCode* find_code(const Listing& listing, const std::string& mangled,
                                     const std::string& arch, CodeSource source) {
  for (const auto& code : listing.functions)
    if (code.mangled == mangled && code.arch == arch && code.source == source) return &code;
  return nullptr;
}

// A finding reduced to what the tests compare: "kind arch SOURCE kernel".
inline std::string finding_key(const Finding& finding) {
  return std::string(finding_kind_name(finding.kind)) + " " + finding.arch + " " +
         std::string(source_name(finding.source)) + " " + finding.kernel;
}

inline std::vector<std::string> finding_keys(const FileReport& report) {
  std::vector<std::string> keys;
  for (const auto& finding : report.findings) keys.push_back(finding_key(finding));
  return keys;
}

}  // namespace fusioncheck::audit::test
