// cfxCommShrink and cfxCommGetFailedRanks on one host: a rank (rank 0 included) killed during each
// collective at 2-8 ranks, after which the survivors shrink and the new communicator is exact; a
// healthy shrink; a shrink of a shrunk and of a split communicator; a survivor or the new root that
// dies during the shrink (an error naming it, no hang); survivors that disagree; bad arguments.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "coll_case.h"
#include "harness.h"
#include "shrink_cases.h"

namespace cfxtest {
namespace {

using C = CollKind;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct KillCase {
  int n;
  int victim;
  C coll;
};

std::vector<KillCase> killCases() {
  // Every collective at least twice over 2-8 ranks; the victim is rank 0, the last rank or one in
  // the middle.
  const C colls[] = {C::kAllReduce, C::kReduce,   C::kBroadcast, C::kAllGather,
                     C::kReduceScatter, C::kAlltoAll, C::kSendRecv, C::kAlltoAllv};
  std::vector<KillCase> out;
  int k = 0;
  for (int n = 2; n <= 8; ++n) {
    for (int victim : {0, n - 1, n / 2}) {
      bool seen = false;
      for (const auto& c : out) seen |= c.n == n && c.victim == victim;
      if (seen || (n > 4 && victim == n / 2 && n % 2 == 1)) continue;
      out.push_back({n, victim, colls[k++ % 8]});
    }
  }
  return out;
}

class KillThenShrink : public ::testing::TestWithParam<KillCase> {};

TEST_P(KillThenShrink, SurvivorsShrinkAndStayExact) {
  const KillCase kc = GetParam();
  RunOptions o;
  o.expectKilled = {kc.victim};
  o.env = {"CFX_TIMEOUT=30"};
  runRanks(kc.n, [&](Rank& rk) {
    double secs = 0;
    ASSERT_EQ(killAndShrink(rk, kc.victim, kc.coll, &secs), "");
    std::printf("[shrink] %d ranks, rank %d killed in %s: rank %d shrank in %.3f s\n", kc.n, kc.victim,
                collName(kc.coll), rk.rank, secs);
    EXPECT_LT(secs, 10.0);
  }, o);
}

INSTANTIATE_TEST_SUITE_P(Ranks, KillThenShrink, ::testing::ValuesIn(killCases()), [](const auto& info) {
  return std::to_string(info.param.n) + "ranks_victim" + std::to_string(info.param.victim) + "_" +
         collName(info.param.coll);
});

// A healthy shrink (CFX_SHRINK_DEFAULT): ranks 0 and 3 of 5 leave; they do not call it. The
// survivors' queued work completes first; then the new communicator is exact, and the parent
// still works for everyone afterwards.
TEST(Shrink, HealthyShrinkLeavesTheParentWorking) {
  runRanks(5, [](Rank& rk) {
    const int excluded[] = {3, 0};
    std::vector<int> in(4096, rk.rank + 1), out(4096);
    if (rk.rank != 0 && rk.rank != 3) {
      cfxStream_t s;
      CFX_ASSERT_OK(cfxStreamCreate(&s));
      cfxComm_t sub = nullptr;
      // Pending work of the parent among the survivors: a ring of Send/Recv on a stream.
      const int ring[] = {1, 2, 4};
      const int pos = rk.rank == 1 ? 0 : rk.rank == 2 ? 1 : 2;
      CFX_ASSERT_OK(cfxGroupStart());
      CFX_ASSERT_OK(cfxSend(in.data(), in.size(), cfxInt32, ring[(pos + 1) % 3], rk.comm, s));
      CFX_ASSERT_OK(cfxRecv(out.data(), out.size(), cfxInt32, ring[(pos + 2) % 3], rk.comm, s));
      CFX_ASSERT_OK(cfxGroupEnd());
      CFX_ASSERT_OK(cfxCommShrink(rk.comm, excluded, 2, &sub, nullptr, CFX_SHRINK_DEFAULT));
      EXPECT_EQ(out[4095], ring[(pos + 2) % 3] + 1);  // completed before the shrink returned
      CFX_ASSERT_OK(cfxStreamDestroy(s));
      ASSERT_EQ(checkShrunk(sub, 3, pos, C::kAlltoAll), "");
      CFX_ASSERT_OK(cfxCommDestroy(sub));
    }
    ASSERT_EQ(runCase(rk, C::kAllReduce, cfxFloat64, cfxSum, 1031, false), "");
  });
}

// Shrinks of communicators made by a shrink and by a split (their own rendezvous sockets): 6
// ranks lose rank 0, then the shrunk communicator loses its rank 0 (rank 1 before); the split of
// the even ranks loses its last rank.
TEST(Shrink, ShrinkOfShrunkAndOfSplit) {
  runRanks(6, [](Rank& rk) {
    cfxComm_t even = nullptr;
    CFX_ASSERT_OK(cfxCommSplit(rk.comm, rk.rank % 2, rk.rank, &even, nullptr));
    if (rk.rank == 4) return;  // leaves the split: its peers there shrink it away
    if (rk.rank % 2 == 0) {
      const int last = 2;
      cfxComm_t sub = nullptr;
      CFX_ASSERT_OK(cfxCommShrink(even, &last, 1, &sub, nullptr, CFX_SHRINK_DEFAULT));
      ASSERT_EQ(checkShrunk(sub, 2, rk.rank / 2, C::kAllGather), "");
      CFX_ASSERT_OK(cfxCommDestroy(sub));
    }
    CFX_ASSERT_OK(cfxCommDestroy(even));
    if (rk.rank == 0) return;
    const int zero = 0;
    cfxComm_t once = nullptr, twice = nullptr;
    const int others[] = {0, 4};  // rank 4 left above
    CFX_ASSERT_OK(cfxCommShrink(rk.comm, others, 2, &once, nullptr, CFX_SHRINK_DEFAULT));
    const int r1 = rk.rank == 1 ? 0 : rk.rank == 2 ? 1 : rk.rank == 3 ? 2 : 3;
    ASSERT_EQ(checkShrunk(once, 4, r1, C::kReduceScatter), "");
    if (rk.rank != 1) {
      CFX_ASSERT_OK(cfxCommShrink(once, &zero, 1, &twice, nullptr, CFX_SHRINK_DEFAULT));
      ASSERT_EQ(checkShrunk(twice, 3, r1 - 1, C::kBroadcast), "");
      CFX_ASSERT_OK(cfxCommDestroy(twice));
    }
    CFX_ASSERT_OK(cfxCommDestroy(once));
  });
}

// A survivor dies before it joins the shrink, and (another run) the new root dies while a survivor
// has joined it and another has not: every other survivor fails with an error naming it, within
// seconds instead of at the timeout; excluding it too, they shrink after all.
class DiesDuringShrink : public ::testing::TestWithParam<int> {};

TEST_P(DiesDuringShrink, FailsCleanlyNamingIt) {
  const int second = GetParam();  // 0: the new root (rank 0 of the survivors); 2: another survivor
  RunOptions o;
  o.expectKilled = {3, second};
  o.env = {"CFX_TIMEOUT=30", "CFX_BOOTSTRAP_TIMEOUT=60"};
  runRanks(4, [second](Rank& rk) {
    std::vector<float> a(1 << 20, 1.0f), b(a.size());
    CFX_ASSERT_OK(cfxAllReduce(a.data(), b.data(), a.size(), cfxFloat32, cfxSum, rk.comm, nullptr));
    if (rk.rank == 3) raise(SIGKILL);
    cfxResult_t r = cfxSuccess;
    for (int k = 0; k < 64 && r == cfxSuccess; ++k) {
      r = cfxAllReduce(a.data(), b.data(), a.size(), cfxFloat32, cfxSum, rk.comm, nullptr);
    }
    ASSERT_NE(r, cfxSuccess);
    const int three = 3;
    cfxComm_t sub = nullptr;
    if (rk.rank == second) {
      if (second == 0) {
        // The new root: it serves the shrink, waits for rank 2, and dies meanwhile.
        std::thread([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(400));
          raise(SIGKILL);
        }).detach();
        cfxCommShrink(rk.comm, &three, 1, &sub, nullptr, CFX_SHRINK_ABORT);
        std::this_thread::sleep_for(std::chrono::seconds(5));
      }
      raise(SIGKILL);
    }
    // Rank 1 joins at once; rank 2 after the new root died (second == 0), or after rank 2 died.
    if (rk.rank == 2 || second == 2) std::this_thread::sleep_for(std::chrono::milliseconds(800));
    auto t0 = Clock::now();
    r = cfxCommShrink(rk.comm, &three, 1, &sub, nullptr, CFX_SHRINK_ABORT);
    const double secs = since(t0);
    const std::string msg = cfxGetLastError(rk.comm);
    EXPECT_EQ(r, cfxRemoteError) << msg;
    EXPECT_EQ(sub, nullptr);
    EXPECT_LT(secs, 10.0) << msg;
    if (second == 2) {
      EXPECT_NE(msg.find("exited before it joined"), std::string::npos) << msg;
    }
    if (second == 0) {
      EXPECT_NE(msg.find("the first survivor, rank 0"), std::string::npos) << msg;
    }
    std::printf("[shrink] rank %d: %s after %.2f s: %s\n", rk.rank, cfxGetErrorString(r), secs, msg.c_str());
    // Excluding both, the last survivors shrink after all.
    const int both[] = {second, 3};
    r = cfxCommShrink(rk.comm, both, 2, &sub, nullptr, CFX_SHRINK_ABORT);
    ASSERT_EQ(r, cfxSuccess) << cfxGetLastError(rk.comm);
    const int expectRank = rk.rank - (rk.rank > second ? 1 : 0);
    ASSERT_EQ(checkShrunk(sub, 2, expectRank, C::kAllReduce), "");
    CFX_ASSERT_OK(cfxCommDestroy(sub));
    CFX_ASSERT_OK(cfxCommAbort(rk.comm));
    rk.comm = nullptr;
  }, o);
}

INSTANTIATE_TEST_SUITE_P(Who, DiesDuringShrink, ::testing::Values(0, 2),
                         [](const auto& info) { return info.param == 0 ? "TheNewRoot" : "AnotherSurvivor"; });

// Survivors that disagree on excludeRanks: cfxInvalidUsage on each, saying so.
TEST(Shrink, SurvivorsThatDisagreeFailWithInvalidUsage) {
  runRanks(4, [](Rank& rk) {
    // The parent stays healthy: a last AllReduce on it keeps rank 0 (which serves the shrink's
    // bootstrap) alive until every survivor has heard why.
    struct LastAllReduce {
      Rank& rk;
      ~LastAllReduce() { EXPECT_EQ(runCase(rk, C::kAllReduce, cfxInt32, cfxSum, 7, false), ""); }
    } last{rk};
    if (rk.rank == 3) return;
    std::vector<int> excluded = rk.rank == 2 ? std::vector<int>{1, 3} : std::vector<int>{3};
    if (rk.rank == 1) excluded = {3};
    cfxComm_t sub = nullptr;
    cfxResult_t r = cfxCommShrink(rk.comm, excluded.data(), static_cast<int>(excluded.size()), &sub, nullptr,
                                  CFX_SHRINK_DEFAULT);
    const std::string msg = cfxGetLastError(rk.comm);
    EXPECT_EQ(r, cfxInvalidUsage) << msg;
    EXPECT_NE(msg.find("excludeRanks"), std::string::npos) << msg;
    EXPECT_EQ(sub, nullptr);
  });
}

// Bad arguments: cfxInvalidArgument with a message, nothing created, the communicator still works;
// cfxCommGetFailedRanks on a healthy communicator lists nobody.
TEST(Shrink, BadArgumentsAndNoFailures) {
  runRanks(3, [](Rank& rk) {
    cfxComm_t sub = reinterpret_cast<cfxComm_t>(0x1);
    const int self = rk.rank, outOfRange = 3, twice[] = {(rk.rank + 1) % 3, (rk.rank + 1) % 3}, all[] = {0, 1, 2};
    struct Bad {
      const int* ranks;
      int count;
      int flags;
      const char* says;
    } bad[] = {{&self, 1, CFX_SHRINK_DEFAULT, "this rank"},
               {&outOfRange, 1, CFX_SHRINK_DEFAULT, "not a rank"},
               {twice, 2, CFX_SHRINK_DEFAULT, "twice"},
               {all, 3, CFX_SHRINK_DEFAULT, "excludeCount 3"},
               {nullptr, 1, CFX_SHRINK_DEFAULT, "excludeRanks is NULL"},
               {nullptr, -1, CFX_SHRINK_DEFAULT, "excludeCount -1"},
               {nullptr, 0, 7, "flags 7"}};
    for (const auto& b : bad) {
      EXPECT_EQ(cfxCommShrink(rk.comm, b.ranks, b.count, &sub, nullptr, b.flags), cfxInvalidArgument);
      EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find(b.says), std::string::npos) << cfxGetLastError(rk.comm);
      EXPECT_EQ(sub, nullptr);
    }
    EXPECT_EQ(cfxCommShrink(rk.comm, nullptr, 0, nullptr, nullptr, 0), cfxInvalidArgument);
    int failed[3] = {-1, -1, -1}, count = -1;
    CFX_ASSERT_OK(cfxCommGetFailedRanks(rk.comm, failed, 3, &count));
    EXPECT_EQ(count, 0);
    EXPECT_EQ(cfxCommGetFailedRanks(rk.comm, nullptr, 3, &count), cfxInvalidArgument);
    EXPECT_EQ(cfxCommGetFailedRanks(rk.comm, failed, 3, nullptr), cfxInvalidArgument);
    ASSERT_EQ(runCase(rk, C::kAllReduce, cfxInt64, cfxSum, 1031, true), "");
    // Excluding nobody: a copy of the communicator.
    CFX_ASSERT_OK(cfxCommShrink(rk.comm, nullptr, 0, &sub, nullptr, CFX_SHRINK_DEFAULT));
    ASSERT_EQ(checkShrunk(sub, 3, rk.rank, C::kAlltoAll), "");
    CFX_ASSERT_OK(cfxCommDestroy(sub));
  });
}

}  // namespace
}  // namespace cfxtest
