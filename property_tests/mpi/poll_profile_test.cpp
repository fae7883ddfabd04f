// The poll profile's reduction (gpu bench --wait-profile --kernel): per line, over the blocks
// that polled there, per call.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "fusioncheck/gpu/poll_profile.hpp"

namespace fusioncheck::gpu {
namespace {

PollSiteTime at(int block, int line, std::uint64_t polls, std::uint64_t cycles) {
  PollSiteTime t;
  t.block = block;
  t.line = line;
  t.polls = polls;
  t.cycles = cycles;
  return t;
}

TEST(PollProfile, SumsCallsPerBlockAndAveragesOverTheBlocksThatPolled) {
  // Two calls; line 900 polled by blocks 0 and 3, line 640 by block 1 only. 1 cycle = 0.5 us.
  const std::vector<PollSiteTime> entries = {at(0, 900, 2, 100), at(3, 900, 1, 300),
                                             at(1, 640, 1, 40),  at(0, 900, 2, 100),
                                             at(3, 900, 1, 500), at(1, 640, 1, 60)};
  const auto sites = summarize_poll_sites(entries, 2, 0.5);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].line, 640);  // ascending lines
  EXPECT_EQ(sites[0].blocks, 1);
  EXPECT_DOUBLE_EQ(sites[0].mean_us, 25.0);  // (40 + 60) / 2 calls x 0.5
  EXPECT_DOUBLE_EQ(sites[0].polls_per_call, 1.0);
  EXPECT_EQ(sites[1].line, 900);
  EXPECT_EQ(sites[1].blocks, 2);
  ASSERT_EQ(sites[1].by_block_us.size(), 4u);  // blocks 0..3, the two between did not poll
  EXPECT_DOUBLE_EQ(sites[1].by_block_us[0], 50.0);
  EXPECT_DOUBLE_EQ(sites[1].by_block_us[1], 0.0);
  EXPECT_DOUBLE_EQ(sites[1].by_block_us[3], 200.0);
  EXPECT_DOUBLE_EQ(sites[1].mean_us, 125.0);  // over the two blocks that polled, not four
  EXPECT_DOUBLE_EQ(sites[1].max_us, 200.0);
  EXPECT_DOUBLE_EQ(sites[1].polls_per_call, 1.5);  // (4 + 2) / 2 calls / 2 blocks
}

TEST(PollProfile, NoEntriesNoSites) { EXPECT_TRUE(summarize_poll_sites({}, 5, 1.0).empty()); }

TEST(PollProfile, MalformedEntriesAndNoCallsAreRefused) {
  EXPECT_THROW(summarize_poll_sites({at(0, 900, 1, 1)}, 0, 1.0), std::invalid_argument);
  EXPECT_THROW(summarize_poll_sites({at(0, 0, 1, 1)}, 1, 1.0), std::invalid_argument);
  EXPECT_THROW(summarize_poll_sites({at(-1, 900, 1, 1)}, 1, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace fusioncheck::gpu
