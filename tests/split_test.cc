// cfxCommSplit: membership, ordering by key, CFX_SPLIT_NOCOLOR, nesting, and interleaved use of
// parent and child communicators.
#include <gtest/gtest.h>

#include <vector>

#include "harness.h"

namespace cfxtest {
namespace {

class SplitTest : public ::testing::TestWithParam<int> {};

TEST_P(SplitTest, ColorsKeysAndNoColor) {
  runRanks(GetParam(), [](Rank& rk) {
    const int n = rk.nranks, me = rk.rank;
    // Rank n-1 joins nothing; the others split by parity, ordered by descending parent rank.
    int color = me == n - 1 && n > 1 ? CFX_SPLIT_NOCOLOR : me % 2;
    cfxComm_t sub = nullptr;
    CFX_ASSERT_OK(cfxCommSplit(rk.comm, color, -me, &sub, nullptr));
    if (color == CFX_SPLIT_NOCOLOR) {
      EXPECT_EQ(sub, nullptr);
    } else {
      ASSERT_NE(sub, nullptr);
      std::vector<int> members;
      for (int r = n - 1; r >= 0; --r) {
        if (!(r == n - 1 && n > 1) && r % 2 == color) members.push_back(r);
      }
      int subRank = -1, subSize = -1;
      CFX_ASSERT_OK(cfxCommUserRank(sub, &subRank));
      CFX_ASSERT_OK(cfxCommCount(sub, &subSize));
      EXPECT_EQ(subSize, static_cast<int>(members.size()));
      EXPECT_EQ(members[subRank], me);
      // Sum of parent ranks over the sub-communicator, then a gather that shows the order.
      int32_t mine = me, sum = 0;
      std::vector<int32_t> order(subSize);
      CFX_ASSERT_OK(cfxAllReduce(&mine, &sum, 1, cfxInt32, cfxSum, sub, nullptr));
      CFX_ASSERT_OK(cfxAllGather(&mine, order.data(), 1, cfxInt32, sub, nullptr));
      int32_t want = 0;
      for (int r : members) want += r;
      EXPECT_EQ(sum, want);
      for (int i = 0; i < subSize; ++i) EXPECT_EQ(order[i], members[i]);
    }
    // The parent still works, interleaved with the child.
    int32_t one = 1, total = 0;
    CFX_ASSERT_OK(cfxAllReduce(&one, &total, 1, cfxInt32, cfxSum, rk.comm, nullptr));
    EXPECT_EQ(total, n);
    if (sub != nullptr) {
      // Nested: split the child in halves, then destroy both.
      cfxComm_t subsub = nullptr;
      int subRank = 0;
      CFX_ASSERT_OK(cfxCommUserRank(sub, &subRank));
      CFX_ASSERT_OK(cfxCommSplit(sub, subRank / 2, 0, &subsub, nullptr));
      ASSERT_NE(subsub, nullptr);
      int64_t v = 5, w = 0;
      CFX_ASSERT_OK(cfxAllReduce(&v, &w, 1, cfxInt64, cfxMax, subsub, nullptr));
      EXPECT_EQ(w, 5);
      CFX_ASSERT_OK(cfxCommDestroy(subsub));
      CFX_ASSERT_OK(cfxCommDestroy(sub));
    }
  });
}

TEST_P(SplitTest, ConfigTimeoutIsAccepted) {
  runRanks(GetParam(), [](Rank& rk) {
    cfxConfig_t cfg = CFX_CONFIG_INITIALIZER;
    cfg.timeoutMs = 5000;
    cfxComm_t dup = nullptr;
    CFX_ASSERT_OK(cfxCommSplit(rk.comm, 0, rk.rank, &dup, &cfg));
    int32_t x = rk.rank, y = 0;
    CFX_ASSERT_OK(cfxAllReduce(&x, &y, 1, cfxInt32, cfxMax, dup, nullptr));
    EXPECT_EQ(y, rk.nranks - 1);
    CFX_ASSERT_OK(cfxCommDestroy(dup));
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, SplitTest, ::testing::Values(1, 2, 3, 5, 8));

}  // namespace
}  // namespace cfxtest
