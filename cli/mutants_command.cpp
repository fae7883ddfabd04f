// `fusioncheck mutants`: prints the bug catalogue from the shared protocol layer.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>

#include "fusioncheck/cli/command.hpp"
#include "fusioncheck/protocol/mutants.hpp"

namespace fusioncheck::cli {
namespace {

std::string layers_text(std::uint16_t layers) {
  using namespace protocol;
  std::string out;
  for (auto [bit, name] : {std::pair{kInSim, "sim"},
                           {kInKernel, "kernel"},
                           {kInFlashInfer, "flashinfer"},
                           {kInFlashInferPcie, "flashinfer-pcie"},
                           {kInSimPcie, "sim-pcie"},
                           {kInFlashInferMoe, "flashinfer-moe"},
                           {kInSimVllm, "sim-vllm"},
                           {kInSimMnnvl, "sim-mnnvl"},
                           {kInSimSglang, "sim-sglang"},
                           {kInSimCeRing, "sim-ce-ring"},
                           {kInFlashInferVllm, "flashinfer-vllm"}})
    if (layers & bit) out += (out.empty() ? "" : "+") + std::string(name);
  return out.empty() ? "-" : out;
}

void print_mutants(bool as_json) {
  using namespace protocol;
  if (as_json) {
    auto rows = nlohmann::json::array();
    for (const auto& m : kMutantCatalogue)
      rows.push_back({{"id", m.id},
                      {"what", m.what},
                      {"real_world", m.real_world},
                      {"layers", layers_text(m.layers)}});
    fmt::print("{}\n", rows.dump(2));
    return;
  }
  fmt::print("{:<35} {:<28} {:<50} {}\n", "id", "where", "real-world class", "mutant");
  for (const auto& m : kMutantCatalogue)
    fmt::print("{:<35} {:<28} {:<50} {}\n", m.id, layers_text(m.layers), m.real_world, m.what);
}

}  // namespace

void add_mutants_command(CLI::App& app, int& exit_code) {
  auto as_json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("mutants", "Print the bug catalogue (negative controls)");
  sub->add_flag("--json", *as_json, "Print as JSON");
  sub->callback([as_json, &exit_code] {
    print_mutants(*as_json);
    exit_code = kExitClean;
  });
}

}  // namespace fusioncheck::cli
