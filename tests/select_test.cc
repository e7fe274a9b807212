// The rule that picks a collective's path inside one host (comm/src/ops/select.h).
#include <gtest/gtest.h>

#include "ops/mailbox_op.h"
#include "ops/select.h"
#include "ops/single_copy.h"

namespace conflux {
namespace {

CollArgs call(Coll c, size_t count, cfxDataType_t t = cfxFloat32, cfxRedOp_t op = cfxSum) {
  static char in[1], out[1];  // never touched: the rule reads only whether they are the same
  return CollArgs{c, in, out, count, t, op, c == Coll::kReduce || c == Coll::kBroadcast ? 0 : -1};
}

TEST(HostAlgoRule, SmallCallsTakeTheMailboxUnlessAnAlgorithmIsForced) {
  Tuning t;
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 512), t, 4), HostAlgo::kMailbox);  // 2 KiB per rank
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 513), t, 4), HostAlgo::kDirect);
  EXPECT_EQ(selectHostAlgo(call(Coll::kReduce, 512), t, 2), HostAlgo::kMailbox);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllGather, 512), t, 2), HostAlgo::kMailbox);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllGather, 513), t, 2), HostAlgo::kStagedAllGather);
  EXPECT_EQ(selectHostAlgo(call(Coll::kBroadcast, 512), t, 8), HostAlgo::kMailbox);
  EXPECT_EQ(selectHostAlgo(call(Coll::kBroadcast, 513), t, 8), HostAlgo::kStagedBroadcast);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 0), t, 8), HostAlgo::kMailbox);
  // AlltoAll and ReduceScatter count per block: n blocks must fit 1 KiB (kMailboxBlocksMaxBytes).
  EXPECT_EQ(selectHostAlgo(call(Coll::kAlltoAll, 64), t, 4), HostAlgo::kMailbox);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAlltoAll, 65), t, 4), HostAlgo::kStagedAlltoAll);
  EXPECT_EQ(selectHostAlgo(call(Coll::kReduceScatter, 128), t, 2), HostAlgo::kMailbox);
  EXPECT_EQ(selectHostAlgo(call(Coll::kReduceScatter, 129), t, 2), HostAlgo::kStagedReduceScatter);
  EXPECT_EQ(selectHostAlgo(call(Coll::kReduceScatter, 65), t, 4), HostAlgo::kStagedReduceScatter);
  // More ranks than the mailbox path serves.
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 1), t, kMaxDirectRanks + 1), HostAlgo::kDirect);
  t.forced = Algo::kMailbox;
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 1), t, 4), HostAlgo::kMailbox);
  t.forced = Algo::kRsag;
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 1), t, 4), HostAlgo::kRsag);
  EXPECT_EQ(selectHostAlgo(call(Coll::kBroadcast, 1), t, 4), HostAlgo::kStagedBroadcast);
  t.forced = Algo::kDirect;
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 1 << 20), t, 4), HostAlgo::kDirect);
}

TEST(HostAlgoRule, AllReduceAndReduceByTheirBytes) {
  Tuning t;
  const size_t direct = kDirectMaxDefault / 4, reduceDirect = kReduceDirectMaxDefault / 4;
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, direct), t, 2), HostAlgo::kDirect);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, direct + 1), t, 2), HostAlgo::kRsag);
  EXPECT_EQ(selectHostAlgo(call(Coll::kReduce, reduceDirect), t, 2), HostAlgo::kDirect);
  EXPECT_EQ(selectHostAlgo(call(Coll::kReduce, reduceDirect + 1), t, 2), HostAlgo::kRsag);
  t.directMaxBytes = 4 << 20;  // CFX_DIRECT_MAX_BYTES
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 1 << 20), t, 2), HostAlgo::kDirect);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, (1 << 20) + 1), t, 2), HostAlgo::kRsag);
}

TEST(HostAlgoRule, TwoLevelOnlyAcrossDomainsAndNeverForExactOps) {
  Tuning t;
  t.domains = 2;
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 1 << 20), t, 4), HostAlgo::kTwoLevel);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 1 << 20, cfxFloat32, cfxSumExact), t, 4), HostAlgo::kRsag);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 1024), t, 4), HostAlgo::kDirect);  // direct first
}

TEST(HostAlgoRule, SingleCopyForLargeDataMovementWhereAllowed) {
  Tuning t;
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllGather, 1 << 20), t, 2), HostAlgo::kStagedAllGather);  // CMA off
  t.cma = true;
  t.cmaMinBytes = 64 << 10;
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllGather, 1 << 20), t, 2), HostAlgo::kSingleCopy);
  EXPECT_EQ(selectHostAlgo(call(Coll::kBroadcast, 1 << 20), t, 2), HostAlgo::kSingleCopy);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAlltoAll, 1 << 20), t, 2), HostAlgo::kSingleCopy);
  EXPECT_EQ(selectHostAlgo(call(Coll::kBroadcast, 1024), t, 2), HostAlgo::kStagedBroadcast);  // under the minimum
  // Beyond kCmaMaxGatherBytes AllGather and Broadcast build the staged operation, which takes the
  // path local rank 0 chooses at its first barrier (ops/path_trial.h): staged or single copy.
  const CollArgs large = call(Coll::kBroadcast, Tuning::kCmaMaxGatherBytes / 4 + 1);
  EXPECT_EQ(selectHostAlgo(large, t, 2), HostAlgo::kStagedBroadcast);
  EXPECT_TRUE(useGatherTrial(large, t, 2));
  EXPECT_TRUE(useGatherTrial(call(Coll::kAllGather, Tuning::kCmaMaxGatherBytes / 8 + 1), t, 2));
  EXPECT_FALSE(useGatherTrial(call(Coll::kAllGather, Tuning::kCmaMaxGatherBytes / 8), t, 2));  // the single copy
  EXPECT_FALSE(useGatherTrial(call(Coll::kAlltoAll, Tuning::kCmaMaxGatherBytes), t, 2));
  CollArgs outer = large;
  outer.outerCall = 1;  // a step of a call across hosts keeps the staged path
  EXPECT_FALSE(useGatherTrial(outer, t, 2));
  // In-place AlltoAll cannot read a peer's input that the peer overwrites meanwhile.
  CollArgs inPlace = call(Coll::kAlltoAll, 1 << 20);
  inPlace.recv = const_cast<void*>(inPlace.send);
  EXPECT_EQ(selectHostAlgo(inPlace, t, 2), HostAlgo::kStagedAlltoAll);
  // Reductions do not take this path (theirs is chosen at their first barrier, below).
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllReduce, 1 << 20), t, 2), HostAlgo::kRsag);
  t.forced = Algo::kRsag;  // a forced algorithm turns it off
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllGather, 1 << 20), t, 2), HostAlgo::kStagedAllGather);
  EXPECT_FALSE(useGatherTrial(large, t, 2));
  t.forced = Algo::kAuto;
  t.cma = false;  // and so does CMA's being off
  EXPECT_FALSE(useGatherTrial(large, t, 2));
}

// A v-collective's block takes the single copy from CFX_CMA_MIN_BYTES, however large (there is no
// cap: a 24 MiB block went 2-4x slower through the channel, tuning.h); Send from its own minimum.
TEST(HostAlgoRule, VectorBlocksTakeTheSingleCopyFromTheMinimumUp) {
  Tuning t;
  t.cmaMinBytes = 16 << 10;
  EXPECT_FALSE(t.collectiveSingleCopy(size_t{64} << 20));  // CMA off
  t.cma = true;
  EXPECT_FALSE(t.collectiveSingleCopy((16 << 10) - 1));
  EXPECT_TRUE(t.collectiveSingleCopy(16 << 10));
  EXPECT_TRUE(t.collectiveSingleCopy(size_t{1} << 20));
  EXPECT_TRUE(t.collectiveSingleCopy(size_t{256} << 20));
  // Ranks sharing cores: CMA is off, but blocks from 64 KiB still take it, as AlltoAll blocks and
  // Sends do.
  Tuning shared;
  shared.sharedCoresBlockBytes = Tuning::kSharedCoresBlockMinDefault;
  EXPECT_FALSE(shared.collectiveSingleCopy(32 << 10));
  EXPECT_FALSE(shared.collectiveSingleCopy((64 << 10) - 1));
  EXPECT_TRUE(shared.collectiveSingleCopy(64 << 10));
  EXPECT_TRUE(shared.collectiveSingleCopy(128 << 10));
  EXPECT_EQ(Tuning::kSharedCoresBlockMinDefault, Tuning::kSharedCoresSendMinDefault);
}

// Where ranks share cores, Sends take the single copy from 64 KiB (CMA itself is off there).
TEST(HostAlgoRule, SendsWhereRanksShareCoresTakeTheSingleCopyFrom64KiB) {
  Tuning shared;
  EXPECT_FALSE(shared.p2pSingleCopy(size_t{1} << 20));  // nothing set: the channel
  shared.sharedCoresSendBytes = Tuning::kSharedCoresSendMinDefault;
  EXPECT_FALSE(shared.p2pSingleCopy(32 << 10));
  EXPECT_FALSE(shared.p2pSingleCopy((64 << 10) - 1));
  EXPECT_TRUE(shared.p2pSingleCopy(64 << 10));
  EXPECT_TRUE(shared.p2pSingleCopy(size_t{256} << 20));
}

// Where ranks share cores, AlltoAll out of place takes the single copy from blocks of 64 KiB, as
// Sends do; in place, and AllGather and Broadcast of any size, keep the staged paths.
TEST(HostAlgoRule, AlltoAllWhereRanksShareCoresTakesTheSingleCopyFrom64KiBBlocks) {
  Tuning shared;
  const size_t block = Tuning::kSharedCoresSendMinDefault / 4;  // fp32 elements per peer
  EXPECT_EQ(selectHostAlgo(call(Coll::kAlltoAll, block), shared, 4), HostAlgo::kStagedAlltoAll);  // not set
  shared.sharedCoresSendBytes = Tuning::kSharedCoresSendMinDefault;
  EXPECT_EQ(selectHostAlgo(call(Coll::kAlltoAll, block - 16), shared, 4), HostAlgo::kStagedAlltoAll);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAlltoAll, block), shared, 4), HostAlgo::kSingleCopy);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAlltoAll, size_t{64} << 20), shared, 4), HostAlgo::kSingleCopy);
  static char buf[1];
  CollArgs inPlace{Coll::kAlltoAll, buf, buf, block, cfxFloat32, cfxSum, -1};
  EXPECT_EQ(selectHostAlgo(inPlace, shared, 4), HostAlgo::kStagedAlltoAll);
  EXPECT_EQ(selectHostAlgo(call(Coll::kAllGather, size_t{1} << 20), shared, 4), HostAlgo::kStagedAllGather);
  EXPECT_EQ(selectHostAlgo(call(Coll::kBroadcast, size_t{1} << 20), shared, 4), HostAlgo::kStagedBroadcast);
  shared.forced = Algo::kRsag;  // a forced algorithm takes no single copy
  EXPECT_EQ(selectHostAlgo(call(Coll::kAlltoAll, block), shared, 4), HostAlgo::kStagedAlltoAll);
}

// AllReduce and Reduce over single copies are offered from their own thresholds (the call then
// decides at its first barrier whether every rank may take it: singleCopyReduceReady).
TEST(HostAlgoRule, ReductionsOfferTheSingleCopyFromTheirThresholds) {
  Tuning t;
  t.cmaAllReduceMinBytes = Tuning::kCmaAllReduceMinDefault;
  t.cmaReduceMinBytes = Tuning::kCmaReduceMinDefault;
  const size_t allReduceMin = Tuning::kCmaAllReduceMinDefault / 4, reduceMin = Tuning::kCmaReduceMinDefault / 4;
  EXPECT_FALSE(useSingleCopyReduce(call(Coll::kAllReduce, 1 << 20), t));  // CMA off
  t.cma = true;
  EXPECT_TRUE(useSingleCopyReduce(call(Coll::kAllReduce, allReduceMin), t));
  EXPECT_FALSE(useSingleCopyReduce(call(Coll::kAllReduce, allReduceMin - 1), t));
  EXPECT_TRUE(useSingleCopyReduce(call(Coll::kReduce, reduceMin), t));
  EXPECT_FALSE(useSingleCopyReduce(call(Coll::kReduce, reduceMin - 1), t));
  EXPECT_TRUE(useSingleCopyReduce(call(Coll::kAllReduce, size_t{1} << 30), t));  // in place decides above 16 MiB
  EXPECT_FALSE(useSingleCopyReduce(call(Coll::kReduceScatter, 1 << 20), t));
  CollArgs step = call(Coll::kAllReduce, 1 << 20);
  step.outerCall = 1;  // a step of a call across hosts
  EXPECT_FALSE(useSingleCopyReduce(step, t));
  t.forced = Algo::kRsag;
  EXPECT_FALSE(useSingleCopyReduce(call(Coll::kAllReduce, 1 << 20), t));
}

}  // namespace
}  // namespace conflux
