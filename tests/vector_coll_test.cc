// The variable-count collectives (cfxAlltoAllv, cfxAllGatherv, cfxReduceScatterv), exactly, at 1 to
// 8 ranks: every datatype (and every op for ReduceScatterv), random uneven counts with zeros (the
// same on every rank: one seed), blocks laid out in a shuffled order with gaps whose guard bytes
// must survive, in and out of place, blocking, on a stream and inside a group with other work.
// Then what must fail: counts that disagree (cfxInvalidUsage on every rank, naming both ranks),
// different v-collectives, and invalid arguments (cfxInvalidArgument, nothing written, the
// communicator still usable). shared by the many-host suite (vector_coll_cases.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"
#include "vector_coll_cases.h"

namespace cfxtest {
namespace {

class VectorColl : public ::testing::TestWithParam<int> {};

TEST_P(VectorColl, AlltoAllvExact) {
  runRanks(GetParam(), [](Rank& rk) { ASSERT_EQ(alltoallvMatrix(rk), ""); });
}

TEST_P(VectorColl, AllGathervExact) {
  runRanks(GetParam(), [](Rank& rk) { ASSERT_EQ(allgathervMatrix(rk), ""); });
}

TEST_P(VectorColl, ReduceScattervExact) {
  runRanks(GetParam(), [](Rank& rk) { ASSERT_EQ(reducescattervMatrix(rk), ""); });
}

TEST_P(VectorColl, OnAStreamAndInAGroup) {
  runRanks(GetParam(), [](Rank& rk) { ASSERT_EQ(streamAndGroupCases(rk), ""); });
}

TEST_P(VectorColl, CountsThatDisagreeFailEveryRankNamingBoth) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two ranks";
  RunOptions o;
  o.env = {"CFX_TIMEOUT=20"};
  runRanks(GetParam(), [](Rank& rk) { ASSERT_EQ(mismatchCases(rk), ""); }, o);
}

TEST_P(VectorColl, InvalidArgumentsChangeNothing) {
  runRanks(GetParam(), [](Rank& rk) { ASSERT_EQ(invalidArgumentCases(rk), ""); });
}

INSTANTIATE_TEST_SUITE_P(Ranks, VectorColl, ::testing::Range(1, 9),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "ranks"; });

}  // namespace
}  // namespace cfxtest
