// The shared-memory segment's layout (comm/src/shm_layout.h): where each channel lies, and which
// parts each rank maps at init (Layout::mappedAtInit): the control blocks, the staging slots with
// the scratch, and exactly the channels that start or end at that rank.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "shm_layout.h"

namespace conflux {
namespace {

TEST(SegmentLayout, EachRankMapsTheSharedPartsAndItsOwnChannelsAtInit) {
  for (int n : {1, 2, 3, 4, 8}) {
    const Layout l = Layout::fromEnv(n);
    EXPECT_EQ(l.channelOffset(0, 0), l.channelsOffset());
    EXPECT_EQ(l.channelOffset(n - 1, n - 1) + l.channelStride(), l.totalBytes());
    for (int rank = 0; rank < n; ++rank) {
      const auto ranges = l.mappedAtInit(rank);
      ASSERT_EQ(ranges.size(), static_cast<size_t>(2 + 2 * n - 1)) << n << " ranks, rank " << rank;
      EXPECT_EQ(ranges[0].offset, l.controlOffset());
      EXPECT_EQ(ranges[0].offset + ranges[0].bytes, l.slotsOffset());
      EXPECT_EQ(ranges[1].offset, l.slotsOffset());
      EXPECT_EQ(ranges[1].offset + ranges[1].bytes, l.channelsOffset()) << "slots, scratch and domains' slots";
      std::set<std::pair<int, int>> channels;
      for (size_t i = 2; i < ranges.size(); ++i) {
        ASSERT_EQ(ranges[i].bytes, l.channelStride());
        const size_t index = (ranges[i].offset - l.channelsOffset()) / l.channelStride();
        ASSERT_EQ(l.channelsOffset() + index * l.channelStride(), ranges[i].offset);
        ASSERT_LT(ranges[i].offset + ranges[i].bytes, l.totalBytes() + 1);
        const int s = static_cast<int>(index / n), d = static_cast<int>(index % n);
        EXPECT_TRUE(s == rank || d == rank) << "rank " << rank << " maps channel " << s << "->" << d;
        channels.insert({s, d});
      }
      EXPECT_EQ(channels.size(), static_cast<size_t>(2 * n - 1)) << "each channel once";
    }
  }
}

}  // namespace
}  // namespace conflux
