// The pure rank arithmetic of the inter-host algorithms (comm/src/patterns), checked for every
// size from 1 to 1024.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/arith.h"
#include "hier/hier_ops.h"
#include "shm_layout.h"
#include "vector_coll.h"
#include "patterns/double_binary_tree.h"
#include "patterns/halving_doubling.h"
#include "patterns/kary_tree.h"
#include "patterns/ring.h"

namespace conflux::patterns {
namespace {

// Every edge is seen from both ends, every rank but the root has a parent, and following parents
// reaches the root (no cycle) within log2(n) + 2 hops.
void checkTree(int n, int tree) {
  int roots = 0;
  for (int r = 0; r < n; ++r) {
    TreeNode t = doubleBinaryTree(n, r, tree);
    if (t.parent < 0) {
      ++roots;
    } else {
      ASSERT_LT(t.parent, n);
      TreeNode p = doubleBinaryTree(n, t.parent, tree);
      ASSERT_TRUE(p.child0 == r || p.child1 == r) << "n=" << n << " tree " << tree << " rank " << r << " parent "
                                                  << t.parent << " does not list it";
    }
    for (int c : {t.child0, t.child1}) {
      if (c < 0) continue;
      ASSERT_LT(c, n);
      ASSERT_NE(c, r);
      ASSERT_EQ(doubleBinaryTree(n, c, tree).parent, r) << "n=" << n << " tree " << tree << " child " << c;
    }
    ASSERT_NE(t.child0 >= 0 && t.child0 == t.child1, true);
    int hops = 0, x = r;
    while (doubleBinaryTree(n, x, tree).parent >= 0 && hops <= 40) {
      x = doubleBinaryTree(n, x, tree).parent;
      ++hops;
    }
    int lg = 0;
    while ((1 << lg) < n) ++lg;
    ASSERT_LE(hops, lg + 2) << "n=" << n << " rank " << r;
  }
  ASSERT_EQ(roots, 1) << "n=" << n << " tree " << tree;
}

TEST(DoubleBinaryTree, EdgesConsistentUpTo1024) {
  for (int n = 1; n <= 1024; ++n) {
    checkTree(n, 0);
    checkTree(n, 1);
  }
}

// The point of two trees: a rank that is interior in one is a leaf in the other (n >= 3).
TEST(DoubleBinaryTree, InteriorInAtMostOneTree) {
  for (int n = 3; n <= 1024; ++n) {
    for (int r = 0; r < n; ++r) {
      auto interior = [&](int t) {
        TreeNode x = doubleBinaryTree(n, r, t);
        return x.child0 >= 0 && x.child1 >= 0;
      };
      ASSERT_FALSE(interior(0) && interior(1)) << "n=" << n << " rank " << r;
    }
  }
}

// After m-1 reduce-scatter steps every block has passed through every member once, ending at its
// owner; the all-gather then gives every member every block.
TEST(Ring, ReduceScatterAndAllGatherCoverEveryBlock) {
  // Sets of members as bit masks (up to 64 members): the test simulates every step of every ring
  // size, copying what each member holds before each step.
  auto bit = [](int i) { return uint64_t{1} << i; };
  for (int m = 1; m <= 64; ++m) {
    Ring ring{m};
    const uint64_t everyone = m == 64 ? ~uint64_t{0} : bit(m) - 1;
    // held[i][b]: the members folded into member i's copy of block b.
    std::vector<std::vector<uint64_t>> held(m, std::vector<uint64_t>(m));
    for (int i = 0; i < m; ++i) {
      for (int b = 0; b < m; ++b) held[i][b] = bit(i);
    }
    for (int s = 0; s + 1 < m; ++s) {
      const auto before = held;
      for (int i = 0; i < m; ++i) {
        int next = ring.next(i);
        ASSERT_EQ(ring.rsRecv(next, s), ring.rsSend(i, s));
        int b = ring.rsSend(i, s);
        held[next][b] |= before[i][b];
      }
    }
    for (int i = 0; i < m; ++i) ASSERT_EQ(held[i][ring.rsOwned(i)], everyone) << "m=" << m;
    std::vector<uint64_t> has(m);  // the blocks member i holds whole
    for (int i = 0; i < m; ++i) has[i] = bit(ring.rsOwned(i));
    for (int s = 0; s + 1 < m; ++s) {
      const auto before = has;
      for (int i = 0; i < m; ++i) {
        int next = ring.next(i);
        ASSERT_TRUE(before[i] & bit(ring.agSend(i, s))) << "m=" << m << " sends a block it lacks";
        ASSERT_EQ(ring.agRecv(next, s), ring.agSend(i, s));
        has[next] |= bit(ring.agSend(i, s));
      }
    }
    for (int i = 0; i < m; ++i) ASSERT_EQ(has[i], everyone);
  }
}

TEST(Ring, BlocksTileTheBuffer) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000003}}) {
    for (int m = 1; m <= 33; ++m) {
      size_t total = 0;
      for (int b = 0; b < m; ++b) {
        ASSERT_EQ(blockLo(count, m, b), total);
        total += blockLen(count, m, b);
      }
      ASSERT_EQ(total, count);
    }
  }
}

// Partners agree with each other, kept and sent ranges split the current range, and the final
// ranges of the p virtual ranks tile the p blocks exactly once.
TEST(HalvingDoubling, PlansAreConsistent) {
  for (int m = 1; m <= 1024; ++m) {
    std::vector<HdPlan> plans(m);
    for (int i = 0; i < m; ++i) plans[i] = halvingDoubling(m, i);
    int p = plans[0].p;
    ASSERT_LE(p, m);
    ASSERT_GT(2 * p, m);
    std::vector<int> owner(p, -1);
    int active = 0;
    for (int i = 0; i < m; ++i) {
      const HdPlan& pl = plans[i];
      if (pl.foldPartner >= 0) {
        ASSERT_EQ(plans[pl.foldPartner].foldPartner, i);
      }
      if (pl.vrank < 0) {
        ASSERT_TRUE(pl.foldSender);
        continue;
      }
      ++active;
      ASSERT_EQ(hdMember(m, pl.vrank), i);
      int lo = 0, hi = p;
      for (size_t k = 0; k < pl.steps.size(); ++k) {
        const HdStep& s = pl.steps[k];
        const HdStep& t = plans[s.partner].steps.at(k);
        ASSERT_EQ(t.partner, i) << "m=" << m;
        ASSERT_EQ(s.keepLo, t.sendLo);
        ASSERT_EQ(s.keepHi, t.sendHi);
        ASSERT_EQ(std::min(s.keepLo, s.sendLo), lo);
        ASSERT_EQ(std::max(s.keepHi, s.sendHi), hi);
        lo = s.keepLo;
        hi = s.keepHi;
      }
      ASSERT_EQ(hi - lo, 1);
      ASSERT_EQ(owner[lo], -1) << "block owned twice";
      owner[lo] = i;
    }
    ASSERT_EQ(active, p);
  }
}

TEST(BinomialTree, ParentsReachZero) {
  for (int n = 1; n <= 1024; ++n) {
    for (int v = 1; v < n; ++v) {
      int x = v, hops = 0;
      while (x != 0 && hops < 12) {
        x = binomialParent(n, x);
        ++hops;
      }
      ASSERT_EQ(x, 0);
    }
  }
}

// Every rank but 0 is the child of exactly its parent, the tree is connected, and its depth is
// ceil(log_k) of the ranks: 8192 ranks are 5 hops from rank 0 with k = 8.
TEST(KaryTree, ChildrenAndParentsAgree) {
  for (int k : {2, 3, 8}) {
    for (int n : {1, 2, 3, 7, 8, 9, 10, 64, 73, 1000}) {
      std::vector<int> parentOf(n, -2);
      for (int r = 0; r < n; ++r) {
        std::vector<int> c = karyChildren(n, r, k);
        ASSERT_LE(static_cast<int>(c.size()), k);
        for (int x : c) {
          ASSERT_EQ(parentOf[x], -2) << "rank " << x << " has two parents";
          parentOf[x] = r;
          ASSERT_EQ(karyParent(x, k), r);
        }
      }
      ASSERT_EQ(karyParent(0, k), -1);
      for (int r = 1; r < n; ++r) ASSERT_EQ(parentOf[r], karyParent(r, k)) << "n=" << n << " k=" << k << " rank " << r;
      int hops = 1, reach = 1, depth = 0;  // ranks within `depth` hops of rank 0
      while (reach < n) reach += (hops *= k), ++depth;
      EXPECT_EQ(karyDepth(n, k), depth) << "n=" << n << " k=" << k;
    }
  }
  EXPECT_EQ(karyDepth(8192, kBootstrapFanout), 5);
  EXPECT_TRUE(karyChildren(1, 0, 8).empty());
}

TEST(Arith, CeilDivRoundUpLargestPowerOfTwo) {
  EXPECT_EQ(ceilDiv<size_t>(0, 4), 0u);
  EXPECT_EQ(ceilDiv<size_t>(1, 4), 1u);
  EXPECT_EQ(ceilDiv<size_t>(8, 4), 2u);
  EXPECT_EQ(ceilDiv<size_t>(9, 4), 3u);
  EXPECT_EQ(roundUp<size_t>(0, 64), 0u);
  EXPECT_EQ(roundUp<size_t>(1, 64), 64u);
  EXPECT_EQ(roundUp<size_t>(128, 64), 128u);
  EXPECT_EQ(roundUp<size_t>(129, 64), 192u);
  const int expected[] = {1, 1, 1, 2, 2, 4, 4, 4, 4, 8, 8};  // n = -1 .. 9
  for (int n = -1; n <= 9; ++n) EXPECT_EQ(largestPowerOfTwo(n), expected[n + 1]) << "n = " << n;
  EXPECT_EQ(largestPowerOfTwo(1000), 512);
  EXPECT_EQ(largestPowerOfTwo(1024), 1024);
}

TEST(NetCostModel, ChoosesByScale) {
  Tuning t;
  EXPECT_EQ(hier::chooseNetAlgo(256 << 20, 2, t), NetAlgo::kRing);
  EXPECT_EQ(hier::chooseNetAlgo(8, 500, t), NetAlgo::kTree);  // latency: log2 steps, few messages
  EXPECT_EQ(hier::chooseNetAlgo(64 << 20, 512, t), NetAlgo::kHalvingDoubling);
  // Where halving-doubling's latency gain is under 10% of the ring's time, the ring runs.
  EXPECT_EQ(hier::chooseNetAlgo(64 << 10, 8, t), NetAlgo::kHalvingDoubling);  // ring 0.71 ms, rhd 0.36
  EXPECT_EQ(hier::chooseNetAlgo(1 << 20, 8, t), NetAlgo::kHalvingDoubling);   // ring 2.08 ms, rhd 1.73
  EXPECT_EQ(hier::chooseNetAlgo(4 << 20, 8, t), NetAlgo::kRing);              // ring 6.49 ms, rhd 6.13
  EXPECT_EQ(hier::chooseNetAlgo(1 << 20, 4, t), NetAlgo::kRing);              // ring 1.52 ms, rhd 1.43
  t.net = NetAlgo::kTree;
  EXPECT_EQ(hier::chooseNetAlgo(256 << 20, 2, t), NetAlgo::kTree);  // CFX_ALGO forces
}

}  // namespace
}  // namespace conflux::patterns

// The padded path of AllGatherv/ReduceScatterv across hosts (vector_coll.h): only across hosts,
// above the check's line, and within the padding allowed.
TEST(VectorPadding, WhenBlocksArePaddedToTheLargest) {
  using conflux::paddedBlock;
  const std::vector<size_t> even(4, 1000), near{1000, 1100, 900, 1050}, uneven{0, 4000, 10, 10};
  EXPECT_EQ(paddedBlock(even, 4, 2, 0.25, 1024), 1000u);
  EXPECT_EQ(paddedBlock(even, 4, 1, 0.25, 1024), 0u);        // one host: rank to rank
  EXPECT_EQ(paddedBlock(near, 4, 2, 0.25, 1024), 1100u);     // 4400 against 4050: 8.6% more
  EXPECT_EQ(paddedBlock(near, 4, 2, 0.05, 1024), 0u);        // more than 5%
  EXPECT_EQ(paddedBlock(uneven, 4, 3, 0.25, 1024), 0u);      // 16000 against 4020
  EXPECT_EQ(paddedBlock(even, 4, 2, 0.0, 1024), 0u);         // CFX_VCOLL_PADDING=0
  EXPECT_EQ(paddedBlock(std::vector<size_t>{64, 64}, 4, 2, 0.25, 1024), 0u);    // 512 bytes travel in the check
  EXPECT_EQ(paddedBlock(std::vector<size_t>{128, 128, 0}, 4, 2, 1.0, 1024), 0u);  // exactly the line: still in it
  EXPECT_EQ(paddedBlock(std::vector<size_t>{129, 128}, 4, 2, 0.25, 1024), 129u);
  EXPECT_EQ(paddedBlock(std::vector<size_t>{}, 4, 2, 0.25, 1024), 0u);
}

// The line of the check on one host (vector_coll.h): which blocks it carries and where they lie,
// the same arithmetic on sender and receiver.
TEST(VectorLine, SlotsAndOffsets) {
  using conflux::VectorKind;
  using conflux::VectorLine;
  const VectorLine two{2, VectorKind::kAlltoAllv};
  EXPECT_EQ(two.countBytes(), 40u);
  EXPECT_EQ(two.slot(), 984u);  // 1 KiB less the counts, one peer
  EXPECT_TRUE(two.carries(984));
  EXPECT_FALSE(two.carries(985));
  EXPECT_EQ(two.offset(0, 1), 40u);
  EXPECT_EQ(two.offset(1, 0), 40u);
  const VectorLine four{4, VectorKind::kReduceScatterv};
  EXPECT_EQ(four.room(), 952u);
  EXPECT_EQ(four.slot(), 312u);  // 952 / 3, whole words
  EXPECT_EQ(four.offset(2, 0), 72u);
  EXPECT_EQ(four.offset(2, 1), 72u + 312u);
  EXPECT_EQ(four.offset(2, 3), 72u + 2 * 312u);  // its own slot skipped
  EXPECT_EQ(four.offset(2, 3) + four.slot(), 1008u);
  const VectorLine gather{4, VectorKind::kAllGatherv};  // one block, read by every peer
  EXPECT_TRUE(gather.carries(952));
  EXPECT_FALSE(gather.carries(953));
  EXPECT_EQ(gather.offset(1, 3), 72u);
  const VectorLine most{VectorLine::kMaxLineRanks, VectorKind::kAlltoAllv};
  EXPECT_EQ(most.countBytes(), 1016u);
  EXPECT_TRUE(most.carries(0));
  EXPECT_FALSE(most.carries(1));
  EXPECT_EQ(VectorLine({1, VectorKind::kAlltoAllv}).slot(), 0u);
}

// Blocks the line has no room for, in the sender's box: each peer a share in whole cache lines.
TEST(VectorLine, Boxes) {
  using conflux::kVectorBoxBlockBytes;
  using conflux::kVectorBoxBytes;
  using conflux::VectorKind;
  using conflux::VectorLine;
  static_assert(kVectorBoxBytes == 16384 && kVectorBoxBlockBytes == 8192, "the values below assume these");
  const VectorLine two{2, VectorKind::kAlltoAllv};
  EXPECT_EQ(two.boxSlot(), 8192u);  // the most a block takes
  EXPECT_FALSE(two.inBox(984));  // in the line
  EXPECT_TRUE(two.withCheck(984));
  EXPECT_TRUE(two.inBox(985));
  EXPECT_TRUE(two.inBox(8192));
  EXPECT_FALSE(two.inBox(8193));  // by Send/Recv
  EXPECT_FALSE(two.withCheck(8193));
  EXPECT_EQ(two.boxOffset(0, 1), 0u);
  EXPECT_EQ(two.boxOffset(1, 0), 0u);
  const VectorLine four{4, VectorKind::kReduceScatterv};
  EXPECT_EQ(four.boxSlot(), 5440u);  // 16384 / 3, whole cache lines
  EXPECT_TRUE(four.inBox(313));
  EXPECT_TRUE(four.inBox(5440));
  EXPECT_FALSE(four.inBox(5441));
  EXPECT_EQ(four.boxOffset(2, 0), 0u);
  EXPECT_EQ(four.boxOffset(2, 1), 5440u);
  EXPECT_EQ(four.boxOffset(2, 3), 2 * 5440u);  // its own share skipped
  EXPECT_LE(four.boxOffset(2, 3) + four.boxSlot(), kVectorBoxBytes);
  const VectorLine gather{4, VectorKind::kAllGatherv};  // one block, read by every peer
  EXPECT_TRUE(gather.inBox(953));
  EXPECT_TRUE(gather.inBox(8192));
  EXPECT_FALSE(gather.inBox(8193));
  EXPECT_EQ(gather.boxOffset(1, 3), 0u);
  const VectorLine eight{8, VectorKind::kAlltoAllv};
  EXPECT_EQ(eight.boxSlot() % 64, 0u);
  EXPECT_LE(7 * eight.boxSlot(), kVectorBoxBytes);
  EXPECT_FALSE(VectorLine({1, VectorKind::kAlltoAllv}).inBox(1));
}
