// `fusioncheck gpu bench --wait-profile --kernel K`: where another project's kernel waits, from
// a build of it whose poll loops time themselves (KernelChoice::make_poll_profiled): per rank,
// poll site (a line of its header) and block, thread 0's time in the polls there, beside the
// call's time between two events. One rank may start each call late (a spin kernel before it).
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_runs.hpp"
#include "fusioncheck/gpu/mpi_bootstrap.hpp"
#include "fusioncheck/gpu/poll_profile.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/mpi/rank_watchdog.hpp"

namespace fusioncheck::gpu {

namespace k = kernels;

namespace {

struct RankPolls {
  double call_us = 0;  // mean, between events around the launch (the delay spin outside)
  std::vector<PollSiteTime> entries;  // every timed call's
};

// Three untimed calls, then o.calls timed ones, each started on every rank together.
RankPolls profile_calls(mpi::MpiComm& comm, const WaitProfileOptions& o, KernelUnderTest& kernel,
                        const k::FusedParams& p, cudaStream_t stream) {
  RankPolls m;
  cudaEvent_t start{}, stop{};
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int call = -3; call < o.calls; ++call) {
    comm.barrier("poll profile call start");
    mpi::set_phase("poll profile: a profiled call");
    if (comm.rank() == o.delay_rank && o.delay_us > 0) k::launch_spin(1000ull * o.delay_us, stream);
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    kernel.launch(p, false, stream);
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    kernel.wait(stream,
                WaitStart::this_rank_enqueued);  // bounded: a hung call is recorded and released
    if (const k::HangRecord hang = kernel.hang_record(); hang.valid != 0) throw k::KernelHang(hang);
    std::vector<PollSiteTime> polls = kernel.take_poll_profile();
    if (call < 0) continue;
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    m.call_us += 1e3 * ms / o.calls;
    m.entries.insert(m.entries.end(), polls.begin(), polls.end());
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return m;
}

nlohmann::json rank_json(int rank, const RankPolls& m, int calls, double us_per_cycle) {
  nlohmann::json sites = nlohmann::json::array();
  for (const PollSiteSummary& s : summarize_poll_sites(m.entries, calls, us_per_cycle))
    sites.push_back({{"line", s.line},
                     {"blocks", s.blocks},
                     {"mean_us", s.mean_us},
                     {"max_us", s.max_us},
                     {"polls_per_call", s.polls_per_call},
                     {"by_block_us", s.by_block_us}});
  return {{"rank", rank}, {"call_us", m.call_us}, {"sites", sites}};
}

// Every rank's JSON on rank 0, as text: the ranks' reports differ in size.
std::vector<nlohmann::json> gather_json(mpi::MpiComm& comm, const nlohmann::json& mine) {
  const std::string text = mine.dump();
  const auto sizes =
      comm.all_gather_value(static_cast<long long>(text.size()), "poll profile size");
  const auto longest = static_cast<std::size_t>(*std::max_element(sizes.begin(), sizes.end()));
  std::string padded = text;
  padded.resize(longest, ' ');
  std::string all(longest * static_cast<std::size_t>(comm.size()), ' ');
  comm.gather(padded.data(), all.data(), longest, 0, "poll profile");
  std::vector<nlohmann::json> out;
  if (comm.rank() != 0) return out;
  for (int r = 0; r < comm.size(); ++r)
    out.push_back(nlohmann::json::parse(
        all.substr(static_cast<std::size_t>(r) * longest, static_cast<std::size_t>(sizes[r]))));
  return out;
}

void print_rank(const nlohmann::json& rank) {
  fmt::print("  rank {}: call {:.2f} us\n", rank["rank"].get<int>(), rank["call_us"].get<double>());
  for (const auto& s : rank["sites"])
    fmt::print("    line {:5d}: mean {:8.2f}  max {:8.2f}  over {:3d} blocks, {:.1f} polls\n",
               s["line"].get<int>(), s["mean_us"].get<double>(), s["max_us"].get<double>(),
               s["blocks"].get<int>(), s["polls_per_call"].get<double>());
}

}  // namespace

nlohmann::json run_poll_profile(mpi::MpiComm& comm, const WaitProfileOptions& o) {
  if (!o.kernel || !o.kernel->make_poll_profiled)
    throw BadInput("--wait-profile --kernel: the kernel has no build that times its polls");
  const KernelChoice& choice = *o.kernel;
  require_launcher(comm, "2, 4 or 8");
  const int n = comm.size();
  if (o.delay_rank >= n)
    throw BadInput(
        fmt::format("--delay-rank {}: there are only {} ranks (0..{})", o.delay_rank, n, n - 1));
  const GpuPlacement placement = place_rank_on_gpu(comm, choice.share_sms);
  MpiBootstrap bootstrap(comm);
  std::unique_ptr<KernelUnderTest> kernel = choice.make_poll_profiled(bootstrap);
  const KernelTraits traits = kernel->traits();
  const int variants = std::max<int>(1, static_cast<int>(traits.variants.size()));
  if (o.variant >= variants)
    throw BadInput(fmt::format("--variant {}: {} at {} ranks has variants 0..{}", o.variant,
                               choice.name, n, variants - 1));
  const std::string variant_name =
      traits.variants.empty() ? choice.name : traits.variants[o.variant].name;
  const std::size_t elems = static_cast<std::size_t>(o.tokens) * o.hidden;
  kernel->prepare(elems, false);
  cudaStream_t stream{};
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  ProfileBuffers buffers(elems, static_cast<std::size_t>(o.hidden), stream);
  // The fused pattern where the kernel has it, else the allreduce alone.
  const k::Pattern pattern = traits.runs_pattern(k::Pattern::residual_rmsnorm)
                                 ? k::Pattern::residual_rmsnorm
                                 : k::Pattern::allreduce;
  k::FusedParams p = profiled_call(o, pattern, comm.rank(), n, buffers);
  p.fp32_accumulation = traits.fp32_accumulation;
  int clock_khz = 0;
  cuda_check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, placement.device),
             "clock rate");
  const double us_per_cycle = 1e3 / std::max(1, clock_khz);
  const RankPolls mine = profile_calls(comm, o, *kernel, p, stream);
  cudaStreamDestroy(stream);
  const std::vector<nlohmann::json> ranks =
      gather_json(comm, rank_json(comm.rank(), mine, o.calls, us_per_cycle));
  if (comm.rank() != 0) return nlohmann::json::object();
  fmt::print("fusioncheck gpu bench --wait-profile --kernel {}: {}\n", choice.name,
             describe(placement, n));
  fmt::print("{} (variant {}), bf16 {}, {} x {}, mean of {} calls; {}\n", variant_name, o.variant,
             k::pattern_name(p.pattern), o.tokens, o.hidden, o.calls, describe_delay(o));
  fmt::print(
      "microseconds per call: the call (events around its launch), then thread 0's polls at each "
      "line of {}, over the blocks that poll there\n",
      choice.poll_profiled_source);
  for (const nlohmann::json& r : ranks) print_rank(r);
  nlohmann::json out = wait_profile_setup(o, placement, n, clock_khz);
  out["kernel"] = choice.name;
  out["variant"] = o.variant;
  out["variant_name"] = variant_name;
  out["source"] = choice.poll_profiled_source;
  out["profile"] = ranks;
  if (!o.json_out.empty()) write_file(o.json_out, out.dump(1) + "\n");
  return out;
}

}  // namespace fusioncheck::gpu
