#include "fusioncheck/gpu/poll_profile.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

namespace fusioncheck::gpu {

std::vector<PollSiteSummary> summarize_poll_sites(const std::vector<PollSiteTime>& entries,
                                                  int calls, double us_per_cycle) {
  if (calls < 1) throw std::invalid_argument("poll profile: no calls to average over");
  struct Sum {
    std::uint64_t polls = 0, cycles = 0;
  };
  std::map<int, std::map<int, Sum>> by_line;  // line -> block -> sums
  for (const PollSiteTime& e : entries) {
    if (e.block < 0 || e.line <= 0)
      throw std::invalid_argument("poll profile: an entry without a block or a source line");
    Sum& s = by_line[e.line][e.block];
    s.polls += e.polls;
    s.cycles += e.cycles;
  }
  std::vector<PollSiteSummary> out;
  for (const auto& [line, blocks] : by_line) {
    PollSiteSummary site;
    site.line = line;
    site.blocks = static_cast<int>(blocks.size());
    site.by_block_us.assign(static_cast<std::size_t>(blocks.rbegin()->first) + 1, 0.0);
    double polls = 0;
    for (const auto& [block, s] : blocks) {
      const double us = static_cast<double>(s.cycles) * us_per_cycle / calls;
      site.by_block_us[static_cast<std::size_t>(block)] = us;
      site.mean_us += us / site.blocks;
      site.max_us = std::max(site.max_us, us);
      polls += static_cast<double>(s.polls) / calls;
    }
    site.polls_per_call = polls / site.blocks;
    out.push_back(std::move(site));
  }
  return out;
}

ProfileBuffers::ProfileBuffers(std::size_t elems, std::size_t hidden, cudaStream_t stream)
    : input(elems * 2), residual(elems * 2), gamma(hidden * 2), allreduce_out(elems * 2),
      residual_out(elems * 2), norm_out(elems * 2) {
  for (DeviceBuffer* b : {&input, &residual, &gamma}) b->fill(0x3c, stream, b->bytes());
}

kernels::FusedParams profiled_call(const WaitProfileOptions& o, kernels::Pattern pattern, int rank,
                                   int ranks, const ProfileBuffers& b) {
  kernels::FusedParams p;
  p.ranks = ranks;
  p.rank = rank;
  p.tokens = o.tokens;
  p.hidden = o.hidden;
  p.dtype = kernels::DType::bf16;
  p.pattern = pattern;
  p.variant = o.variant;
  p.input = b.input.get();
  p.residual_in = b.residual.get();
  p.gamma = b.gamma.get();
  if (pattern == kernels::Pattern::allreduce) p.allreduce_out = b.allreduce_out.get();
  p.residual_out = b.residual_out.get();
  p.norm_out = b.norm_out.get();
  return p;
}

std::string describe_delay(const WaitProfileOptions& o) {
  return o.delay_rank >= 0
             ? fmt::format("rank {} starts every call {} us late", o.delay_rank, o.delay_us)
             : std::string("no injected delay");
}

nlohmann::json wait_profile_setup(const WaitProfileOptions& o, const GpuPlacement& placement,
                                  int ranks, int clock_khz) {
  return {{"setup", describe(placement, ranks)},
          {"ranks", ranks},
          {"tokens", o.tokens},
          {"hidden", o.hidden},
          {"calls", o.calls},
          {"delay_rank", o.delay_rank},
          {"delay_us", o.delay_us},
          {"clock_khz", clock_khz}};
}

}  // namespace fusioncheck::gpu
