#pragma once
// The kernels a driver of the GPU suite can run, by the name a user types (--kernel,
// --compare). Plain data: the command line (cli/, or another project's driver) reads the
// choices, their help and their errors from here, so that adding a kernel is one add().
#include <functional>
#include <string>
#include <vector>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "fusioncheck/gpu/mutant_id.hpp"

namespace fusioncheck::gpu {

// One kernel family the suite can drive: registered once; --kernel/--compare choices, their
// help and their errors come from the registry.
struct KernelFamily {
  std::string name;  // the --kernel value: lowercase letters, digits, '-' (e.g. "my-kernel");
                     // a family whose name ends in '@' takes a suffix ("flashinfer@" takes
                     // "flashinfer@0.6.11")
  std::string description;  // one line, for --help and errors
  // Makes the choice for the full --kernel value; throws BadInput (errors.hpp) with the reason
  // when this build cannot run it (adapter not built, release not built, ...).
  std::function<KernelChoice(const std::string& value)> choose;
  // Its negative controls, built here or not: catalogue mutants it builds (what and real_world
  // may be left empty: add() fills them from the catalogue) and patched copies of its own (ids
  // the catalogue does not have, each with what and real_world). --mutant and the kill table's
  // --mutants take these ids; `fusioncheck mutants` lists them per family.
  std::vector<FamilyMutant> mutants;
  // Whether this build can run one of them, known without a GPU (a copy not compiled here, say):
  // refuses a --mutant before MPI starts. Never called for "none". May be empty (then the
  // kernel is asked on the GPU); throws BadInput with why.
  std::function<void(const MutantId&)> check_mutant;
  bool comparable = false;  // may be timed beside ours with `gpu bench --compare`
  // The synchronisation protocol its kernels keep, whose invariants the suite checks
  // (docs/design.md, docs/protocols.md), as `gpu kernels` lists it: "lamport", or another one
  // whose checks the family's kernels return (KernelUnderTest::protocol_checks).
  std::string protocol = "lamport";
};

class KernelRegistry {
 public:
  void add(KernelFamily family);  // throws std::invalid_argument: malformed or duplicate name
  const KernelFamily* find(const std::string& value) const;  // exact name, or a '@' family's prefix
  KernelChoice choose(const std::string& value) const;  // throws BadInput naming the known families
  std::vector<std::string> names() const;               // in registration order
  std::string help() const;  // "ours (…), flashinfer (…), …" for --kernel's help
  const std::vector<KernelFamily>& families() const { return families_; }
  // A --mutant id of the family that `kernel_value` chooses: "none", or one of its mutants and
  // built here (check_mutant). Throws BadInput naming the family's ids.
  MutantId mutant_of(const std::string& kernel_value, const std::string& id) const;

 private:
  std::vector<KernelFamily> families_;
};

}  // namespace fusioncheck::gpu
