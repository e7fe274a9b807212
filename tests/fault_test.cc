// Failures become errors within the timeout, never hangs: a rank killed mid-collective, a stalled
// rank, and an abort from another thread.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace cfxtest {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

class KillTest : public ::testing::TestWithParam<int> {};

// One rank starts a large AllReduce and is SIGKILLed while it runs; every survivor returns
// cfxRemoteError naming that rank, long before CFX_TIMEOUT (30 s).
TEST_P(KillTest, RankKilledMidCollective) {
  const int n = GetParam();
  const int victim = n / 2;
  RunOptions o;
  o.expectKilled = {victim};
  o.env = {"CFX_TIMEOUT=30"};
  runRanks(n, [victim](Rank& rk) {
    const size_t count = 16 << 20;
    std::vector<float> a(count, 1.0f), b(count);
    // A first collective proves everyone is up.
    CFX_ASSERT_OK(cfxAllReduce(a.data(), b.data(), 1024, cfxFloat32, cfxSum, rk.comm, nullptr));
    constexpr int kCalls = 16;  // far more work than the victim lives for
    if (rk.rank == victim) {
      cfxStream_t s;
      CFX_ASSERT_OK(cfxStreamCreate(&s));
      for (int k = 0; k < kCalls; ++k) {
        CFX_ASSERT_OK(cfxAllReduce(a.data(), b.data(), count, cfxFloat32, cfxSum, rk.comm, s));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      raise(SIGKILL);
    }
    cfxResult_t r = cfxSuccess;
    double secs = 0;
    for (int k = 0; k < kCalls && r == cfxSuccess; ++k) {
      auto t0 = Clock::now();
      r = cfxAllReduce(a.data(), b.data(), count, cfxFloat32, cfxSum, rk.comm, nullptr);
      secs = since(t0);
    }
    EXPECT_EQ(r, cfxRemoteError) << cfxGetErrorString(r);
    EXPECT_LT(secs, 10.0);
    std::string msg = cfxGetLastError(rk.comm);
    EXPECT_NE(msg.find("rank " + std::to_string(victim)), std::string::npos) << msg;
    cfxResult_t async = cfxSuccess;
    CFX_ASSERT_OK(cfxCommGetAsyncError(rk.comm, &async));
    EXPECT_EQ(async, cfxRemoteError);
    // The communicator stays failed: later calls fail at once instead of hanging.
    auto t0 = Clock::now();
    EXPECT_EQ(cfxAllReduce(a.data(), b.data(), 16, cfxFloat32, cfxSum, rk.comm, nullptr), cfxRemoteError);
    EXPECT_LT(since(t0), 1.0);
  }, o);
}

INSTANTIATE_TEST_SUITE_P(Ranks, KillTest, ::testing::Values(2, 3, 4));

// A rank that stops making progress: every other rank returns cfxTimeout after CFX_TIMEOUT, and
// its message says in plain words which rank stalled and how (this one is busy elsewhere); the
// late rank then finds the communicator failed, with the same explanation.
TEST(Faults, StalledRankTimesOut) {
  RunOptions o;
  o.env = {"CFX_TIMEOUT=1"};
  runRanks(3, [](Rank& rk) {
    std::vector<double> a(1000, 1.0), b(1000);
    if (rk.rank == 2) std::this_thread::sleep_for(std::chrono::seconds(3));
    auto t0 = Clock::now();
    cfxResult_t r = cfxAllReduce(a.data(), b.data(), a.size(), cfxFloat64, cfxSum, rk.comm, nullptr);
    double secs = since(t0);
    const std::string msg = cfxGetLastError(rk.comm);
    EXPECT_EQ(r, cfxTimeout) << cfxGetErrorString(r) << ": " << msg;
    EXPECT_NE(msg.find("timed out"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 2 (pid "), std::string::npos) << msg;
    EXPECT_NE(msg.find(") stalled: it is not waiting in Conflux"), std::string::npos) << msg;
    if (rk.rank != 2) {
      EXPECT_GE(secs, 0.9);
      EXPECT_LT(secs, 4.0);
    }
  }, o);
}

// A Send/Recv ring (each rank sends to the next and receives from the previous) with one rank
// stopped by SIGSTOP: the ranks next to it wait for it, the others for healthy neighbours that
// wait too. Every survivor must name the stopped rank, not its neighbour, and say it is stopped.
class StoppedInRingTest : public ::testing::TestWithParam<int> {};

TEST_P(StoppedInRingTest, EverySurvivorNamesTheStoppedRank) {
  const int n = GetParam();
  const int victim = n / 2;
  RunOptions o;
  o.env = {"CFX_TIMEOUT=2"};
  runRanks(n, [&](Rank& rk) {
    std::vector<float> out(4096, 1.0f), in(4096);
    const int next = (rk.rank + 1) % n, prev = (rk.rank + n - 1) % n;
    auto step = [&]() -> cfxResult_t {
      cfxGroupStart();
      cfxSend(out.data(), out.size(), cfxFloat32, next, rk.comm, nullptr);
      cfxRecv(in.data(), in.size(), cfxFloat32, prev, rk.comm, nullptr);
      return cfxGroupEnd();
    };
    for (int i = 0; i < 3; ++i) ASSERT_EQ(step(), cfxSuccess) << cfxGetLastError(rk.comm);
    if (rk.rank == victim) {
      const pid_t me = getpid();
      if (fork() == 0) {  // continues the victim once the others have failed
        sleep(5);
        kill(me, SIGCONT);
        _exit(0);
      }
      raise(SIGSTOP);
      return;
    }
    // Sends fit the channel, so a rank may finish a step or two before it blocks.
    cfxResult_t r = cfxSuccess;
    for (int i = 0; i < 50 && r == cfxSuccess; ++i) r = step();
    const std::string msg = cfxGetLastError(rk.comm);
    EXPECT_EQ(r, cfxTimeout) << cfxGetErrorString(r) << ": " << msg;
    EXPECT_NE(msg.find("rank " + std::to_string(victim) + " (pid "), std::string::npos) << msg;
    EXPECT_NE(msg.find("stalled: it is stopped (SIGSTOP"), std::string::npos) << msg;
  }, o);
}

INSTANTIATE_TEST_SUITE_P(Ranks, StoppedInRingTest, ::testing::Values(3, 4, 5));

// Work on a stream fails on the communicator's progress thread, not in the call: the reason is
// still the communicator's last error on every rank (not only the synchronising thread's).
TEST(Faults, StreamFailureIsTheCommunicatorsLastError) {
  RunOptions o;
  o.env = {"CFX_TIMEOUT=1"};
  runRanks(2, [](Rank& rk) {
    std::vector<float> a(1 << 20, 1.0f), b(a.size());
    if (rk.rank == 1) std::this_thread::sleep_for(std::chrono::seconds(3));
    cfxStream_t s;
    CFX_ASSERT_OK(cfxStreamCreate(&s));
    cfxResult_t r = cfxAllReduce(a.data(), b.data(), a.size(), cfxFloat32, cfxSum, rk.comm, s);
    if (r == cfxSuccess) r = cfxStreamSynchronize(s);
    EXPECT_TRUE(r == cfxTimeout || r == cfxRemoteError) << cfxGetErrorString(r);
    std::thread other([&] {
      std::string msg = cfxGetLastError(rk.comm);  // another thread, through the communicator
      EXPECT_NE(msg.find("timed out"), std::string::npos) << "rank " << rk.rank << ": '" << msg << "'";
    });
    other.join();
    EXPECT_EQ(cfxStreamDestroy(s), cfxSuccess);
  }, o);
}

// cfxCommAbort from another thread makes a blocked operation return cfxAborted promptly; the peer
// that arrives later learns the communicator was aborted.
TEST(Faults, AbortFromAnotherThread) {
  RunOptions o;
  o.env = {"CFX_TIMEOUT=60"};
  runRanks(2, [](Rank& rk) {
    std::vector<int32_t> a(4096, 1), b(4096);
    if (rk.rank == 0) {
      std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        EXPECT_EQ(cfxCommAbort(rk.comm), cfxSuccess);
      });
      auto t0 = Clock::now();
      cfxResult_t r = cfxAllReduce(a.data(), b.data(), a.size(), cfxInt32, cfxSum, rk.comm, nullptr);
      EXPECT_EQ(r, cfxAborted) << cfxGetErrorString(r);
      EXPECT_LT(since(t0), 5.0);
      aborter.join();
      // The handle is gone: further use is an invalid argument, not a crash.
      EXPECT_EQ(cfxAllReduce(a.data(), b.data(), 1, cfxInt32, cfxSum, rk.comm, nullptr), cfxInvalidArgument);
      rk.comm = nullptr;
    } else {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      auto t0 = Clock::now();
      cfxResult_t r = cfxAllReduce(a.data(), b.data(), a.size(), cfxInt32, cfxSum, rk.comm, nullptr);
      EXPECT_EQ(r, cfxRemoteError) << cfxGetErrorString(r);
      EXPECT_LT(since(t0), 5.0);
      EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("aborted"), std::string::npos) << cfxGetLastError(rk.comm);
    }
  }, o);
}

// Ranks that call different collectives get a clear error instead of silent corruption, within
// milliseconds, whichever algorithm each rank's call takes: (10, 12) floats are both on the
// mailbox path, (200, 300) one on each, (5000, 6000) both on the phased path.
class MismatchTest : public ::testing::TestWithParam<std::pair<size_t, size_t>> {};

TEST_P(MismatchTest, MismatchedCountsAreDetected) {
  auto [odd, normal] = GetParam();
  RunOptions o;
  o.env = {"CFX_TIMEOUT=20"};
  runRanks(3, [odd = odd, normal = normal](Rank& rk) {
    std::vector<float> a(normal, 1.0f), b(normal);
    size_t count = rk.rank == 1 ? odd : normal;
    auto t0 = Clock::now();
    cfxResult_t r = cfxAllReduce(a.data(), b.data(), count, cfxFloat32, cfxSum, rk.comm, nullptr);
    EXPECT_EQ(r, cfxInvalidUsage) << cfxGetErrorString(r);
    EXPECT_LT(since(t0), 5.0);
    std::string m = cfxGetLastError(rk.comm);
    EXPECT_NE(m.find("collective mismatch"), std::string::npos) << m;
    EXPECT_NE(m.find("count " + std::to_string(odd)), std::string::npos) << m;
  }, o);
}

// Broadcast's root on the latency path waits for no one: it may return before anyone has seen
// the mismatch, and then its next call fails with it (the readers that found it poison the
// communicator as a usage error); the readers fail at once.
TEST(Mismatch, RootThatWaitsForNoOneLearnsAtItsNextCall) {
  RunOptions o;
  o.env = {"CFX_TIMEOUT=20"};
  runRanks(3, [](Rank& rk) {
    std::vector<float> a(10, 1.0f), b(10);
    auto t0 = Clock::now();
    cfxResult_t r = rk.rank == 0 ? cfxBroadcast(a.data(), b.data(), 10, cfxFloat32, 0, rk.comm, nullptr)
                                 : cfxAllReduce(a.data(), b.data(), 10, cfxFloat32, cfxSum, rk.comm, nullptr);
    if (rk.rank == 0 && r == cfxSuccess) r = cfxAllReduce(a.data(), b.data(), 10, cfxFloat32, cfxSum, rk.comm, nullptr);
    EXPECT_EQ(r, cfxInvalidUsage) << cfxGetErrorString(r);
    EXPECT_LT(since(t0), 5.0);
    std::string m = cfxGetLastError(rk.comm);
    EXPECT_NE(m.find("collective mismatch"), std::string::npos) << m;
    EXPECT_NE(m.find("Broadcast"), std::string::npos) << m;
  }, o);
}

INSTANTIATE_TEST_SUITE_P(Paths, MismatchTest,
                         ::testing::Values(std::make_pair(size_t{10}, size_t{12}), std::make_pair(size_t{200}, size_t{300}),
                                           std::make_pair(size_t{5000}, size_t{6000})));

}  // namespace
}  // namespace cfxtest
