// Profiles, default configurations and the validation of sizes.
#include "fusioncheck/sim/config.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>

#include "fusioncheck/protocol/workspace.hpp"

namespace fusioncheck::sim {

const Profile* find_profile(std::string_view name) {
  for (const auto& p : kProfiles)
    if (p.name == name) return &p;
  return nullptr;
}

std::string profile_names() {
  std::string out;
  for (const auto& p : kProfiles) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

SimConfig default_config() {
  SimConfig c;
  c.ranks = 2;
  c.blocks = 2;
  c.vectors_per_block = 2;
  c.elems_per_vector = 2;
  using K = CallKind;
  c.calls = {{K::one_shot, 4}, {K::one_shot, 2}, {K::two_shot, 4}, {K::one_shot, 4},
             {K::one_shot, 4}, {K::two_shot, 2}, {K::one_shot, 3}};
  return c;
}

SimConfig tiny_config() {
  SimConfig c;
  c.ranks = 2;
  c.blocks = 2;
  c.vectors_per_block = 1;
  c.elems_per_vector = 2;  // two elements: NVLink may split the vector, PCIe does not
  c.calls = {{CallKind::one_shot, 2},
             {CallKind::one_shot, 1},
             {CallKind::one_shot, 2},
             {CallKind::one_shot, 2}};
  return c;
}

SimConfig provoking_config(protocol::Mutant mutant) {
  SimConfig c = default_config();
  if (mutant == protocol::Mutant::twoshot_gather_overlap) {
    // A two-shot call of 2 vectors right before the two-shot call of 4: the larger call's
    // scatter slots reach past the smaller call's gather region.
    const auto ts4 = std::find(c.calls.begin(), c.calls.end(), CallSpec{CallKind::two_shot, 4});
    c.calls.insert(ts4, CallSpec{CallKind::two_shot, 2});
  }
  return c;
}

SimConfig provoking_tiny_config(protocol::Mutant mutant) {
  SimConfig c = tiny_config();
  if (mutant == protocol::Mutant::twoshot_gather_overlap) {
    // The chunk (ceil(vectors / ranks)) must grow between two two-shot calls: 3 vectors.
    // Random and PCT find it here at once; the exhaustive search within 3 deviations does
    // not (rank 1 must finish a whole call while rank 0 is parked before its gather read).
    c.blocks = 3;
    c.calls = {{CallKind::two_shot, 1}, {CallKind::two_shot, 3}};
  }
  return c;
}

std::vector<CallSpec> expanded_calls(const SimConfig& config) {
  std::vector<CallSpec> out;
  for (int r = 0; r < config.graph_replays; ++r)
    out.insert(out.end(), config.calls.begin(), config.calls.end());
  return out;
}

int max_vectors(const SimConfig& config) {
  int m = 1;
  for (const auto& c : config.calls) m = std::max(m, c.vectors);
  return m;
}

std::string validate(const SimConfig& c, const Profile& p) {
  using protocol::kMaxRanks;
  using protocol::kMinRanks;
  if (c.ranks < kMinRanks || c.ranks > kMaxRanks)
    return fmt::format("ranks must be in [{}, {}], got {}", kMinRanks, kMaxRanks, c.ranks);
  if (c.blocks < 1 || c.blocks > kMaxBlocks)
    return fmt::format("blocks must be in [1, {}], got {}", kMaxBlocks, c.blocks);
  if (c.blocks > p.sm_count)
    return fmt::format(
        "{} blocks cannot be co-resident on {} ({} SMs); the spin-wait "
        "protocol needs every block resident",
        c.blocks, p.name, p.sm_count);
  if (c.vectors_per_block < 1 || c.vectors_per_block > kMaxVectorsPerBlock)
    return fmt::format("vectors per block must be in [1, {}], got {}", kMaxVectorsPerBlock,
                       c.vectors_per_block);
  if (c.elems_per_vector < 1 || c.elems_per_vector > kMaxElemsPerVector)
    return fmt::format("elements per vector must be in [1, {}], got {}", kMaxElemsPerVector,
                       c.elems_per_vector);
  if (c.calls.empty()) return "the call sequence is empty";
  if (c.graph_replays < 1 || c.graph_replays > 64)
    return fmt::format("graph replays must be in [1, 64], got {}", c.graph_replays);
  const long total = static_cast<long>(c.calls.size()) * c.graph_replays;
  if (total > kMaxTotalCalls)
    return fmt::format("at most {} calls in all, got {}", kMaxTotalCalls, total);
  const int grid_vectors = c.blocks * c.vectors_per_block;
  for (const auto& call : c.calls) {
    if (call.vectors < 1)
      return fmt::format("a call must reduce at least 1 vector, got {}", call.vectors);
    if (call.vectors > grid_vectors)
      return fmt::format("a call of {} vectors does not fit a grid of {} blocks x {} vectors",
                         call.vectors, c.blocks, c.vectors_per_block);
  }
  return {};
}

std::string format_calls(const std::vector<CallSpec>& calls) {
  std::string out;
  for (const auto& c : calls) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}{}", c.kind == CallKind::one_shot ? "os" : "ts", c.vectors);
  }
  return out;
}

bool parse_calls(std::string_view text, std::vector<CallSpec>& out) {
  out.clear();
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return false;  // trailing comma
    if (item.size() < 3) return false;
    CallSpec spec;
    if (item.substr(0, 2) == "os") spec.kind = CallKind::one_shot;
    else if (item.substr(0, 2) == "ts") spec.kind = CallKind::two_shot;
    else return false;
    const auto digits = item.substr(2);
    const auto [ptr, ec] =
        std::from_chars(digits.data(), digits.data() + digits.size(), spec.vectors);
    if (ec != std::errc{} || ptr != digits.data() + digits.size()) return false;
    out.push_back(spec);
  }
  return !out.empty();
}

}  // namespace fusioncheck::sim
