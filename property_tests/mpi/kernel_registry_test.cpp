// The kernel registry: names checked at registration, lookups by exact name or '@' prefix,
// and the help and error texts a command line shows.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "fusioncheck/gpu/kernel_registry.hpp"

namespace fusioncheck::gpu {
namespace {

KernelFamily family(const std::string& name, const std::string& description = "a kernel") {
  return {.name = name, .description = description, .choose = [](const std::string& value) {
            KernelChoice choice;
            choice.name = value;
            return choice;
          }};
}

TEST(KernelRegistry, AddsInRegistrationOrderAndFindsExactNames) {
  KernelRegistry registry;
  registry.add(family("ours", "fusioncheck's kernels"));
  registry.add(family("my-kernel2"));
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"ours", "my-kernel2"}));
  ASSERT_NE(registry.find("my-kernel2"), nullptr);
  EXPECT_EQ(registry.find("my-kernel2")->name, "my-kernel2");
  EXPECT_EQ(registry.find("my-kernel"), nullptr);  // a prefix of a plain name is not it
  EXPECT_EQ(registry.find("my-kernel2x"), nullptr);
  EXPECT_EQ(registry.choose("ours").name, "ours");
}

TEST(KernelRegistry, RefusesDuplicateAndMalformedNames) {
  KernelRegistry registry;
  registry.add(family("ours"));
  EXPECT_THROW(registry.add(family("ours")), std::invalid_argument);
  for (const char* bad : {"", "@", "Ours", "my_kernel", "-x", "x-", "a@b", "a@@", "a b"})
    EXPECT_THROW(registry.add(family(bad)), std::invalid_argument) << bad;
  KernelFamily no_choose = family("empty");
  no_choose.choose = nullptr;
  EXPECT_THROW(registry.add(no_choose), std::invalid_argument);
  EXPECT_THROW(registry.add(family("two-lines", "one\ntwo")), std::invalid_argument);
  EXPECT_EQ(registry.names().size(), 1u);  // nothing refused was kept
}

TEST(KernelRegistry, AtFamiliesTakeASuffix) {
  KernelRegistry registry;
  registry.add(family("flashinfer"));
  registry.add(family("flashinfer@"));
  EXPECT_EQ(registry.find("flashinfer")->name, "flashinfer");
  ASSERT_NE(registry.find("flashinfer@0.6.11"), nullptr);
  EXPECT_EQ(registry.find("flashinfer@0.6.11")->name, "flashinfer@");
  // choose() gets the whole value, suffix included.
  EXPECT_EQ(registry.choose("flashinfer@0.6.11").name, "flashinfer@0.6.11");
  EXPECT_EQ(registry.find("flashinfer-0.6.11"), nullptr);
  EXPECT_EQ(registry.find("other@1"), nullptr);
}

TEST(KernelRegistry, UnknownNameIsBadInputNamingTheFamilies) {
  KernelRegistry registry;
  registry.add(family("ours"));
  registry.add(family("flashinfer@"));
  try {
    registry.choose("tensorrt");
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_STREQ(e.what(), "'tensorrt' is not a registered kernel (ours, flashinfer@...)");
  }
  EXPECT_THROW(KernelRegistry{}.choose("ours"), BadInput);
}

TEST(KernelRegistry, AFamilysOwnRefusalPassesThrough) {
  KernelRegistry registry;
  KernelFamily missing = family("missing");
  missing.choose = [](const std::string&) -> KernelChoice {
    throw BadInput("this build has no missing adapter");
  };
  registry.add(missing);
  ASSERT_NE(registry.find("missing"), nullptr);  // known, though it cannot run here
  try {
    registry.choose("missing");
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_STREQ(e.what(), "this build has no missing adapter");
  }
}

TEST(KernelRegistry, HelpListsEveryFamilyWithItsDescription) {
  KernelRegistry registry;
  EXPECT_EQ(registry.help(), "");
  registry.add(family("ours", "fusioncheck's kernels"));
  registry.add(family("flashinfer", "FlashInfer's allreduce fusion"));
  registry.add(family("flashinfer@", "another release"));
  EXPECT_EQ(
      registry.help(),
      "ours (fusioncheck's kernels), flashinfer (FlashInfer's allreduce fusion), flashinfer@... (another release)");
}

// A family registers its negative controls: catalogue ids take the catalogue's words, its own
// ids bring theirs; anything else is refused when the family is added.
TEST(KernelRegistry, FamilyMutantsAreCheckedAndCatalogueIdsTakeTheCatalogueWords) {
  KernelRegistry registry;
  KernelFamily f = family("my-kernel");
  f.mutants = {{"float-sentinel", "", ""}, {"my-copy-1.2", "drops a fence", "a fix, reverted"}};
  registry.add(f);
  const auto& registered = registry.find("my-kernel")->mutants;
  ASSERT_EQ(registered.size(), 2u);
  EXPECT_EQ(registered[0].what, catalogue_entry(protocol::Mutant::float_sentinel).what);
  EXPECT_FALSE(registered[0].what.empty());
  EXPECT_EQ(registered[1].what, "drops a fence");

  const auto refused = [](std::vector<FamilyMutant> mutants, const std::string& name = "other") {
    KernelRegistry r;
    r.add([] {
      KernelFamily first = family("first");
      first.mutants = {{"shared-copy", "one meaning", "a report"}};
      return first;
    }());
    KernelFamily f = family(name);
    f.mutants = std::move(mutants);
    EXPECT_THROW(r.add(f), std::invalid_argument);
  };
  refused({{"none", "x", "y"}});    // the kernel as it is
  refused({{"Bad_Id", "x", "y"}});  // not an id
  refused({{"-x", "x", "y"}});
  refused({{"own-copy", "", "a report"}});  // own, without words
  refused({{"own-copy", "what", ""}});
  refused({{"float-sentinel", "", ""}, {"float-sentinel", "", ""}});  // twice
  refused({{"shared-copy", "another meaning", "a report"}});          // another family's
  // The same own id with the same meaning in two families is one negative control.
  KernelRegistry r;
  KernelFamily a = family("a"), b = family("b");
  a.mutants = b.mutants = {{"shared-copy", "one meaning", "a report"}};
  r.add(a);
  EXPECT_NO_THROW(r.add(b));
}

// --mutant is resolved against the chosen family: "none" always, its own ids, then whether
// this build has the copy (check_mutant); anything else is bad input naming its ids.
TEST(KernelRegistry, MutantOfAcceptsOnlyTheFamilysNegativeControls) {
  KernelRegistry registry;
  KernelFamily f = family("my-kernel");
  f.mutants = {{"float-sentinel", "", ""}, {"my-copy", "drops a fence", "a fix, reverted"}};
  f.check_mutant = [](const MutantId& m) {
    if (m.id() == "my-copy") throw BadInput("not built here");
  };
  registry.add(f);
  registry.add(family("bare"));
  EXPECT_TRUE(registry.mutant_of("my-kernel", "none").none());
  EXPECT_EQ(registry.mutant_of("my-kernel", "float-sentinel"),
            MutantId(protocol::Mutant::float_sentinel));
  try {
    (void)registry.mutant_of("my-kernel", "two-buffers");
    ADD_FAILURE() << "a catalogue id the family does not register was accepted";
  } catch (const BadInput& e) {
    EXPECT_NE(
        std::string(e.what()).find("not a negative control of my-kernel (its: float-sentinel, "
                                   "my-copy"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)registry.mutant_of("my-kernel", "my-copy"), BadInput);  // check_mutant's
  EXPECT_THROW((void)registry.mutant_of("bare", "float-sentinel"), BadInput);
  EXPECT_TRUE(registry.mutant_of("bare", "none").none());
}

}  // namespace
}  // namespace fusioncheck::gpu
