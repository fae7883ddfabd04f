// The kernel registry: names checked once at registration, so that lookups and the help and
// error texts built from them never meet a malformed or ambiguous name.
#include "fusioncheck/gpu/kernel_registry.hpp"

#include <stdexcept>
#include <utility>

namespace fusioncheck::gpu {
namespace {

bool takes_suffix(const std::string& name) { return !name.empty() && name.back() == '@'; }

// Lowercase letters, digits and inner '-', optionally one trailing '@': a '@' elsewhere would
// make one value match two families.
std::string malformed(const std::string& name) {
  const std::string stem = takes_suffix(name) ? name.substr(0, name.size() - 1) : name;
  if (stem.empty()) return "an empty name";
  if (stem.front() == '-' || stem.back() == '-') return "a name that starts or ends in '-'";
  for (char ch : stem)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-'))
      return "a name with a character other than a-z, 0-9, '-' (and a trailing '@')";
  return "";
}

// How a family is written for users: a '@' family with a placeholder for its suffix.
std::string shown(const KernelFamily& family) {
  return takes_suffix(family.name) ? family.name + "..." : family.name;
}

}  // namespace

void KernelRegistry::add(KernelFamily family) {
  if (const std::string why = malformed(family.name); !why.empty())
    throw std::invalid_argument("kernel registry: '" + family.name + "' is " + why);
  if (!family.choose)
    throw std::invalid_argument("kernel registry: '" + family.name + "' has no choose function");
  if (family.description.find('\n') != std::string::npos)
    throw std::invalid_argument("kernel registry: '" + family.name +
                                "': the description must be one line");
  for (const KernelFamily& have : families_)
    if (have.name == family.name)
      throw std::invalid_argument("kernel registry: '" + family.name + "' is registered twice");
  families_.push_back(std::move(family));
}

const KernelFamily* KernelRegistry::find(const std::string& value) const {
  for (const KernelFamily& family : families_) {
    if (family.name == value) return &family;
    if (takes_suffix(family.name) && value.starts_with(family.name)) return &family;
  }
  return nullptr;
}

KernelChoice KernelRegistry::choose(const std::string& value) const {
  const KernelFamily* family = find(value);
  if (family == nullptr) {
    std::string known;
    for (const KernelFamily& f : families_) known += (known.empty() ? "" : ", ") + shown(f);
    throw BadInput("'" + value + "' is not a registered kernel (" +
                   (known.empty() ? "none" : known) + ")");
  }
  return family->choose(value);
}

std::vector<std::string> KernelRegistry::names() const {
  std::vector<std::string> names;
  for (const KernelFamily& family : families_) names.push_back(family.name);
  return names;
}

std::string KernelRegistry::help() const {
  std::string text;
  for (const KernelFamily& family : families_)
    text += (text.empty() ? "" : ", ") + shown(family) + " (" + family.description + ")";
  return text;
}

}  // namespace fusioncheck::gpu
