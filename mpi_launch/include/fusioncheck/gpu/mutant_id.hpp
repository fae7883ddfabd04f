#pragma once
// The negative controls of the GPU suite. A kernel family registers its own
// (KernelFamily::mutants): mutants of the shared catalogue (protocol/mutants.hpp: our kernels'
// and the sim's) that it also builds, and patched copies of its own, whose ids the catalogue
// does not know. The suite carries either kind as a MutantId and never names one.
#include <compare>
#include <optional>
#include <string>
#include <utility>

#include "fusioncheck/protocol/mutants.hpp"

namespace fusioncheck::gpu {

class MutantId {
 public:
  MutantId() = default;  // "none": the kernel as it is
  // A mutant of the catalogue (implicit: the catalogue's enumerators read as ids).
  MutantId(protocol::Mutant m)
      : id_(protocol::mutant_id(m)) {}  // NOLINT(google-explicit-constructor)
  // Any id, as a family registers it or a user types it.
  explicit MutantId(std::string id) : id_(std::move(id)) {}

  const std::string& id() const { return id_; }
  bool none() const { return id_ == "none"; }
  // The catalogue's mutant of this id, if the catalogue has it.
  std::optional<protocol::Mutant> in_catalogue() const { return protocol::parse_mutant(id_); }

  friend bool operator==(const MutantId&, const MutantId&) = default;
  friend std::strong_ordering operator<=>(const MutantId&, const MutantId&) = default;

 private:
  std::string id_ = "none";
};

// One negative control a family registers.
struct FamilyMutant {
  std::string id;
  std::string what;        // what the broken kernel does
  std::string real_world;  // the report or fix behind it
};

// A catalogue mutant as a family's entry, with the catalogue's words.
inline FamilyMutant catalogue_entry(protocol::Mutant m) {
  const protocol::MutantInfo* info = protocol::find_mutant_info(m);
  if (info == nullptr) return {std::string(protocol::mutant_id(m)), "", ""};
  return {std::string(info->id), std::string(info->what), std::string(info->real_world)};
}

}  // namespace fusioncheck::gpu
