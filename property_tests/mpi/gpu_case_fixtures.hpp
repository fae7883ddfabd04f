#pragma once
// Cases the GPU suite's CPU tests share: a case with every field set, and the check that a
// case edited so that it cannot run is refused naming the reason.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_case.hpp"

namespace fusioncheck::gpu::testing {

inline ::fusioncheck::gpu::GpuCase full_case() {
  ::fusioncheck::gpu::GpuCase c;
  c.seed = 77;
  c.ranks = 4;
  c.hidden = 2048;
  c.dtype = ::fusioncheck::kernels::DType::f16;
  c.fp32_accumulation = false;
  c.weight_bias = 1.0f;
  c.mode = ::fusioncheck::gpu::IssueMode::graph_replay;
  c.delay_seed = 12345;
  c.delay_max_ns = 20'000;
  ::fusioncheck::gpu::CallSpec a;
  a.tokens = 7;
  a.pdl_consumer = true;
  a.pdl_producer = true;
  a.producer_delay_ns = 20'000;
  ::fusioncheck::gpu::CallSpec b;
  b.twoshot = true;
  b.pattern = ::fusioncheck::kernels::Pattern::fp8_dynamic;
  b.tokens = 130;
  b.trigger = ::fusioncheck::kernels::Trigger::early;
  b.cluster = ::fusioncheck::kernels::ClusterMode::force_no_cluster;
  b.norm_out = false;
  ::fusioncheck::gpu::CallSpec u;
  u.unfused = true;
  u.pattern = ::fusioncheck::kernels::Pattern::fp8_static;
  u.exact_values = false;
  u.use_pdl = false;
  c.calls = {a, b, u};
  return c;
}

// A case edited so that it cannot run: each edit must be refused as BadInput naming `expect`.
struct Edit {
  const char* expect;
  void (*apply)(nlohmann::json&);
};
template <std::size_t N>
inline void expect_each_edit_refused(const ::fusioncheck::gpu::GpuCase& base,
                                     const Edit (&edits)[N]) {
  EXPECT_NO_THROW(::fusioncheck::gpu::case_from_json(
      ::fusioncheck::gpu::to_json(base)));  // the unedited case is fine
  for (const Edit& e : edits) {
    auto j = ::fusioncheck::gpu::to_json(base);
    e.apply(j);
    try {
      ::fusioncheck::gpu::case_from_json(j);
      ADD_FAILURE() << "accepted a case that should fail with: " << e.expect;
    } catch (const fusioncheck::gpu::BadInput& err) {
      EXPECT_NE(std::string(err.what()).find(e.expect), std::string::npos) << err.what();
    }
  }
}

}  // namespace fusioncheck::gpu::testing
