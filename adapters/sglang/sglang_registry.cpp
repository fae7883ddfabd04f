// SGLang's push allreduce in the registry ("sglang-push"), registered in every build so that a
// build without SGLang's sources says why, and how to get them, instead of "unknown".
#include <string>
#include <vector>

#include "fusioncheck/adapters/sglang_push.hpp"
#include "fusioncheck/gpu/errors.hpp"
#include "sglang_instances.hpp"
#include "sglang_kernels.hpp"

namespace fusioncheck::adapters {
namespace {

const sg::PushInstance* find_instance(const gpu::MutantId& mutant) {
  for (const sg::PushInstance& i : sg::kPushInstances)
    if (i.api != nullptr && gpu::MutantId(i.mutant) == mutant) return &i;
  return nullptr;
}

// Its negative controls (catalogue ids: the registry fills in what each does).
std::vector<gpu::FamilyMutant> family_mutants() {
  std::vector<gpu::FamilyMutant> out;
  for (const char* id : sg::kPushPatchIds)
    if (id != nullptr) out.push_back({id, "", ""});
  return out;
}

void check_mutant(const gpu::MutantId& mutant) {
  if (find_instance(mutant) != nullptr) return;
  for (const sg::PushNotBuilt& n : sg::kPushNotBuilt)
    if (n.why != nullptr && gpu::MutantId(n.mutant) == mutant)
      throw gpu::BadInput(
          "SGLang's push allreduce: the patched copy for this mutant was not built: " +
          std::string(n.why));
  if (const std::string why = sglang_push_unavailable_reason(); !why.empty())
    throw gpu::BadInput("this build has no sglang-push kernel: " + why);
  std::string have;
  for (const auto& m : sglang_push_patches()) have += (have.empty() ? "" : ", ") + m.id();
  throw gpu::BadInput(
      "SGLang's push allreduce has no patched copy for this mutant (patched copies: " +
      (have.empty() ? std::string("none") : have) + ")");
}

}  // namespace

std::vector<gpu::MutantId> sglang_push_patches() {
  std::vector<gpu::MutantId> out;
  for (const sg::PushInstance& i : sg::kPushInstances)
    if (i.api != nullptr && !gpu::MutantId(i.mutant).none()) out.emplace_back(i.mutant);
  return out;
}

std::string sglang_push_unavailable_reason() {
  if (find_instance(gpu::MutantId()) != nullptr) return "";
  const std::string why = sg::kSglangUnavailable;
  return why.empty() ? "this build has no SGLang push instance" : why;
}

std::string sglang_source() { return sg::kSglangSource; }

std::unique_ptr<gpu::KernelUnderTest> make_sglang_push(kernels::Bootstrap& bootstrap,
                                                       const gpu::MutantId& mutant) {
  if (const std::string why = sglang_push_unavailable_reason(); !why.empty())
    throw kernels::InvalidLaunch(why);
  const sg::PushInstance* instance = find_instance(mutant);
  if (instance == nullptr)
    throw kernels::InvalidLaunch("SGLang's push allreduce has no copy for mutant " + mutant.id());
  sg::PushApi api{};
  instance->api(&api);
  return std::make_unique<sg::SglangPushKernels>(bootstrap, api, mutant);
}

gpu::KernelChoice sglang_push_choice() {
  gpu::KernelChoice choice;
  choice.name = "sglang-push";
  choice.host_traits = [](int) { return sglang_push_traits(); };
  choice.make = make_sglang_push;
  choice.rank_counts = {2, 4, 6, 8};
  choice.mutant_ranks = {2, 4, 6, 8};
  // Its grid is the SM count (the counter array's length) and every block spins on its peers'
  // pushes: ranks sharing a GPU get a share of the SMs each.
  choice.share_sms = true;
  return choice;
}

void add_sglang_kernels(gpu::KernelRegistry& registry) {
  const std::string missing = sglang_push_unavailable_reason().empty() ? "" : "; not in this build";
  registry.add(
      {.name = "sglang-push",
       .description = "SGLang's push allreduce, custom_all_reduce.cuh of the sglang wheel; "
                      "variants: one-shot, two-shot" +
                      missing,
       .choose =
           [](const std::string&) {
             if (const std::string why = sglang_push_unavailable_reason(); !why.empty())
               throw gpu::BadInput("this build has no sglang-push kernel: " + why);
             return sglang_push_choice();
           },
       .mutants = family_mutants(),
       .check_mutant = check_mutant,
       .protocol = "sglang-push"});
}

}  // namespace fusioncheck::adapters
