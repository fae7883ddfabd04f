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

// A mutant id: lowercase letters, digits, '-' and '.' (release numbers), not "none".
bool well_formed_mutant_id(const std::string& id) {
  if (id.empty() || id == "none" || id.front() == '-' || id.back() == '-') return false;
  for (char ch : id)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))
      return false;
  return true;
}

// Checks a family's negative controls and fills the catalogue's words into its catalogue
// entries. `others`: the families registered before it (an id of a family's own is one
// family's: two meanings under one id would make `fusioncheck mutants` ambiguous).
void check_family_mutants(KernelFamily& family, const std::vector<KernelFamily>& others) {
  const std::string where = "kernel registry: '" + family.name + "': mutant '";
  for (std::size_t i = 0; i < family.mutants.size(); ++i) {
    FamilyMutant& m = family.mutants[i];
    if (!well_formed_mutant_id(m.id))
      throw std::invalid_argument(where + m.id +
                                  "' is not an id (a-z, 0-9, '-', '.'; not \"none\")");
    for (std::size_t j = 0; j < i; ++j)
      if (family.mutants[j].id == m.id)
        throw std::invalid_argument(where + m.id + "' is registered twice");
    if (const auto in_catalogue = MutantId(m.id).in_catalogue()) {
      const FamilyMutant words = catalogue_entry(*in_catalogue);
      if (m.what.empty()) m.what = words.what;
      if (m.real_world.empty()) m.real_world = words.real_world;
      continue;
    }
    if (m.what.empty() || m.real_world.empty())
      throw std::invalid_argument(where + m.id +
                                  "' is not in the catalogue: it needs what and real_world");
    for (const KernelFamily& other : others)
      for (const FamilyMutant& theirs : other.mutants)
        if (theirs.id == m.id && theirs.what != m.what)
          throw std::invalid_argument(where + m.id + "' is also '" + other.name +
                                      "''s, with another meaning");
  }
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
  check_family_mutants(family, families_);
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

MutantId KernelRegistry::mutant_of(const std::string& kernel_value, const std::string& id) const {
  const MutantId mutant(id);
  if (mutant.none()) return mutant;
  const KernelFamily* family = find(kernel_value);
  if (family == nullptr) return mutant;  // choose() reports the unknown kernel
  bool registered = false;
  std::string ids;
  for (const FamilyMutant& m : family->mutants) {
    registered = registered || m.id == id;
    ids += (ids.empty() ? "" : ", ") + m.id;
  }
  if (!registered)
    throw BadInput(ids.empty() ? shown(*family) + " has no negative controls"
                               : "not a negative control of " + shown(*family) + " (its: " + ids +
                                     "; fusioncheck mutants --kernel " + shown(*family) + ")");
  if (family->check_mutant) family->check_mutant(mutant);
  return mutant;
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
