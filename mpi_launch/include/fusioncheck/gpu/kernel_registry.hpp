#pragma once
// The kernels a driver of the GPU suite can run, by the name a user types (--kernel,
// --compare). Plain data: the command line (cli/, or another project's driver) reads the
// choices, their help and their errors from here, so that adding a kernel is one add().
#include <functional>
#include <string>
#include <vector>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"

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
  // The patched copies / mutants a --mutant may name for this family without a GPU (empty: the
  // family checks its mutants on the GPU, as ours does); used to refuse a bad --mutant before MPI
  // starts. Never called for Mutant::none (no mutant: every family runs that).
  std::function<void(protocol::Mutant)> check_mutant;  // may be empty; throws BadInput
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

 private:
  std::vector<KernelFamily> families_;
};

}  // namespace fusioncheck::gpu
