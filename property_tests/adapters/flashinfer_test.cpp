// The FlashInfer adapter's host side, without a GPU: what this build has, and what it refuses.
#include <gtest/gtest.h>

#include <algorithm>

#include "fusioncheck/adapters/flashinfer.hpp"

namespace {

namespace fa = fusioncheck::adapters;
using fusioncheck::protocol::Mutant;

TEST(FlashInferAdapter, BuiltWithTheHeadersAndEveryPatch) {
  ASSERT_TRUE(fa::flashinfer_available()) << fa::flashinfer_unavailable_reason();
  EXPECT_NE(fa::flashinfer_source().find("flashinfer"), std::string::npos) << fa::flashinfer_source();
  auto patches = fa::flashinfer_patches();
  std::sort(patches.begin(), patches.end());
  std::vector<Mutant> expected = {Mutant::pdl_wait_missing, Mutant::float_sentinel, Mutant::no_canonicalize,
                                  Mutant::clear_size_current, Mutant::flag_before_arrival};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(patches, expected);
  EXPECT_EQ(fa::flashinfer_choice().name, "flashinfer");
}

// A Bootstrap never reached: the factory refuses before it makes anything.
struct UnusedBootstrap final : fusioncheck::kernels::Bootstrap {
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_gather(const void*, void*, std::size_t, const char*) override { ADD_FAILURE(); }
  void barrier(const char*) override { ADD_FAILURE(); }
};

TEST(FlashInferAdapter, AMutantWithoutPatchIsRefused) {
  UnusedBootstrap bootstrap;
  try {
    (void)fa::make_flashinfer(bootstrap, Mutant::two_buffers);
    ADD_FAILURE() << "no refusal";
  } catch (const fusioncheck::kernels::InvalidLaunch& e) {
    EXPECT_NE(std::string(e.what()).find("two-buffers"), std::string::npos) << e.what();
  }
}

}  // namespace
