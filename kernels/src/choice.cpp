#include "fusioncheck/kernels/choice.hpp"

#include <limits>

namespace fusioncheck::kernels {

// One-shot moves (N-1) x size per rank over the links and reduces the whole tensor on every
// rank; two-shot moves 2 (N-1)/N x size and reduces 1/N of it, but pays a second round of
// synchronisation. At 2 ranks both move the same bytes, so one-shot is never slower
// (measured up to 2048 x 8192 on two H200s, docs/bench.md). The 4- to 16-rank sizes are
// estimates from that ratio and from 4 ranks sharing one H200 (two-shot faster from 1 MiB
// per rank): our runs of more ranks share one GPU, which says nothing about links.
bool twoshot_preferred(int ranks, std::uint64_t input_bytes_per_rank) {
  std::uint64_t from = std::numeric_limits<std::uint64_t>::max();
  if (ranks == 4) from = 1u << 20;
  if (ranks == 8) from = 256u << 10;
  if (ranks == 16) from = 128u << 10;
  return input_bytes_per_rank >= from;
}

}  // namespace fusioncheck::kernels
