// The staging plan: shapes per collective, chunks that cover every column, fit a slot and are the
// same on every rank.
#include <gtest/gtest.h>

#include "common/error.h"
#include "plan.h"

using namespace conflux::staged;

namespace {

const Coll kColls[] = {Coll::kAllReduce, Coll::kReduce,   Coll::kBroadcast, Coll::kAllGather,
                       Coll::kReduceScatter, Coll::kAlltoAll, Coll::kSend,      Coll::kRecv};

}  // namespace

TEST(StagedPlan, ShapesFollowNcclLayouts) {
  Shape ag = shapeOf(Coll::kAllGather, 10, 4, 1, -1);
  EXPECT_EQ(ag.inRows, 1);
  EXPECT_EQ(ag.outRows, 4);
  Shape rs = shapeOf(Coll::kReduceScatter, 10, 4, 1, -1);
  EXPECT_EQ(rs.inRows, 4);
  EXPECT_EQ(rs.outRows, 1);
  Shape a2a = shapeOf(Coll::kAlltoAll, 10, 3, 0, -1);
  EXPECT_EQ(a2a.inRows, 3);
  EXPECT_EQ(a2a.outRows, 3);
  // Only the root's input is read in a Broadcast; only the root's output is written in a Reduce.
  EXPECT_TRUE(shapeOf(Coll::kBroadcast, 10, 3, 2, 2).copyIn);
  EXPECT_FALSE(shapeOf(Coll::kBroadcast, 10, 3, 1, 2).copyIn);
  EXPECT_TRUE(shapeOf(Coll::kReduce, 10, 3, 2, 2).copyOut);
  EXPECT_FALSE(shapeOf(Coll::kReduce, 10, 3, 0, 2).copyOut);
  EXPECT_FALSE(shapeOf(Coll::kSend, 10, 2, 0, 1).copyOut);
  EXPECT_FALSE(shapeOf(Coll::kRecv, 10, 2, 1, 0).copyIn);
}

TEST(StagedPlan, ChunksCoverEveryColumnAndFitTheSlot) {
  for (Coll c : kColls) {
    for (int n : {1, 2, 3, 8}) {
      for (size_t count : {size_t{1}, size_t{7}, size_t{1031}, size_t{100003}}) {
        for (size_t es : {size_t{1}, size_t{2}, size_t{8}}) {
          for (size_t slot : {size_t{4096}, size_t{1000}, size_t{1} << 20}) {
            Shape s = shapeOf(c, count, n, 0, 0);
            auto chunks = chunksOf(s, es, slot);
            size_t next = 0;
            for (const Chunk& k : chunks) {
              ASSERT_EQ(k.col, next);
              ASSERT_GT(k.cols, 0u);
              ASSERT_LE((s.inRows + s.outRows) * k.cols * es, slot);
              SlotLayout l = slotLayout(s, k.cols, es);
              ASSERT_EQ(l.rowBytes, k.cols * es);
              ASSERT_LE(l.outOffset + s.outRows * l.rowBytes, slot);
              ASSERT_GE(l.outOffset, l.inOffset + s.inRows * l.rowBytes);
              next += k.cols;
            }
            ASSERT_EQ(next, count);
          }
        }
      }
    }
  }
}

TEST(StagedPlan, EveryRankCutsTheSameChunks) {
  for (Coll c : kColls) {
    for (int n : {2, 3, 5}) {
      auto first = chunksOf(shapeOf(c, 5000, n, 0, 1), 4, 3000);
      for (int r = 1; r < n; ++r) {
        auto mine = chunksOf(shapeOf(c, 5000, n, r, 1), 4, 3000);
        ASSERT_EQ(mine.size(), first.size());
        for (size_t i = 0; i < mine.size(); ++i) {
          ASSERT_EQ(mine[i].col, first[i].col);
          ASSERT_EQ(mine[i].cols, first[i].cols);
        }
      }
    }
  }
}

TEST(StagedPlan, EmptyAndTooSmall) {
  EXPECT_TRUE(chunksOf(shapeOf(Coll::kAllReduce, 0, 4, 0, -1), 4, 4096).empty());
  // AlltoAll over 8 ranks needs 16 rows of 8 bytes per column.
  EXPECT_THROW(chunksOf(shapeOf(Coll::kAlltoAll, 10, 8, 0, -1), 8, 127), conflux::Error);
  EXPECT_EQ(chunksOf(shapeOf(Coll::kAlltoAll, 10, 8, 0, -1), 8, 128).size(), 10u);
}
