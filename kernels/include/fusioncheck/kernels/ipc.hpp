#pragma once
// Every rank's copy of one device allocation, mapped into this process through CUDA IPC:
// what a workspace shares with its peers (ours, and an adapter's for another project's
// kernels). Errors throw (types.hpp).
#include <cstdint>
#include <vector>

#include "fusioncheck/kernels/workspace.hpp"

namespace fusioncheck::kernels {

class PeerMappings {
 public:
  // Collective. Checks that this rank can reach every other rank's GPU (all ranks refuse
  // together: InvalidLaunch naming the pair), exchanges the IPC handle of `mine` (the base
  // of a cudaMalloc allocation on the current device) and opens every peer's.
  PeerMappings(Bootstrap& bootstrap, void* mine);
  ~PeerMappings();  // closes what it opened
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  // Rank r's allocation as this process addresses it (mine for r == my rank).
  std::uint8_t* of(int rank) const { return bases_.at(static_cast<std::size_t>(rank)); }
  const std::vector<std::uint8_t*>& all() const { return bases_; }

 private:
  std::vector<std::uint8_t*> bases_;
  std::vector<void*> opened_;
};

}  // namespace fusioncheck::kernels
