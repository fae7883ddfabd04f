// The in-kernel delay a FlashInfer sync-delay copy runs with (gpu::sync_delay_for): a pure
// function of (seed, rank), inside its bounds, about half of the ranks held, none without a
// seed, sites or a delay.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "fusioncheck/gpu/host_bounded_wait.hpp"

namespace {

using fusioncheck::gpu::sync_delay_for;
using fusioncheck::gpu::SyncDelay;

const std::vector<int> kSites = {413, 733, 741, 790, 796, 801, 1060, 1377};

TEST(SyncDelay, HeldBlocksStayInsideTheirBoundsAndRepeat) {
  int held = 0;
  std::set<int> lines;
  for (std::uint32_t seed = 1; seed <= 2000; ++seed)
    for (int rank = 0; rank < 4; ++rank) {
      const SyncDelay d = sync_delay_for(seed, rank, 20000, kSites.data(), 8);
      EXPECT_EQ(d, sync_delay_for(seed, rank, 20000, kSites.data(), 8)) << "not a pure function";
      if (d.line == 0) {
        EXPECT_EQ(d, SyncDelay{});
        continue;
      }
      ++held;
      lines.insert(d.line);
      EXPECT_NE(std::find(kSites.begin(), kSites.end(), d.line), kSites.end()) << d.line;
      EXPECT_GE(d.ns, 10000u);
      EXPECT_LE(d.ns, 20000u);
      EXPECT_GE(d.block, 0);
      EXPECT_LT(d.block, 1024);
    }
  EXPECT_GT(held, 8000 * 4 / 10);  // about half of 8000 draws
  EXPECT_LT(held, 8000 * 6 / 10);
  EXPECT_EQ(lines.size(), kSites.size()) << "every site is drawn";
}

TEST(SyncDelay, RanksOfOneSeedAreHeldApart) {
  int differ = 0;
  for (std::uint32_t seed = 1; seed <= 200; ++seed)
    differ += !(sync_delay_for(seed, 0, 20000, kSites.data(), 8) ==
                sync_delay_for(seed, 1, 20000, kSites.data(), 8));
  EXPECT_GT(differ, 150);
}

TEST(SyncDelay, NoneWithoutSeedSitesOrDelay) {
  for (std::uint32_t seed = 0; seed < 50; ++seed) {
    EXPECT_EQ(sync_delay_for(seed, 1, 0, kSites.data(), 8), SyncDelay{});
    EXPECT_EQ(sync_delay_for(seed, 1, 20000, nullptr, 0), SyncDelay{});
    EXPECT_EQ(sync_delay_for(seed, 1, 20000, kSites.data(), 0), SyncDelay{});
  }
  for (int rank = 0; rank < 8; ++rank)
    EXPECT_EQ(sync_delay_for(0, rank, 20000, kSites.data(), 8), SyncDelay{});
}

}  // namespace
