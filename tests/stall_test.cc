// Who stalled (comm/src/stall.h): following each waiting rank's published "waiting for" from the
// ranks a timed-out wait is blocked on.
#include <gtest/gtest.h>

#include <vector>

#include "stall.h"

namespace conflux {
namespace {

// waits[r]: the local rank r waits for, or -1; across[r]: the rank on another host it waits for.
StallFinding find(int me, std::vector<int> waited, std::vector<int> waits, std::vector<int> across = {},
                  int acrossMe = -1) {
  across.resize(waits.size(), -1);
  return findStall(
      me, waited, acrossMe, [&](int r) { return WaitTarget{waits[r], across[r]}; }, static_cast<int>(waits.size()));
}

TEST(Stall, TheRankWaitedForIsTheOneWhenItWaitsForNoOne) {
  StallFinding f = find(0, {2}, {1, -1, -1});
  EXPECT_EQ(f.stalled(), 2);
  EXPECT_FALSE(f.cycle);
}

// A Send/Recv ring 0 -> 1 -> 2 -> 3 -> 0 with rank 2 stopped: rank 0 waits for its neighbour 1,
// which waits for 2, which waits for no one.
TEST(Stall, FollowsTheChainPastHealthyNeighbours) {
  StallFinding f = find(0, {1}, {1, 2, -1, 2});
  EXPECT_EQ(f.stalled(), 2);
  EXPECT_EQ(f.chain, (std::vector<int>{1, 2}));
  EXPECT_EQ(find(3, {0}, {1, 2, -1, 0}).stalled(), 2);
}

TEST(Stall, ItselfAndOutOfRangeRanksAreSkipped) {
  EXPECT_EQ(find(1, {1, 7, -1, 3}, {-1, -1, -1, -1}).stalled(), 3);
  EXPECT_EQ(find(1, {1}, {-1, -1}).stalled(), -1);
  EXPECT_TRUE(find(1, {}, {-1, -1}).chain.empty());
}

TEST(Stall, ACycleIsNoSingleStalledRank) {
  StallFinding back = find(0, {1}, {1, 2, 0});  // 0 -> 1 -> 2 -> 0
  EXPECT_TRUE(back.cycle);
  EXPECT_EQ(back.stalled(), -1);
  StallFinding loop = find(0, {1}, {-1, 2, 1});  // 1 <-> 2, not through 0
  EXPECT_TRUE(loop.cycle);
  EXPECT_EQ(loop.chain, (std::vector<int>{1, 2}));
}

// Ranks 0 and 1 on this host, 2 and 3 (communicator ranks) on another: rank 1 waits for rank 0,
// which waits for rank 2 across the network. No local rank stalled.
TEST(Stall, AChainThatLeavesTheHostEndsAcrossTheNetwork) {
  StallFinding f = find(1, {0}, {-1, 0}, {2, -1});
  EXPECT_EQ(f.chain, (std::vector<int>{0}));
  EXPECT_EQ(f.across, 2);
  EXPECT_EQ(f.stalled(), -1);
  // A local wait comes first: a rank that publishes both is followed locally.
  EXPECT_EQ(find(2, {0}, {1, -1, -1}, {3, -1, -1}).stalled(), 1);
}

TEST(Stall, ARankWaitingOnlyAcrossTheNetworkHasNoLocalChain) {
  StallFinding f = find(0, {}, {-1, -1}, {}, 3);
  EXPECT_TRUE(f.chain.empty());
  EXPECT_EQ(f.across, 3);
  EXPECT_EQ(f.stalled(), -1);
}

}  // namespace
}  // namespace conflux
