// The reproducer's run: where the ranks live, the calls of each run of the case, the bounded
// wait, the checks and the verdict. Included at the end of repro_main.cu (it uses its
// launch_call and buffers).
namespace {

struct Failure {
  std::string check;  // "launch", "hang", "reference", "agreement", "pdl-consumer"
  std::string message;
};

bool finding_is(const std::string& check) {
  for (const char* c : repro::kFindingChecks)
    if (check == c) return true;
  return false;
}

// The finding's failures: one of its checks, and for a refused launch its message too. A
// launch refused for another reason (the launcher's own check of a shape it does not take)
// is not the finding; for a finding about outputs or hangs it means the case cannot run.
int status_of(const Failure& f) {
  const std::string message = repro::kFindingMessage;
  const bool launch = f.check == "launch";
  if (finding_is(f.check) &&
      (!launch || message.empty() || f.message.find(message) != std::string::npos))
    return 3;
  if (launch) return finding_is("launch") ? 0 : 2;
  return 1;
}

// The exported seeded delays of one run, each where it applies: what to vary when a failure
// needs explaining (--no-delays runs without them).
void print_delays(int run, bool applied) {
  std::printf("  delays of run %d%s:", run + 1, applied ? "" : " (left out: --no-delays)");
  int listed = 0;
  for (int i = 0; i < repro::kCalls; ++i)
    for (int r = 0; r < kN; ++r) {
      const repro::Delay& d = repro::kDelays[run % repro::kRuns][i][r];
      if (d.hold_ns != 0)
        std::printf(" call %d rank %d held %u ns before its push;", i, r, d.hold_ns), ++listed;
      if (d.ns != 0)
        std::printf(" call %d rank %d %s %u ns;", i, r,
                    d.staggered ? "blocks started over" : "starts late by", d.ns),
            ++listed;
    }
  std::printf("%s\n", listed == 0 ? " none" : "");
}

[[noreturn]] void verdict(const std::vector<Failure>& failures, int run, int runs,
                          bool delays_applied) {
  for (const Failure& f : failures) std::printf("  [%s] %s\n", f.check.c_str(), f.message.c_str());
  if (!failures.empty()) print_delays(run, delays_applied);
  const int status = failures.empty() ? 0 : status_of(failures.front());
  if (status == 3)
    std::printf("REPRODUCED (exit 3): %s, in run %d of %d\n", repro::kFinding, run + 1, runs);
  else if (status == 1)
    std::printf("OTHER FAILURE (exit 1): [%s] is not what %s is about\n",
                failures.front().check.c_str(), repro::kFinding);
  else if (status == 2)
    std::printf("CANNOT RUN (exit 2): the launcher refuses the case, so %s cannot be checked\n",
                repro::kFinding);
  else if (!failures.empty())
    std::printf(
        "NOT REPRODUCED (exit 0): the launcher refuses the case with its own check, not "
        "as %s did\n",
        repro::kFinding);
  else
    std::printf("NOT REPRODUCED (exit 0): %d runs of the case, every output as expected, no hang\n",
                runs);
  std::fflush(stdout);
  std::_Exit(status);  // a hung kernel may still run: the driver ends it with the process
}

// Ranks sharing GPU 0 each get an equal share of its SMs in a green context, as fusioncheck
// gives each rank process an MPS share: a rank's late blocks then wait for its own SMs, not for
// whatever the other rank leaves free. Returns false (and the ranks share every SM) where the
// driver has no green contexts or the GPU cannot be split kN ways.
bool split_sms(std::vector<Rank>& ranks, int total_sms) {
  auto* device_get = driver_function<decltype(cuDeviceGet)>("cuDeviceGet");
  auto* get_resource = driver_function<decltype(cuDeviceGetDevResource)>("cuDeviceGetDevResource");
  auto* split =
      driver_function<decltype(cuDevSmResourceSplitByCount)>("cuDevSmResourceSplitByCount");
  auto* describe =
      driver_function<decltype(cuDevResourceGenerateDesc)>("cuDevResourceGenerateDesc");
  auto* create = driver_function<decltype(cuGreenCtxCreate)>("cuGreenCtxCreate");
  auto* as_context = driver_function<decltype(cuCtxFromGreenCtx)>("cuCtxFromGreenCtx");
  if (!device_get || !get_resource || !split || !describe || !create || !as_context) return false;
  CUdevice device = 0;
  CUdevResource all{};
  if (device_get(&device, 0) != CUDA_SUCCESS ||
      get_resource(device, &all, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS)
    return false;
  const unsigned align = std::max(1u, all.sm.smCoscheduledAlignment);
  const unsigned share = all.sm.smCount / kN / align * align;
  if (share == 0 || share < all.sm.minSmPartitionSize) return false;
  std::vector<CUdevResource> groups(kN);
  unsigned count = kN;
  CUdevResource rest{};
  if (split(groups.data(), &count, &all, &rest, 0, share) != CUDA_SUCCESS ||
      count < static_cast<unsigned>(kN))
    return false;
  for (int r = 0; r < kN; ++r) {
    Rank& rank = ranks[static_cast<std::size_t>(r)];
    CUdevResourceDesc desc = nullptr;
    CUgreenCtx green = nullptr;
    if (describe(&desc, &groups[static_cast<std::size_t>(r)], 1) != CUDA_SUCCESS ||
        create(&green, desc, device, CU_GREEN_CTX_DEFAULT_STREAM) != CUDA_SUCCESS ||
        as_context(&rank.partition, green) != CUDA_SUCCESS)
      cannot_run("creating a green context for rank " + std::to_string(r) + " failed");
    rank.sms = static_cast<int>(groups[static_cast<std::size_t>(r)].sm.smCount);
  }
  std::printf("ranks share GPU 0: each in a green context of %d of its %d SMs\n", ranks[0].sms,
              total_sms);
  return true;
}

// One GPU per rank where there are enough and each reaches the others; else all on GPU 0,
// where the ranks' grids must be resident together (every block of a rank waits for its peers).
std::vector<Rank> place_ranks(bool whole_gpu) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) cannot_run("no CUDA device");
  std::vector<Rank> ranks(kN);
  bool spread = devices >= kN;
  for (int a = 0; spread && a < kN; ++a)
    for (int b = 0; b < kN; ++b) {
      int ok = 0;
      if (a != b && (cudaDeviceCanAccessPeer(&ok, a, b) != cudaSuccess || ok == 0)) spread = false;
    }
  for (int r = 0; r < kN; ++r) ranks[r].device = spread ? r : 0;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  if (prop.major < repro::kMinComputeMajor)
    cannot_run("the case needs sm_" + std::to_string(repro::kMinComputeMajor) +
               "0 or newer; GPU 0 is sm_" + std::to_string(prop.major) +
               std::to_string(prop.minor));
  for (Rank& r : ranks) r.sms = spread ? prop.multiProcessorCount : prop.multiProcessorCount / kN;
  if (!spread) {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaFree(nullptr), "creating the primary context");  // green contexts retain it
    if (whole_gpu || !split_sms(ranks, prop.multiProcessorCount))
      std::printf("ranks share GPU 0 and all its %d SMs%s\n", prop.multiProcessorCount,
                  whole_gpu ? " (--whole-gpu)" : " (no green contexts here)");
    // At most one block per token slice of 8 elements and per SM, 1024 threads per SM assumed;
    // a rank's grid must fit its share beside the others'.
    const std::uint64_t threads =
        static_cast<std::uint64_t>(repro::kMaxTokens) * repro::kHidden / 8;
    const std::uint64_t room = static_cast<std::uint64_t>(ranks[0].sms) * 1024;
    if (threads > room)
      cannot_run("the " + std::to_string(kN) + " ranks share GPU 0, and a rank's grid (up to " +
                 std::to_string(threads) + " threads) may not be resident beside the others' on " +
                 std::to_string(ranks[0].sms) + " SMs; run it with one GPU per rank");
  }
  for (Rank& r : ranks) {
    use_rank(r);
    for (int peer = 0; spread && peer < kN; ++peer) {
      if (peer == r.device) continue;
      const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
        check(e, "cudaDeviceEnablePeerAccess");
      (void)cudaGetLastError();
    }
    check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&r.side, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  if (spread) std::printf("ranks: %d, one GPU each\n", kN);
  return ranks;
}

void before_call(Rank& rank, const repro::Delay& delay) {
  if (delay.hold_ns != 0) {  // the held rank's call starts late
    pause_kernel<<<1, 1, 0, rank.stream>>>(delay.hold_ns);
    check(cudaGetLastError(), "hold kernel");
  }
  if (delay.ns == 0) return;
  if (delay.staggered) {  // the call's blocks start as the hog's blocks leave the rank's SMs
    hog_kernel<<<2 * rank.sms + 1, 1024, 0, rank.side>>>(delay.ns);
  } else {
    pause_kernel<<<1, 1, 0, rank.stream>>>(delay.ns);
  }
  check(cudaGetLastError(), "delay kernel");
}

void launch_producer(CallBuffers& b, const repro::CallCase& c, cudaStream_t stream) {
  const std::size_t elems = static_cast<std::size_t>(c.tokens) * repro::kHidden;
  Copies copies{};
  copies.copy[copies.count++] = {b.staged_input, b.input, elems * 2};
  copies.copy[copies.count++] = {b.staged_residual, b.residual_in, elems * 2};
  copies.copy[copies.count++] = {b.staged_gamma, b.gamma, align16(repro::kHidden * 2)};
  for (int part = 0; part < repro::kMoeParts; ++part)
    if (b.moe[part] != nullptr)
      copies.copy[copies.count++] = {b.moe_staged[part], b.moe[part], b.moe_bytes[part]};
  producer_kernel<<<8, 256, 0, stream>>>(copies, c.producer_delay_ns);
  check(cudaGetLastError(), "PDL producer launch");
}

// Enqueues call i on every rank; a launch the launcher refuses is a failure of class "launch".
void enqueue_call(std::vector<Rank>& ranks, int run, int i, bool delays,
                  std::vector<Failure>& failures) {
  const repro::CallCase& c = repro::kCallCases[i];
  for (int r = 0; r < kN; ++r) {
    Rank& rank = ranks[static_cast<std::size_t>(r)];
    CallBuffers& b = rank.calls[static_cast<std::size_t>(i)];
    use_rank(rank);
    if (c.pdl_producer) launch_producer(b, c, rank.stream);
    else if (delays) before_call(rank, repro::kDelays[run % repro::kRuns][i][r]);
    cudaError_t e = cudaSuccess;
    std::string message;
    try {
#if FC_FAMILY_LEGACY
      e = launch_call(rank, r, i, ranks);
#else
      e = launch_call(rank, r, i);
#endif
    } catch (const std::exception& ex) {  // FLASHINFER_CHECK throws
      message = ex.what();
      e = cudaErrorInvalidValue;
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      failures.push_back({"launch", "rank " + std::to_string(r) + " call " + std::to_string(i) +
                                        ": FlashInfer's launcher refused it: " +
                                        (message.empty() ? cudaGetErrorString(e) : message)});
      return;
    }
    if (c.pdl_consumer)
      launch_consumer(c.pattern_is_allreduce ? b.allreduce_out : b.norm_out, b.consumer_copy,
                      static_cast<std::size_t>(c.tokens) * repro::kHidden * 2, rank.stream);
    check(cudaEventRecord(b.done, rank.stream), "cudaEventRecord");
  }
}

#if FC_FAMILY_FUSION || FC_FAMILY_MOE
// What a hung call's ranks hold, read beside the running kernel (copies on each rank's idle side
// stream, bounded): each rank's control words and, per Lamport buffer and slot of call i's
// one-shot layout, how many tokens still hold a -0 sentinel element and the first of them. The
// poll that waits is on a slot whose data never came, or came and was cleared.
std::string lamport_state(std::vector<Rank>& ranks, int i) {
  const std::size_t slot_bytes =
      static_cast<std::size_t>(repro::kCallCases[i].tokens) * repro::kHidden * sizeof(T);
  const std::size_t token_bytes = static_cast<std::size_t>(repro::kHidden) * sizeof(T);
  std::string text;
  for (int r = 0; r < kN; ++r) {
    Rank& rank = ranks[static_cast<std::size_t>(r)];
    use_rank(rank);
    // The side stream (idle by now) and host memory pinned at set-up: nothing here may wait
    // for the hung kernel.
    std::int32_t* ctrl = rank.state_host;
    std::uint8_t* bufs = reinterpret_cast<std::uint8_t*>(rank.state_host + 8);
    const std::size_t bytes = 3 * repro::kCommSize;
    cudaError_t e = cudaMemcpyAsync(ctrl, rank.ctrl, 5 * sizeof(std::int32_t),
                                    cudaMemcpyDeviceToHost, rank.side);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(bufs, static_cast<std::uint8_t*>(rank.shared) + lamport_offset(), bytes,
                          cudaMemcpyDeviceToHost, rank.side);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (e == cudaSuccess && cudaStreamQuery(rank.side) == cudaErrorNotReady &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (e == cudaSuccess) e = cudaStreamQuery(rank.side);
    if (e != cudaSuccess)
      return text + "\n    rank " + std::to_string(r) + ": state not readable (" +
             cudaGetErrorString(e) + ")";
    char line[160];
    std::snprintf(line, sizeof(line),
                  "\n    rank %d: counter %d, flag %d (data buffer %d), clear size %d:", r, ctrl[0],
                  ctrl[2], ctrl[2] % 3, ctrl[4]);
    text += line;
    for (int b = 0; b < 3; ++b)
      for (int slot = 0; slot < kN; ++slot) {
        const std::uint8_t* base = bufs + b * repro::kCommSize + slot * slot_bytes;
        int first = -1, count = 0;
        for (int t = 0; t < repro::kCallCases[i].tokens; ++t) {
          bool sentinel = false;
          for (std::size_t at = 0; at + 1 < token_bytes && !sentinel; at += sizeof(T))
            sentinel = base[t * token_bytes + at] == 0 && base[t * token_bytes + at + 1] == 0x80;
          if (sentinel && first < 0) first = t;
          count += sentinel ? 1 : 0;
        }
        std::snprintf(line, sizeof(line), " b%d/s%d %s", b, slot,
                      count == 0 ? "full"
                                 : (std::to_string(count) + " tokens -0 (first " +
                                    std::to_string(first) + ")")
                                       .c_str());
        text += line;
      }
  }
  return text;
}
#endif

// Waits for calls [first, last] of every rank, bounded: a call still running at the bound is
// a hang, reported with the first rank and call that had not finished.
void wait_bounded(std::vector<Rank>& ranks, int first, int last, double timeout_s,
                  std::vector<Failure>& failures) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    bool all = true;
    for (int i = first; i <= last && all; ++i)
      for (Rank& rank : ranks) {
        const cudaError_t e = cudaEventQuery(rank.calls[static_cast<std::size_t>(i)].done);
        if (e == cudaErrorNotReady) {
          all = false;
          break;
        }
        check(e, "a kernel of the case");
      }
    if (all) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  for (int i = first; i <= last; ++i)
    for (int r = 0; r < kN; ++r)
      if (cudaEventQuery(
              ranks[static_cast<std::size_t>(r)].calls[static_cast<std::size_t>(i)].done) ==
          cudaErrorNotReady) {
        char line[256];
        std::snprintf(line, sizeof(line),
                      "rank %d call %d: still running %.1f s after the launch (a call takes "
                      "microseconds): its polls never saw what they wait for",
                      r, i, timeout_s);
#if FC_FAMILY_FUSION || FC_FAMILY_MOE
        failures.push_back({"hang", line + lamport_state(ranks, i)});
#else
        failures.push_back({"hang", line});
#endif
        return;
      }
}

std::vector<std::uint8_t> download(const void* device, std::size_t bytes) {
  std::vector<std::uint8_t> host(bytes);
  check(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost), "download");
  return host;
}

float to_float(std::uint16_t bits) {
#if FC_BF16
  const std::uint32_t word = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &word, 4);
  return f;
#else
  return __half2float(__ushort_as_half(bits));
#endif
}

// Bit-exact outputs (allreduce, residual): the first element that differs.
void compare_bits(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want,
                  const std::string& where, std::vector<Failure>& failures) {
  const auto* g = reinterpret_cast<const std::uint16_t*>(got.data());
  const auto* w = reinterpret_cast<const std::uint16_t*>(want.data());
  for (std::size_t e = 0; e < got.size() / 2; ++e)
    if (g[e] != w[e]) {
      char line[320];
      std::snprintf(line, sizeof(line),
                    "%s at element %zu: got %.9g (0x%04x) expected %.9g (0x%04x)", where.c_str(), e,
                    to_float(g[e]), g[e], to_float(w[e]), w[e]);
      failures.push_back({"reference", line});
      return;
    }
}

// norm_out within the reference's bound for each element (NaN only where the reference has
// NaN; an infinite bound makes no claim), as fusioncheck's check compares it.
void compare_norm(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want,
                  const std::vector<std::uint8_t>& allowed_bytes, const std::string& where,
                  std::vector<Failure>& failures) {
  const auto* g = reinterpret_cast<const std::uint16_t*>(got.data());
  const auto* w = reinterpret_cast<const std::uint16_t*>(want.data());
  const auto* allowed = reinterpret_cast<const float*>(allowed_bytes.data());
  for (std::size_t e = 0; e < got.size() / 2; ++e) {
    if (std::isinf(allowed[e])) continue;
    const double a = to_float(g[e]), b = to_float(w[e]);
    const bool ok = (std::isnan(a) || std::isnan(b)) ? (std::isnan(a) && std::isnan(b))
                                                     : (a == b || std::fabs(a - b) <= allowed[e]);
    if (!ok) {
      char line[320];
      std::snprintf(line, sizeof(line), "%s at element %zu: got %.9g expected %.9g (allowed %.9g)",
                    where.c_str(), e, a, b, static_cast<double>(allowed[e]));
      failures.push_back({"reference", line});
      return;
    }
  }
}

// Call i's outputs on every rank against the reference, then every rank's against rank 0's.
void check_call(std::vector<Rank>& ranks, int i, std::vector<Failure>& failures) {
  const repro::CallCase& c = repro::kCallCases[i];
  const std::size_t bytes = static_cast<std::size_t>(c.tokens) * repro::kHidden * 2;
  const auto want_residual =
      c.pattern_is_allreduce ? std::vector<std::uint8_t>{}
                             : read_data(repro::data_name(i, -1, "expected_residual_out"), bytes);
  const auto want_norm = c.norm_out && !c.pattern_is_allreduce
                             ? read_data(repro::data_name(i, -1, "expected_norm_out"), bytes)
                             : std::vector<std::uint8_t>{};
  const auto allowed = want_norm.empty()
                           ? std::vector<std::uint8_t>{}
                           : read_data(repro::data_name(i, -1, "norm_allowed"), bytes * 2);
  const auto want_sum = c.check_allreduce_out
                            ? read_data(repro::data_name(i, -1, "expected_allreduce_out"), bytes)
                            : std::vector<std::uint8_t>{};
  std::vector<std::uint8_t> first_outputs;
  for (int r = 0; r < kN; ++r) {
    Rank& rank = ranks[static_cast<std::size_t>(r)];
    CallBuffers& b = rank.calls[static_cast<std::size_t>(i)];
    use_rank(rank);
    const std::string where = "rank " + std::to_string(r) + " call " + std::to_string(i) + ": ";
    std::vector<std::uint8_t> outputs;
    if (c.check_allreduce_out) {
      const auto sum = download(b.allreduce_out, bytes);
      compare_bits(sum, want_sum, where + "allreduce_out", failures);
      outputs.insert(outputs.end(), sum.begin(), sum.end());
    }
    if (!c.pattern_is_allreduce) {
      const auto residual = download(b.residual_out, bytes);
      compare_bits(residual, want_residual, where + "residual_out", failures);
      outputs.insert(outputs.end(), residual.begin(), residual.end());
      if (c.norm_out) {
        const auto norm = download(b.norm_out, bytes);
        compare_norm(norm, want_norm, allowed, where + "norm_out", failures);
        outputs.insert(outputs.end(), norm.begin(), norm.end());
      }
    }
    if (c.pdl_consumer) {
      const auto copy = download(b.consumer_copy, bytes);
      const auto out = download(c.pattern_is_allreduce ? b.allreduce_out : b.norm_out, bytes);
      if (copy != out)
        failures.push_back({"pdl-consumer", where + "the next layer, reading before its wait, saw "
                                                    "other values than the call's final output"});
    }
    if (r == 0) first_outputs = outputs;
    else if (outputs != first_outputs)
      failures.push_back({"agreement", where + "its outputs differ bitwise from rank 0's"});
  }
}

#if FC_SYNC_DELAY
// This tree's line for the exported hold: the same line where it is an exit here, else the exit
// at the same place among as many exits (a tree whose lines moved), else --sync-line.
int site_line(const repro::SyncDelay& d, int line_option) {
  constexpr int kSites[] = {FC_SYNC_SITES};
  constexpr int kCount = static_cast<int>(sizeof(kSites) / sizeof(kSites[0]));
  const bool here = std::find(std::begin(kSites), std::end(kSites), d.line) != std::end(kSites);
  if (line_option != 0) {
    if (std::find(std::begin(kSites), std::end(kSites), line_option) == std::end(kSites))
      cannot_run("--sync-line " + std::to_string(line_option) +
                 ": no synchronisation exit of this header is on that line");
    return line_option;
  }
  if (here) return d.line;
  if (kCount == repro::kSyncSiteCount) {
    std::printf("line %d of the exported header is line %d here (exit %d of %d)\n", d.line,
                kSites[d.site], d.site + 1, kCount);
    return kSites[d.site];
  }
  cannot_run("line " + std::to_string(d.line) + " is no synchronisation exit of this header, " +
             "which has " + std::to_string(kCount) + " (the exported one " +
             std::to_string(repro::kSyncSiteCount) + "): --sync-line N names the matching one");
}

// Each rank's in-kernel delay. Ranks on GPUs of their own each have their module: plan 0 for
// its only rank. Ranks sharing GPU 0 share one module: a plan per rank, which the sites that know
// their rank (the polls in a kernel body) honour; a barrier in a helper cannot tell ranks apart.
// hold_ns >= 0 replaces the exported time (0: no in-kernel delay at all).
void set_sync_delays(std::vector<Rank>& ranks, int line_option, long hold_ns) {
  constexpr int kRankSites[] = {0, FC_SYNC_RANK_SITES};
  const bool shared = kN > 1 && ranks[0].device == ranks[1].device;
  if (shared && kN > kFcSyncDelayPlans)
    cannot_run("in-kernel delays for more than " + std::to_string(kFcSyncDelayPlans) +
               " ranks on one GPU");
  for (int r = 0; r < kN; ++r) {
    const repro::SyncDelay& d = repro::kSyncDelays[r];
    FcSyncDelayPlan plan;
    if (d.line != 0 && hold_ns == 0)
      std::printf("rank %d: its exported in-kernel delay left out (--hold-ns 0)\n", r);
    if (d.line != 0 && hold_ns != 0) {
      plan.line = site_line(d, line_option);
      plan.block = d.block;
      plan.ns = hold_ns > 0 ? static_cast<std::uint32_t>(hold_ns) : d.ns;
      plan.rank = shared ? r : -1;
      if (shared && std::find(std::begin(kRankSites), std::end(kRankSites), plan.line) ==
                        std::end(kRankSites))
        cannot_run("rank " + std::to_string(r) + " holds a block at line " +
                   std::to_string(plan.line) + ", a barrier that does not know its rank: with " +
                   "the ranks on one GPU it would hold every rank's block (reproduce it with " +
                   "fusioncheck, or one GPU per rank)");
      std::printf("rank %d holds block %d for %u ns at line %d of the header, every call\n", r,
                  d.block, plan.ns, plan.line);
    }
    Rank& rank = ranks[static_cast<std::size_t>(r)];
    use_rank(rank);
    fc_set_sync_delay_plan<<<1, 1, 0, rank.stream>>>(shared ? r : 0, plan);
    check(cudaGetLastError(), "setting the in-kernel delay");
    check(cudaStreamSynchronize(rank.stream), "setting the in-kernel delay");
  }
}
#endif

// The command line: the bound on a call, how many runs (the exported delays repeat), whether
// ranks sharing a GPU share all its SMs, and the line and time of an in-kernel delay in this
// tree (hold_ns -1: the exported time).
struct Options {
  double timeout = 10.0;
  int runs = repro::kRuns;
  bool whole_gpu = false;
  int sync_line = 0;
  long hold_ns = -1;
  bool delays = true;  // the exported seeded delays (pauses, staggered starts, held ranks)
};

Options parse_options(int argc, char** argv) {
  Options o;
  const std::string usage = "usage: " + std::string(argv[0]) +
                            " [--timeout SECONDS] [--runs N] [--whole-gpu] [--sync-line N]"
                            " [--hold-ns N] [--no-delays]";
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--whole-gpu") {
      o.whole_gpu = true;
      continue;
    }
    if (arg == "--no-delays") {
      o.delays = false;
      continue;
    }
    if (a + 1 >= argc) cannot_run(usage);
    char* end = nullptr;
    if (arg == "--timeout") {
      o.timeout = std::strtod(argv[++a], &end);
      if (*end != '\0' || !(o.timeout >= 0.1 && o.timeout <= 600))
        cannot_run("--timeout takes seconds in [0.1, 600]");
    } else if (arg == "--runs") {
      const long runs = std::strtol(argv[++a], &end, 10);
      if (*end != '\0' || runs < 1 || runs > 100000) cannot_run("--runs takes 1 to 100000");
      o.runs = static_cast<int>(runs);
    } else if (arg == "--sync-line" && FC_SYNC_DELAY) {
      const long line = std::strtol(argv[++a], &end, 10);
      if (*end != '\0' || line < 1 || line > 1000000) cannot_run("--sync-line takes a line number");
      o.sync_line = static_cast<int>(line);
    } else if (arg == "--hold-ns" && FC_SYNC_DELAY) {
      const long ns = std::strtol(argv[++a], &end, 10);
      if (*end != '\0' || ns < 0 || ns > 100000000)
        cannot_run("--hold-ns takes nanoseconds in [0, 100000000] (0: no in-kernel delay)");
      o.hold_ns = ns;
    } else {
      cannot_run(usage);
    }
  }
  return o;
}

}  // namespace

// What the program was doing, for a crash report (a signal handler may read it).
volatile const char* g_phase = "start";

extern "C" void on_crash(int signal) {
  char line[160];
  const int n = std::snprintf(line, sizeof(line), "CRASHED (exit 1): signal %d during %s\n", signal,
                              const_cast<const char*>(g_phase));
  if (n > 0) (void)!write(1, line, static_cast<std::size_t>(n));
  std::_Exit(1);
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // every line out at once, whatever comes after
  for (int sig : {SIGILL, SIGSEGV, SIGBUS, SIGFPE, SIGABRT}) std::signal(sig, on_crash);
  // Before any CUDA call. The ranks share this process: under CUDA's default lazy loading the
  // first launch of a kernel (a delay kernel, another instance) may wait for every kernel of
  // the context, among them a rank's call spinning on a peer whose call is not launched yet.
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  const Options options = parse_options(argc, argv);
  const double timeout = options.timeout;
  std::printf("reproducer of %s (%s)\n", repro::kFinding, repro::kFamily);
  std::printf("header: %s\n  sha256 %s (exported against %s)\n", FC_HEADER_PATH, FC_HEADER_SHA256,
              repro::kExportedHeaderSha256);
  g_phase = "placing the ranks";
  std::vector<Rank> ranks = place_ranks(options.whole_gpu);
  g_phase = "making the workspace";
  make_workspace(ranks);
  g_phase = "loading the inputs";
  for (int r = 0; r < kN; ++r) make_call_buffers(ranks[static_cast<std::size_t>(r)], r);
  for (Rank& rank : ranks) use_rank(rank), check(cudaDeviceSynchronize(), "set-up");
#if FC_SYNC_DELAY
  g_phase = "setting the in-kernel delays";
  set_sync_delays(ranks, options.sync_line, options.hold_ns);
#endif
  std::vector<Failure> failures;
  int previous_elems = 0;
  for (int run = 0; run < options.runs; ++run) {
    for (Rank& rank : ranks) reset_outputs(rank);
    for (Rank& rank : ranks) use_rank(rank), check(cudaDeviceSynchronize(), "canaries");
    for (int i = 0; i < repro::kCalls; ++i) {
      const int elems = repro::kCallCases[i].tokens * repro::kHidden;
      if (FC_FAMILY_LEGACY && previous_elems != 0 && elems != previous_elems)
        for (Rank& rank : ranks) fill_sentinel(rank);  // it clears by the current call's layout
      previous_elems = elems;
      g_phase = "launching a call";
      enqueue_call(ranks, run, i, options.delays, failures);
      if (!failures.empty()) verdict(failures, run, options.runs, options.delays);
      if (!repro::kBackToBack) {
        wait_bounded(ranks, i, i, timeout, failures);
        if (!failures.empty()) verdict(failures, run, options.runs, options.delays);
      }
    }
    if (repro::kBackToBack) wait_bounded(ranks, 0, repro::kCalls - 1, timeout, failures);
    if (!failures.empty()) verdict(failures, run, options.runs, options.delays);
    g_phase = "checking the outputs";
    for (int i = 0; i < repro::kCalls; ++i) check_call(ranks, i, failures);
    if (!failures.empty()) verdict(failures, run, options.runs, options.delays);
  }
  verdict(failures, options.runs - 1, options.runs, options.delays);
}
