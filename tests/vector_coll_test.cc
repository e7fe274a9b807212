// The variable-count collectives (cfxAlltoAllv, cfxAllGatherv, cfxReduceScatterv), exactly, at 1 to
// 8 ranks: every datatype (and every op for ReduceScatterv), random uneven counts with zeros (the
// same on every rank: one seed), blocks laid out in a shuffled order with gaps whose guard bytes
// must survive, in and out of place, blocking, on a stream and inside a group with other work.
// Then what must fail: counts that disagree (cfxInvalidUsage on every rank, naming both ranks),
// different v-collectives, and invalid arguments (cfxInvalidArgument, nothing written, the
// communicator still usable). shared by the many-host suite (vector_coll_cases.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
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

// Calls whose blocks all travel with the check, back to back, blocking and on a stream, each with
// a different late rank; `base` elements more in every block (0: in the lines; 400 int32: in the
// boxes, up to 8 ranks, while a peer may still read the previous call's box).
void lateRankCalls(Rank& rk, size_t base) {
  {
    const int n = rk.nranks, me = rk.rank;
    cfxStream_t stream = nullptr;
    ASSERT_EQ(cfxStreamCreate(&stream), cfxSuccess);
    for (int call = 0; call < 2 * n + 2; ++call) {
      const int late = call % n;
      cfxStream_t s = call % 2 == 0 ? nullptr : stream;
      // AlltoAllv: rank i sends 1 + (i + j + call) % 3 int32 to rank j, value 1000 i + 10 j + call.
      std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
      size_t sent = 0, received = 0;
      for (int j = 0; j < n; ++j) {
        sc[j] = base + 1 + (me + j + call) % 3;
        sd[j] = sent;
        sent += sc[j];
        rc[j] = base + 1 + (j + me + call) % 3;
        rd[j] = received;
        received += rc[j];
      }
      std::vector<int32_t> in(sent), out(received, -1);
      for (int j = 0; j < n; ++j) std::fill_n(in.begin() + sd[j], sc[j], 1000 * me + 10 * j + call);
      // AllGatherv of 1 + (rank + call) % 2 elements, ReduceScatterv of as many per rank.
      std::vector<size_t> gc(n), gd(n);
      size_t gathered = 0;
      for (int j = 0; j < n; ++j) {
        gc[j] = base + 1 + (j + call) % 2;
        gd[j] = gathered;
        gathered += gc[j];
      }
      std::vector<int32_t> mine(gc[me], 7 * me + call), all(gathered, -1);
      std::vector<int32_t> parts(gathered), reduced(gc[me], -1);
      for (size_t e = 0; e < gathered; ++e) parts[e] = static_cast<int32_t>(me + e + call);
      if (me == late) usleep(20000);
      ASSERT_EQ(cfxAlltoAllv(in.data(), sc.data(), sd.data(), out.data(), rc.data(), rd.data(), cfxInt32, rk.comm, s),
                cfxSuccess)
          << cfxGetLastError(rk.comm);
      ASSERT_EQ(cfxAllGatherv(mine.data(), gc[me], all.data(), gc.data(), gd.data(), cfxInt32, rk.comm, s), cfxSuccess)
          << cfxGetLastError(rk.comm);
      ASSERT_EQ(cfxReduceScatterv(parts.data(), reduced.data(), gc.data(), cfxInt32, cfxSum, rk.comm, s), cfxSuccess)
          << cfxGetLastError(rk.comm);
      if (s != nullptr) {
        ASSERT_EQ(cfxStreamSynchronize(s), cfxSuccess) << cfxGetLastError(rk.comm);
      }
      for (int j = 0; j < n; ++j) {
        for (size_t e = 0; e < rc[j]; ++e) {
          ASSERT_EQ(out[rd[j] + e], 1000 * j + 10 * me + call) << "AlltoAllv call " << call << " block of rank " << j;
        }
        for (size_t e = 0; e < gc[j]; ++e) {
          ASSERT_EQ(all[gd[j] + e], 7 * j + call) << "AllGatherv call " << call << " block of rank " << j;
        }
      }
      for (size_t e = 0; e < gc[me]; ++e) {
        int32_t want = 0;
        for (int r = 0; r < n; ++r) want += static_cast<int32_t>(r + gd[me] + e + call);
        ASSERT_EQ(reduced[e], want) << "ReduceScatterv call " << call << " element " << e;
      }
    }
    ASSERT_EQ(cfxStreamDestroy(stream), cfxSuccess);
  }
}

// Small calls run as values on the caller's thread (runQuickVector); one whose peer is late moves
// to the heap and waits there, blocking or on a stream. Every output is exact.
TEST_P(VectorColl, SmallCallsWaitForALateRankAndStayExact) {
  runRanks(GetParam(), [](Rank& rk) { lateRankCalls(rk, 0); });
}

// The same with blocks too large for the lines: in the senders' boxes (vector_coll.h, VectorLine).
TEST_P(VectorColl, BoxedCallsWaitForALateRankAndStayExact) {
  runRanks(GetParam(), [](Rank& rk) { lateRankCalls(rk, 400); });
}

// Several calls with blocks in the boxes in one group: every rank publishes them all at once, and
// the last rank comes late, so a rank's box may be wanted again (two boxes per rank) while a peer
// has not read it yet; it waits for that peer. Every output is exact.
TEST_P(VectorColl, BoxedCallsInAGroupWaitForTheirReaders) {
  runRanks(GetParam(), [](Rank& rk) {
    const int n = rk.nranks, me = rk.rank;
    constexpr int kCalls = 5;
    constexpr size_t kBlock = 500;  // int32 per block: in a box at up to 8 ranks, not in a line
    std::vector<size_t> counts(n, kBlock), displs(n);
    for (int j = 0; j < n; ++j) displs[j] = j * kBlock;
    std::vector<std::vector<int32_t>> in(kCalls), out(kCalls);
    for (int c = 0; c < kCalls; ++c) {
      in[c].resize(n * kBlock);
      out[c].assign(n * kBlock, -1);
      for (size_t e = 0; e < in[c].size(); ++e) in[c][e] = static_cast<int32_t>(100000 * c + 1000 * me + e);
    }
    if (me == n - 1) usleep(20000);
    ASSERT_EQ(cfxGroupStart(), cfxSuccess);
    for (int c = 0; c < kCalls; ++c) {
      ASSERT_EQ(cfxAlltoAllv(in[c].data(), counts.data(), displs.data(), out[c].data(), counts.data(), displs.data(),
                             cfxInt32, rk.comm, nullptr),
                cfxSuccess)
          << cfxGetLastError(rk.comm);
    }
    ASSERT_EQ(cfxGroupEnd(), cfxSuccess) << cfxGetLastError(rk.comm);
    for (int c = 0; c < kCalls; ++c) {
      for (int j = 0; j < n; ++j) {
        for (size_t e = 0; e < kBlock; ++e) {
          ASSERT_EQ(out[c][j * kBlock + e], static_cast<int32_t>(100000 * c + 1000 * j + me * kBlock + e))
              << "call " << c << " block of rank " << j << " element " << e;
        }
      }
    }
  });
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
