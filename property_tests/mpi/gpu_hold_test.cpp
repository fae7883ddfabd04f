// The held-rank schedule of the GPU suite (GpuCase::hold), on the CPU: the replay file's field,
// the case block, the refusals, what a kernel's traits allow.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusioncheck/gpu/gpu_case.hpp"
#include "fusioncheck/gpu/kernel_under_test.hpp"
#include "gpu_case_fixtures.hpp"

namespace {

namespace fg = fusioncheck::gpu;
namespace fk = fusioncheck::kernels;
using fusioncheck::gpu::testing::Edit;
using fusioncheck::gpu::testing::expect_each_edit_refused;
using fusioncheck::gpu::testing::full_case;

// The held-rank schedule: a rank, a call, a point, a time; travels in replay files (files
// without it load with no rank held), is named in the case block, and is refused where it
// cannot run.
fg::GpuCase held_case() {
  fg::GpuCase c = full_case();
  c.hold = {3, 1, fk::HoldPoint::before_poll, 200'000};
  return c;
}

TEST(GpuCaseHold, TravelsInReplayFilesAndIsNamed) {
  const fg::GpuCase c = held_case();
  const auto j = fg::to_json(c);
  ASSERT_TRUE(j.contains("hold"));
  EXPECT_EQ(j["hold"]["point"], "before_poll");
  const fg::GpuCase back = fg::case_from_json(j);
  EXPECT_EQ(fg::to_json(back), j);
  EXPECT_EQ(back.hold.rank, 3);
  EXPECT_EQ(back.hold.call, 1);
  EXPECT_EQ(back.hold.point, fk::HoldPoint::before_poll);
  EXPECT_EQ(back.hold.ns, 200'000u);
  EXPECT_NE(fg::describe_block(back).find(
                "held rank         rank 3 after its push, before its loads in call 1, 200000 ns"),
            std::string::npos)
      << fg::describe_block(back);
  EXPECT_NE(fg::describe(back).find("hold=r3:c1:before_poll:200000ns"), std::string::npos);
  // Negative control: a case without a hold writes none and reads as none.
  const auto plain = fg::to_json(full_case());
  EXPECT_FALSE(plain.contains("hold"));
  EXPECT_FALSE(fg::case_from_json(plain).hold.active());
  EXPECT_NE(fg::describe_block(full_case()).find("held rank         none"), std::string::npos);
}

TEST(GpuCaseHold, HoldsThatCannotRunAreRefused) {
  const Edit edits[] = {
      {"hold.rank=4 is not a rank of 4", [](nlohmann::json& j) { j["hold"]["rank"] = 4; }},
      {"hold.rank is negative", [](nlohmann::json& j) { j["hold"]["rank"] = -2; }},
      {"hold.call=3 is not a call of the 3", [](nlohmann::json& j) { j["hold"]["call"] = 3; }},
      {"hold.ns=0 is outside", [](nlohmann::json& j) { j["hold"]["ns"] = 0; }},
      {"hold.ns=20000000 is outside", [](nlohmann::json& j) { j["hold"]["ns"] = 20'000'000; }},
      {"hold.point 'during_poll' is none of",
       [](nlohmann::json& j) { j["hold"]["point"] = "during_poll"; }},
      {"hold: unknown field 'block'", [](nlohmann::json& j) { j["hold"]["block"] = 1; }},
      {"hold is not a JSON object", [](nlohmann::json& j) { j["hold"] = 3; }},
  };
  expect_each_edit_refused(held_case(), edits);
}

TEST(GpuCaseHold, InsideTheTraitsOnlyWhereTheKernelCanHold) {
  fg::GpuCase c = held_case();
  c.calls[0].pdl_producer = false;  // the call held below is the first
  fg::KernelTraits in_kernel = fg::our_traits();
  in_kernel.quant_without_norm_out = true;  // the case has such a call
  fg::KernelTraits before_push_only;        // held by a pause kernel ahead of the call
  before_push_only.quant_without_norm_out = true;
  EXPECT_EQ(fg::outside_traits(c, in_kernel), "");
  EXPECT_NE(fg::outside_traits(c, before_push_only).find("held before_poll"), std::string::npos);
  c.hold.point = fk::HoldPoint::before_push;
  EXPECT_EQ(fg::outside_traits(c, before_push_only), "");
  c.hold.call = 0;
  c.calls[0].pdl_producer = true;  // nothing may come between a producer and its call
  EXPECT_NE(fg::outside_traits(c, before_push_only).find("behind its PDL producer"),
            std::string::npos);
  EXPECT_EQ(fg::outside_traits(c, in_kernel), "");
  EXPECT_EQ(fg::our_traits().hold_points(c.dtype).size(), 3u);
  EXPECT_EQ(before_push_only.hold_points(c.dtype),
            (std::vector<fk::HoldPoint>{fk::HoldPoint::before_push}));
}

// A kernel that holds itself at some points, in some element types, through a kernel of its own
// ahead of the call (FlashInfer's MoE kernels: before their polls, bf16): held there in those
// calls only, and never behind a PDL producer; its other calls are held before their push.
TEST(GpuCaseHold, AKernelsOwnHoldsApplyWhereItDeclaresThem) {
  fg::GpuCase c = held_case();
  c.calls[0].pdl_producer = false;
  fg::KernelTraits polls_bf16;
  polls_bf16.quant_without_norm_out = true;
  polls_bf16.in_kernel_holds = {fk::HoldPoint::before_poll};
  polls_bf16.in_kernel_hold_dtypes = {fk::DType::bf16};
  c.dtype = fk::DType::bf16;
  c.hold.point = fk::HoldPoint::before_poll;
  EXPECT_TRUE(polls_bf16.holds_in_kernel(fk::HoldPoint::before_poll, fk::DType::bf16));
  EXPECT_FALSE(polls_bf16.holds_in_kernel(fk::HoldPoint::before_flag, fk::DType::bf16));
  EXPECT_EQ(polls_bf16.hold_points(fk::DType::bf16),
            (std::vector<fk::HoldPoint>{fk::HoldPoint::before_push, fk::HoldPoint::before_poll}));
  EXPECT_EQ(polls_bf16.hold_points(fk::DType::f16),
            (std::vector<fk::HoldPoint>{fk::HoldPoint::before_push}));
  EXPECT_EQ(fg::outside_traits(c, polls_bf16), "");
  c.dtype = fk::DType::f16;
  EXPECT_NE(fg::outside_traits(c, polls_bf16).find("held before_poll"), std::string::npos);
  c.dtype = fk::DType::bf16;
  c.hold.call = 0;
  c.calls[0].pdl_producer = true;  // its hold is a kernel ahead of the call
  EXPECT_NE(fg::outside_traits(c, polls_bf16).find("behind its PDL producer"), std::string::npos);
  polls_bf16.holds_through_params = true;
  EXPECT_EQ(fg::outside_traits(c, polls_bf16), "");
}

}  // namespace
