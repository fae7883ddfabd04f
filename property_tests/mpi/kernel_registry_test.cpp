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

}  // namespace
}  // namespace fusioncheck::gpu
