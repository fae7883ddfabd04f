// `fusioncheck mutants`: the negative controls. The catalogue of the shared protocol layer (our
// kernels' and the sim's mutants), and each registered kernel family's: the catalogue mutants it
// builds and the patched copies of its own.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/protocol/mutants.hpp"
#if defined(FUSIONCHECK_HAVE_GPU_COMMAND)
#include "fusioncheck/cli/gpu_main.hpp"
#include "fusioncheck/gpu/kernel_registry.hpp"
#endif

namespace fusioncheck::cli {
namespace {

std::string layers_text(std::uint16_t layers) {
  using namespace protocol;
  std::string out;
  for (auto [bit, name] : {std::pair{kInSim, "sim"},
                           {kInKernel, "kernel"},
                           {kInSimPcie, "sim-pcie"},
                           {kInSimVllm, "sim-vllm"},
                           {kInSimMnnvl, "sim-mnnvl"},
                           {kInSimSglang, "sim-sglang"},
                           {kInSimCeRing, "sim-ce-ring"}})
    if (layers & bit) out += (out.empty() ? "" : "+") + std::string(name);
  return out;
}

// One negative control as listed: its words, where the catalogue builds it, and the families
// (other than ours, whose mutants are the catalogue's "kernel" ones) that register it.
struct Row {
  std::string id, what, real_world, layers;
  std::vector<std::string> families;
};

struct FamilyRows {
  std::string family;
  std::vector<std::string> ids;
};

void add_family_row(std::vector<Row>& rows, const std::string& family, const std::string& id,
                    const std::string& what, const std::string& real_world) {
  for (Row& r : rows)
    if (r.id == id) {
      if (family != "ours") r.families.push_back(family);
      return;
    }
  rows.push_back({id, what, real_world, "", {family}});
}

// Every row, and the ids each family registers (empty without the GPU suite in this build).
std::pair<std::vector<Row>, std::vector<FamilyRows>> collect_rows() {
  std::vector<Row> rows;
  for (const auto& m : protocol::kMutantCatalogue)
    rows.push_back({std::string(m.id),
                    std::string(m.what),
                    std::string(m.real_world),
                    layers_text(m.layers),
                    {}});
  std::vector<FamilyRows> families;
#if defined(FUSIONCHECK_HAVE_GPU_COMMAND)
  const gpu::KernelRegistry registry = builtin_kernels();
  for (const gpu::KernelFamily& f : registry.families()) {
    families.push_back({f.name, {}});
    for (const gpu::FamilyMutant& m : f.mutants) {
      add_family_row(rows, f.name, m.id, m.what, m.real_world);
      families.back().ids.push_back(m.id);
    }
  }
#endif
  return {rows, families};
}

std::string where_text(const Row& r) {
  std::string out = r.layers;
  for (const auto& f : r.families) out += (out.empty() ? "" : "+") + f;
  return out.empty() ? "-" : out;
}

void print_rows(const std::vector<Row>& rows, bool as_json) {
  if (as_json) {
    auto out = nlohmann::json::array();
    for (const Row& r : rows)
      out.push_back({{"id", r.id},
                     {"what", r.what},
                     {"real_world", r.real_world},
                     {"layers", r.layers.empty() ? "-" : r.layers},
                     {"families", r.families}});
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{:<35} {:<28} {:<50} {}\n", "id", "where", "real-world class", "mutant");
  for (const Row& r : rows)
    fmt::print("{:<35} {:<28} {:<50} {}\n", r.id, where_text(r), r.real_world, r.what);
}

// --kernel: the family's negative controls alone, in its order.
std::vector<Row> family_rows(const std::vector<Row>& rows, const std::vector<FamilyRows>& families,
                             const std::string& kernel) {
  std::string known;
  for (const FamilyRows& f : families) {
    known += (known.empty() ? "" : ", ") + f.family;
    if (f.family != kernel) continue;
    std::vector<Row> out;
    for (const std::string& id : f.ids)
      for (const Row& r : rows)
        if (r.id == id) out.push_back(r);
    return out;
  }
  throw UsageError("--kernel " + kernel + ": not a registered kernel family (" +
                   (known.empty() ? "this build has no GPU suite" : known) + ")");
}

}  // namespace

void add_mutants_command(CLI::App& app, int& exit_code) {
  auto as_json = std::make_shared<bool>(false);
  auto kernel = std::make_shared<std::string>();
  auto* sub = app.add_subcommand(
      "mutants", "Print the negative controls: the bug catalogue and each kernel family's own");
  sub->add_flag("--json", *as_json, "Print as JSON");
  sub->add_option("--kernel", *kernel, "Only this kernel family's negative controls");
  sub->callback([as_json, kernel, sub, &exit_code] {
    const auto [rows, families] = collect_rows();
    if (sub->count("--kernel") > 0) print_rows(family_rows(rows, families, *kernel), *as_json);
    else print_rows(rows, *as_json);
    exit_code = kExitClean;
  });
}

}  // namespace fusioncheck::cli
