#pragma once
// What the sim runs: an architecture profile (data, not code paths), the sizes of the
// model (ranks x blocks x vectors), and the host-side call sequence every rank executes.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fusioncheck/protocol/mutants.hpp"
#include "fusioncheck/protocol/workspace.hpp"

namespace fusioncheck::sim {

// How stores between two different GPUs may be reordered on their way.
enum class LinkOrder : std::uint8_t {
  per_thread_fifo,  // PCIe: posted writes of one thread arrive in issue order
  unordered,        // NVLink: any in-flight store may overtake any other
};

struct Profile {
  std::string_view name;
  int compute_capability;  // 90, 100, 120
  int sm_count;            // upper bound on co-resident blocks of one kernel
  int smem_per_block_kib;
  bool clusters;  // thread-block clusters (not used by the modelled steps)
  int max_cluster_size;
  bool pdl;  // programmatic dependent launch
  std::string_view interconnect;
  LinkOrder link_order;         // between GPUs; inside one GPU stores are always unordered
  int store_granularity_bytes;  // smallest piece a vector store may arrive in
  bool multicast = false;       // NVLink multicast objects (NVLS): the MNNVL protocol runs here
  int max_ranks = protocol::kMaxRanks;
  // Ranks per NVLink domain; 0: one domain. A store into another domain takes two hops (to
  // the fabric, then to its destination): later and more variable than one inside it.
  int domain_ranks = 0;
};

// Model parameters, chosen adversarially within what the hardware guarantees: an aligned
// 32-bit store is single-copy atomic on every profile, so pieces are never smaller than
// one element unless the torn-element mutant says so.
inline constexpr std::array<Profile, 4> kProfiles{{
    {"sm90-nvlink", 90, 132, 227, true, 8, true, "NVLink", LinkOrder::unordered, 4, true},
    {"sm90-pcie", 90, 114, 227, true, 8, true, "PCIe", LinkOrder::per_thread_fifo, 8},
    {"sm100-nvlink", 100, 148, 227, true, 8, true, "NVLink", LinkOrder::unordered, 4, true},
    {"sm120-pcie", 120, 188, 99, true, 8, true, "PCIe", LinkOrder::per_thread_fifo, 8},
}};
// The rack-scale profiles of the MNNVL protocol (FlashInfer's trtllm_mnnvl_allreduce.cuh):
// GB200/GB300 NVL72, one NVLink domain of 72 GPUs; and 72 ranks over two domains of 36, whose
// stores between domains travel further.
inline constexpr std::array<Profile, 2> kRackProfiles{{
    {"nvl72", 100, 148, 227, true, 8, true, "NVLink (NVL72)", LinkOrder::unordered, 4, true, 72},
    {"nvl72-mnnvl", 100, 148, 227, true, 8, true, "NVLink (2 domains)", LinkOrder::unordered, 4,
     true, 72, 36},
}};

const Profile* find_profile(std::string_view name);  // kProfiles, then kRackProfiles
std::string profile_names();                         // "a, b, c" for error messages

// one_shot, two_shot: our Lamport kernels. pcie_*: the SM kernels of FlashInfer's PCIe
// allreduce (docs/protocols.md "PCIe sentinel protocol"): pcie_push pushes to every rank and
// stages in the pack region (the unstaged variant); pcie_rsag reduce-scatters then
// all-gathers in the block region (staged, 4 ranks); pcie_flat_rsag does the same in the pack
// region (flat staged, 8 ranks); pcie_barrier is a barrier kernel in the block region (the
// 8-rank topology kernels): raw payload, left in place. vllm_*: vLLM's custom allreduce
// (docs/protocols.md "vLLM barrier protocol"): the one-stage kernel (start barrier, every rank
// reads every input, end barrier) and the two-stage one (start barrier, reduce-scatter into
// the temporary buffer, a fenced middle barrier, all-gather). mnnvl_*: FlashInfer's MNNVL
// Lamport allreduce over multicast (docs/protocols.md "MNNVL Lamport protocol"): one-shot (each
// rank multicasts its tokens, every rank reduces every token) and two-shot (scatter to the
// token's owner, the owner reduces and multicasts the sum); N counts tokens, one block each.
// sglang_*: SGLang's push plane (docs/protocols.md "SGLang push protocol"): the generic
// one-shot and two-shot push kernels (N vectors, a phase counter per block), and the fused
// MoE-finalize one-shot kernel (N tokens of two vectors, a cluster of two blocks and a phase
// counter per token, a bumper cluster flipping the counters past the tokens). ce_*: the
// copy-engine ring of FlashInfer's PCIe allreduce (docs/protocols.md "Copy-engine ring"):
// ce_flat publishes readiness through one-thread flag kernels, ce_memop through stream memory
// operations (one piece; with more it falls back to the flag kernels); N counts the pieces
// each chunk travels in (1 to 4).
enum class CallKind : std::uint8_t {
  one_shot,
  two_shot,
  pcie_push,
  pcie_rsag,
  pcie_flat_rsag,
  pcie_barrier,
  vllm_1stage,
  vllm_2stage,
  mnnvl_oneshot,
  mnnvl_twoshot,
  sglang_push1,
  sglang_push2,
  sglang_fused,
  ce_flat,
  ce_memop
};

// Which protocol a configuration exercises: its calls say (one configuration holds one).
enum class SimProtocol : std::uint8_t { lamport, pcie, vllm, mnnvl, sglang, ce_ring };
inline constexpr SimProtocol kSimProtocols[] = {SimProtocol::lamport, SimProtocol::pcie,
                                                SimProtocol::vllm,    SimProtocol::mnnvl,
                                                SimProtocol::sglang,  SimProtocol::ce_ring};
// "lamport", "pcie", "vllm", "mnnvl", "sglang", "ce-ring"
const char* protocol_name(SimProtocol protocol);
// How a kill-table row or a counterexample names a model other than the Lamport one:
// " (PCIe)", " (vLLM)", " (MNNVL)", " (SGLang)", " (CE ring)"; "" for the Lamport model.
const char* protocol_label(SimProtocol protocol);
// The profiles a protocol is checked on (`--profile all`, the kill table): the single-node
// ones (kProfiles), and the rack-scale ones for the MNNVL protocol.
std::span<const Profile> profiles_of(SimProtocol protocol);
SimProtocol protocol_of_kind(CallKind kind);
constexpr bool is_pcie(CallKind kind) {
  return kind == CallKind::pcie_push || kind == CallKind::pcie_rsag ||
         kind == CallKind::pcie_flat_rsag || kind == CallKind::pcie_barrier;
}

struct CallSpec {
  CallKind kind = CallKind::one_shot;
  int vectors = 1;  // vectors per rank this call reduces (the token count)
  bool operator==(const CallSpec&) const = default;
};

// The barrier of vLLM's custom allreduce the vLLM model runs (docs/protocols.md "vLLM barrier
// protocol"). counter_sets: FlashInfer's copy (from vLLM 0.8.2): a lane counts its barriers
// and stores the count into one of two counter sets by its parity. start_end: vLLM's own
// header today (csrc/custom_collective_common.cuh): one flag per block, read by the barrier
// lanes and advanced by thread 0; start and end barriers store into arrays of their own.
enum class VllmBarrier : std::uint8_t { counter_sets, start_end };
// "counter-sets", "start-end"
const char* vllm_barrier_name(VllmBarrier barrier);
std::optional<VllmBarrier> parse_vllm_barrier(std::string_view name);

// Model sizes. One model thread moves one vector of `elems_per_vector` 32-bit elements
// (the Lamport buffer is fp32 in the model, so the sentinel is 0x80000000).
struct SimConfig {
  int ranks = 2;
  int blocks = 2;
  int vectors_per_block = 2;
  int elems_per_vector = 2;
  std::vector<CallSpec> calls;  // the host-side sequence, same on every rank
  int graph_replays = 1;        // the sequence is replayed this many times (CUDA graph)
  bool late_trigger = false;    // launch_dependents at the end instead of after the wait
  // The calls alternate over this many streams of each rank (call c on stream c % streams):
  // a call follows the one before it on its own stream only. Two streams issuing on one
  // communicator is the use SGLang's push plane does not support (sglang#31117).
  int streams = 1;
  VllmBarrier vllm_barrier = VllmBarrier::counter_sets;
  // start_end: the barrier lanes of a block read its flag each at a step of its own, as the
  // PTX model allows, instead of in one step (they are threads of warp 0, which loads the flag
  // converged on the GPU).
  bool independent_lanes = false;
  bool operator==(const SimConfig&) const = default;
};

inline constexpr int kMaxElemsPerVector = 4;
inline constexpr int kMaxBlocks = 64;
inline constexpr int kMaxVectorsPerBlock = 64;
inline constexpr int kMaxTotalCalls = 1000;  // tags hold the call index in 10 bits

SimProtocol protocol_of(const SimConfig& config);

// The configuration of an ordinary run. Lamport: 2 ranks, 2 blocks of 2 vectors, token counts
// that shrink and grow, one-shot and two-shot alternating. PCIe: 2 ranks, push and
// reduce-scatter calls of changing size (so the grid changes too).
SimConfig default_config(SimProtocol protocol = SimProtocol::lamport);
// The smallest non-trivial configuration: 2 ranks, 2 blocks, 1 vector each, 4 calls.
// Two elements per vector, so that the profiles' store splitting differs.
SimConfig tiny_config(SimProtocol protocol = SimProtocol::lamport);

// The protocol a mutant's search runs: the PCIe one for a mutant only its model has, else
// `preferred` when the mutant is in that model, else the Lamport one.
SimProtocol mutant_protocol(protocol::Mutant mutant, SimProtocol preferred = SimProtocol::lamport);
// Whether the sim's model of `protocol` builds `mutant` (none: always).
bool in_sim(protocol::Mutant mutant, SimProtocol protocol);
// What a model's constructor requires: a configuration that validates on the profile, holds
// the calls of `protocol`, and a mutant that model builds. Throws std::invalid_argument.
void require_model_input(const SimConfig& config, const Profile& profile, protocol::Mutant mutant,
                         SimProtocol protocol);

// Where a search for `mutant` starts: default_config() / tiny_config() of its protocol,
// except for a mutant whose bug needs a call pattern those sequences lack
// (twoshot-gather-overlap: a two-shot call followed by a larger two-shot call;
// pcie-sentinel-on-barrier-region: barrier calls between sentinel calls).
SimConfig provoking_config(protocol::Mutant mutant, SimProtocol protocol = SimProtocol::lamport);
SimConfig provoking_tiny_config(protocol::Mutant mutant,
                                SimProtocol protocol = SimProtocol::lamport);

std::vector<CallSpec> expanded_calls(const SimConfig& config);
int max_vectors(const SimConfig& config);

// One schedule's work, in element visits: every rank reads every rank's copy of each element
// its grid moves, in every call: ranks^2 x blocks x vectors x elements x calls (with replays).
// The largest grid with the default 7-call sequence is 2.9e7 (about 5 s and 80 MB here).
std::uint64_t schedule_cost(const SimConfig& config);
// Beyond this, one schedule takes minutes and its trace gigabytes: such a configuration is
// refused (validate) before any work.
inline constexpr std::uint64_t kMaxScheduleCost = std::uint64_t{1} << 25;

// Empty when the configuration can run on the profile (and within kMaxScheduleCost), else a
// one-line reason.
std::string validate(const SimConfig& config, const Profile& profile);

// "os4,os2,ts4" <-> calls (PCIe: pp, rs, rf, pb; vLLM: vs, vt; MNNVL: mo, mt; SGLang: sp, st,
// sf; copy-engine ring: cf, cm). parse_calls
// returns false on bad text.
std::string format_calls(const std::vector<CallSpec>& calls);
bool parse_calls(std::string_view text, std::vector<CallSpec>& out);

}  // namespace fusioncheck::sim
