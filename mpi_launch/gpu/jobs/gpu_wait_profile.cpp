// `fusioncheck gpu bench --wait-profile`: where the one-shot kernel's time goes, per rank,
// block and peer: cycles spent polling a peer's slot versus everything else, from the
// wait-profile instance of the kernel (kernels/src/wait_profile.cu). One rank may start each
// call late (a spin kernel before it), which shows up as the others polling that rank's slot.
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

#include "fusioncheck/gpu/errors.hpp"
#include "fusioncheck/gpu/gpu_runs.hpp"
#include "fusioncheck/gpu/rank_placement.hpp"
#include "fusioncheck/gpu/mpi_bootstrap.hpp"
#include "fusioncheck/gpu/poll_profile.hpp"
#include "fusioncheck/kernels/launch.hpp"
#include "fusioncheck/mpi/rank_watchdog.hpp"

namespace fusioncheck::gpu {

namespace k = kernels;

namespace {

void check_wait_profile_options(const WaitProfileOptions& o, int n) {
  if (n != 2 && n != 4)
    throw BadInput(
        fmt::format("--wait-profile: {} ranks; the profile instance is built for 2 or 4 ranks", n));
  if (o.delay_rank >= n)
    throw BadInput(
        fmt::format("--delay-rank {}: there are only {} ranks (0..{})", o.delay_rank, n, n - 1));
  if (o.hidden % 8 != 0)
    throw BadInput(fmt::format("--hidden {}: not a multiple of 8 (bf16 vectors)", o.hidden));
}

// This rank's profile, in microseconds, summed over the timed calls / o.calls (a mean).
struct RankProfile {
  int grid = 0;
  std::vector<double> poll_us, work_us, step_us;  // [block][peer], [block], [block][step]
};

// Three untimed calls, then o.calls timed ones; rank o.delay_rank starts each call
// o.delay_us late (a spin kernel before it).
RankProfile profile_calls(mpi::MpiComm& comm, const WaitProfileOptions& o, const k::FusedParams& p,
                          k::Workspace& ws, cudaStream_t stream, double us_per_cycle) {
  const int n = comm.size();
  RankProfile m;
  for (int call = -3; call < o.calls; ++call) {
    comm.barrier("wait profile call start");
    mpi::set_phase("wait profile: a profiled call");
    if (comm.rank() == o.delay_rank && o.delay_us > 0) k::launch_spin(1000ull * o.delay_us, stream);
    const k::LaunchInfo info = k::launch_oneshot_wait_profile(p, ws, stream);
    cuda_check(cudaStreamSynchronize(stream), "wait profile call");
    ws.throw_if_hung();
    if (call < 0) continue;
    m.grid = info.grid;
    const int grid = m.grid;
    const auto entries = ws.wait_profile(grid);
    if (entries.size() < static_cast<std::size_t>(grid))
      throw RunFailure(
          fmt::format("wait profile: {} blocks, more than the profile buffer holds ({})", grid,
                      entries.size()));
    m.poll_us.resize(static_cast<std::size_t>(grid) * n, 0.0);
    m.work_us.resize(grid, 0.0);
    m.step_us.resize(static_cast<std::size_t>(grid) * k::kWaitProfileSteps, 0.0);
    for (int b = 0; b < grid; ++b) {
      for (int r = 0; r < n; ++r)
        m.poll_us[b * n + r] += entries[b].poll_cycles_by_peer[r] * us_per_cycle / o.calls;
      m.work_us[b] += entries[b].work_cycles * us_per_cycle / o.calls;
      for (int i = 0; i < k::kWaitProfileSteps; ++i)
        m.step_us[b * k::kWaitProfileSteps + i] +=
            entries[b].step_end_cycles[i] * us_per_cycle / o.calls;
    }
  }
  return m;
}

// Every rank's profile on rank 0, one after the other: poll_us, work_us, step_us each. The
// ranks must have launched the same grid.
std::vector<double> gather_profiles(mpi::MpiComm& comm, const RankProfile& m) {
  const int n = comm.size();
  const int grid = m.grid;
  const auto grids = comm.all_gather_value(grid, "wait profile grid");
  if (std::any_of(grids.begin(), grids.end(), [&](long long g) { return g != grid; }))
    throw RunFailure("wait profile: the ranks launched different grids");
  std::vector<double> mine(m.poll_us);
  mine.insert(mine.end(), m.work_us.begin(), m.work_us.end());
  mine.insert(mine.end(), m.step_us.begin(), m.step_us.end());
  std::vector<double> all(mine.size() * n);
  comm.gather(mine.data(), all.data(), mine.size() * sizeof(double), 0, "wait profile");
  return all;
}

// One rank's part of the report (rank 0): its two lines of means over the blocks, and its
// blocks as JSON. `base` is the rank's profile as gather_profiles laid it out.
nlohmann::json report_rank(int r, int n, int grid, const double* base) {
  nlohmann::json blocks = nlohmann::json::array();
  std::vector<double> mean_poll(n, 0.0), mean_step(k::kWaitProfileSteps, 0.0);
  double mean_work = 0;
  for (int b = 0; b < grid; ++b) {
    std::vector<double> by_peer(base + b * n, base + (b + 1) * n);
    const double work = base[grid * n + b];
    const double* ends = base + grid * n + grid + b * k::kWaitProfileSteps;
    std::vector<double> step_end(ends, ends + k::kWaitProfileSteps);
    for (int q = 0; q < n; ++q) mean_poll[q] += by_peer[q] / grid;
    for (int i = 0; i < k::kWaitProfileSteps; ++i)
      mean_step[i] += (ends[i] - (i > 0 ? ends[i - 1] : 0.0)) / grid;
    mean_work += work / grid;
    blocks.push_back({{"poll_us_by_peer", by_peer}, {"work_us", work}, {"step_end_us", step_end}});
  }
  std::string line = fmt::format("  rank {}:", r);
  for (int q = 0; q < n; ++q) line += fmt::format(" peer {} {:8.2f}", q, mean_poll[q]);
  fmt::print("{}   work {:8.2f}\n", line, mean_work);
  line = "          steps:";
  for (int i = 0; i < k::kWaitProfileSteps; ++i)
    line += fmt::format(" {} {:.2f}", k::kWaitProfileStepNames[i], mean_step[i]);
  fmt::print("{}\n", line);
  return {{"rank", r}, {"blocks", blocks}};
}

// Rank 0: the report, printed, and as JSON (also written to o.json_out where given).
nlohmann::json report_wait_profile(const WaitProfileOptions& o, const GpuPlacement& placement,
                                   int n, int grid, int clock_khz, const std::vector<double>& all) {
  const std::size_t per_rank_size = all.size() / n;
  nlohmann::json per_rank = nlohmann::json::array();
  fmt::print("fusioncheck gpu bench --wait-profile: {}\n", describe(placement, n));
  fmt::print("one-shot, bf16, {} x {}, {} blocks per rank, mean of {} calls; {}\n", o.tokens,
             o.hidden, grid, o.calls, describe_delay(o));
  fmt::print(
      "microseconds per block (mean over blocks): polling each peer's slot, then the rest; then how long "
      "thread 0 took for each step\n");
  for (int r = 0; r < n; ++r)
    per_rank.push_back(
        report_rank(r, n, grid, all.data() + static_cast<std::size_t>(r) * per_rank_size));
  nlohmann::json out = wait_profile_setup(o, placement, n, clock_khz);
  out["profile"] = per_rank;
  out["steps"] = std::vector<std::string>(k::kWaitProfileStepNames,
                                          k::kWaitProfileStepNames + k::kWaitProfileSteps);
  if (!o.json_out.empty()) write_file(o.json_out, out.dump(1) + "\n");
  return out;
}

}  // namespace

nlohmann::json run_wait_profile(mpi::MpiComm& comm, const WaitProfileOptions& o) {
  require_launcher(comm, "2 or 4");
  const int n = comm.size();
  check_wait_profile_options(o, n);
  const GpuPlacement placement = place_rank_on_gpu(comm, false);
  MpiBootstrap bootstrap(comm);
  const std::size_t elems = static_cast<std::size_t>(o.tokens) * o.hidden;
  k::WorkspaceConfig wc;
  wc.ranks = n;
  wc.comm_size = (static_cast<std::uint64_t>(n) * elems * 2 + 255) / 256 * 256;
  k::Workspace ws = k::Workspace::create_ipc(bootstrap, wc);
  cudaStream_t stream{};
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const ProfileBuffers buffers(elems, static_cast<std::size_t>(o.hidden), stream);
  const k::FusedParams p = profiled_call(o, k::Pattern::residual_rmsnorm, comm.rank(), n, buffers);
  int clock_khz = 0;
  cuda_check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, placement.device),
             "clock rate");
  const double us_per_cycle = 1e3 / std::max(1, clock_khz);
  const RankProfile mine = profile_calls(comm, o, p, ws, stream, us_per_cycle);
  cudaStreamDestroy(stream);
  const std::vector<double> all = gather_profiles(comm, mine);
  if (comm.rank() != 0) return nlohmann::json::object();
  return report_wait_profile(o, placement, n, mine.grid, clock_khz, all);
}

}  // namespace fusioncheck::gpu
