// Latency-path operations that wait for no one: Broadcast's root and Reduce's other ranks return
// once their mailbox is published, so they run ahead of slow ranks by up to CFX_RUNAHEAD calls
// (default 126), then wait for the slowest reader. Long mixed sequences (rotating roots, symmetric
// latency-path calls and staged collectives in between, one rank delayed now and then) must give
// exact values everywhere, whichever rank is late.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace cfxtest {
namespace {

class RunAheadTest : public ::testing::TestWithParam<int> {};

// The value rank r contributes to element i of step k (small integers: exact in float).
float value(int k, int r, size_t i) { return static_cast<float>((k * 7 + r * 3 + static_cast<int>(i % 11)) % 64); }

TEST_P(RunAheadTest, MixedSequenceWithALateRank) {
  runRanks(GetParam(), [](Rank& rk) {
    const int n = rk.nranks;
    const int kSteps = 60;
    const size_t small = 37, large = 300001;  // a latency-path call, and a staged one
    std::vector<float> in(large), out(large);
    for (int k = 0; k < kSteps; ++k) {
      // One rank at a time falls behind for a moment, so the others run ahead of it.
      if (k % 10 == 0 && rk.rank == (k / 10) % n) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const int root = k % n;
      const int kind = k % 5;
      const size_t count = kind == 4 ? large : small;
      for (size_t i = 0; i < count; ++i) in[i] = value(k, rk.rank, i);
      std::fill(out.begin(), out.begin() + count, -1.0f);
      if (kind == 0 || kind == 1) {  // Broadcast, out of place and in place
        if (kind == 0) {
          CFX_ASSERT_OK(cfxBroadcast(in.data(), out.data(), count, cfxFloat32, root, rk.comm, nullptr));
        } else {
          if (rk.rank == root) std::copy(in.begin(), in.begin() + count, out.begin());
          CFX_ASSERT_OK(cfxBroadcast(out.data(), out.data(), count, cfxFloat32, root, rk.comm, nullptr));
        }
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], value(k, root, i)) << "step " << k << " i " << i;
      } else if (kind == 2) {  // Reduce: only the root's output is defined
        CFX_ASSERT_OK(cfxReduce(in.data(), out.data(), count, cfxFloat32, cfxSum, root, rk.comm, nullptr));
        if (rk.rank == root) {
          for (size_t i = 0; i < count; ++i) {
            float want = 0;
            for (int r = 0; r < n; ++r) want += value(k, r, i);
            ASSERT_EQ(out[i], want) << "step " << k << " i " << i;
          }
        }
      } else {  // AllReduce, latency path (kind 3) and staged (kind 4)
        CFX_ASSERT_OK(cfxAllReduce(in.data(), out.data(), count, cfxFloat32, cfxMax, rk.comm, nullptr));
        for (size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int r = 0; r < n; ++r) want = std::max(want, value(k, r, i));
          ASSERT_EQ(out[i], want) << "step " << k << " i " << i;
        }
      }
    }
  });
}

// A root that broadcasts many times in a row while the others have not started: it stops when
// every mailbox is full and goes on as the readers catch up; every reader gets every value. Then
// the same for Reduce, whose root comes late.
TEST_P(RunAheadTest, FarAheadOfTheReaders) {
  runRanks(GetParam(), [](Rank& rk) {
    const int kCalls = 100;
    if (rk.rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int k = 0; k < kCalls; ++k) {
      int64_t v = rk.rank == 0 ? 1000 + k : -1;
      CFX_ASSERT_OK(cfxBroadcast(&v, &v, 1, cfxInt64, 0, rk.comm, nullptr));
      ASSERT_EQ(v, 1000 + k);
    }
    if (rk.rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int k = 0; k < kCalls; ++k) {
      int32_t c = rk.rank + k, sum = -1;
      CFX_ASSERT_OK(cfxReduce(&c, &sum, 1, cfxInt32, cfxSum, 0, rk.comm, nullptr));
      if (rk.rank == 0) {
        ASSERT_EQ(sum, rk.nranks * k + rk.nranks * (rk.nranks - 1) / 2) << "call " << k;
      }
    }
  });
}

// How far: with CFX_RUNAHEAD=w (0: unset), Broadcast's root returns `expect` calls while the readers
// have not started (they sleep 600 ms), and its next call waits for them.
void rootReturnsItsWindow(int nranks, int window, int expect) {
  RunOptions o;
  if (window > 0) o.env = {"CFX_RUNAHEAD=" + std::to_string(window)};
  runRanks(nranks, [expect](Rank& rk) {
    if (rk.nranks == 1) return;  // nobody to wait for
    const auto t0 = std::chrono::steady_clock::now();
    auto ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
    if (rk.rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(600));
    for (int k = 0; k <= expect; ++k) {
      int64_t v = rk.rank == 0 ? 1000 + k : -1;
      CFX_ASSERT_OK(cfxBroadcast(&v, &v, 1, cfxInt64, 0, rk.comm, nullptr));
      ASSERT_EQ(v, 1000 + k);
      if (rk.rank != 0 || k + 1 < expect) continue;
      if (k + 1 == expect) {
        EXPECT_LT(ms(), 200.0) << "the root's first " << expect << " calls waited for the readers";
      } else {
        EXPECT_GT(ms(), 300.0) << "call " << k + 1 << " returned before the readers started";
      }
    }
  }, o);
}

TEST_P(RunAheadTest, RootReturnsOneCallWithWindowOne) { rootReturnsItsWindow(GetParam(), 1, 1); }
TEST_P(RunAheadTest, RootReturnsFiveCallsWithWindowFive) { rootReturnsItsWindow(GetParam(), 5, 5); }
// A window whose half is not a multiple of the stride at which the root looks at its earlier
// calls' confirmations (executor.h, kConfirmStride): it looks at 10 and 18 calls, and still
// returns all 20.
TEST_P(RunAheadTest, RootReturnsTwentyCallsWithWindowTwenty) { rootReturnsItsWindow(GetParam(), 20, 20); }
TEST_P(RunAheadTest, RootReturns126CallsByDefault) { rootReturnsItsWindow(GetParam(), 0, 126); }

INSTANTIATE_TEST_SUITE_P(Ranks, RunAheadTest, ::testing::Values(1, 2, 3, 4, 7));

// A root that returned a Broadcast before its reader arrived, and whose reader then stalls: with a
// window of one, the root's next call waits for that confirmation and times out within
// CFX_TIMEOUT, naming the call it was confirming (held by its number alone, ops/early_calls.h)
// and the rank it waits for.
TEST(RunAhead, RootTimesOutNamingTheCallItConfirms) {
  RunOptions o;
  o.env = {"CFX_RUNAHEAD=1", "CFX_TIMEOUT=1"};
  runRanks(2, [](Rank& rk) {
    int64_t v = rk.rank == 0 ? 7 : -1;
    if (rk.rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(4));
      (void)cfxBroadcast(&v, &v, 1, cfxInt64, 0, rk.comm, nullptr);  // the root has failed: any outcome, no hang
      return;
    }
    CFX_ASSERT_OK(cfxBroadcast(&v, &v, 1, cfxInt64, 0, rk.comm, nullptr));  // returns early
    const auto t0 = std::chrono::steady_clock::now();
    const cfxResult_t r = cfxBroadcast(&v, &v, 1, cfxInt64, 0, rk.comm, nullptr);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string msg = cfxGetLastError(rk.comm);
    EXPECT_EQ(r, cfxTimeout) << cfxGetErrorString(r) << ": " << msg;
    EXPECT_NE(msg.find("Broadcast #1 (latency path, returned; confirming every rank's call), ranks not yet arrived: 1"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("rank 1 (pid "), std::string::npos) << msg;
    EXPECT_NE(msg.find("Broadcast #0 (latency path, not started"), std::string::npos) << msg;
    EXPECT_GE(secs, 0.9);
    EXPECT_LT(secs, 3.5);
  }, o);
}

// Ranks asleep in a latency-path call are woken by the publication they wait for, whose ring
// follows the engine's release (Engine::releaseAndRing) instead of a fence of its own. With no
// spinning and no yields every wait sleeps. The late rank publishes 2 ms after the others arrive,
// then makes no call for 40 ms, so a ring lost would leave them asleep for at least that long.
TEST(LatencyPath, SleepingRanksAreWokenByThePublication) {
  RunOptions o;
  o.env = {"CFX_SPIN=0", "CFX_YIELDS=0", "CFX_LIVENESS_MS=100"};
  runRanks(3, [](Rank& rk) {
    std::vector<double> waits;  // ms, of the calls this rank made before the late one's
    // `call` on every rank, rank `late` 2 ms after the others; then every rank in step again.
    const auto step = [&](int late, auto&& call) {
      if (rk.rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const auto t0 = std::chrono::steady_clock::now();
      call();
      const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - t0;
      if (rk.rank == late) {
        std::this_thread::sleep_for(std::chrono::milliseconds(40));
      } else {
        waits.push_back(took.count());
      }
      int64_t token = 1, all = 0;
      CFX_ASSERT_OK(cfxAllReduce(&token, &all, 1, cfxInt64, cfxSum, rk.comm, nullptr));
      ASSERT_EQ(all, rk.nranks);
    };
    for (int64_t it = 0; it < 8; ++it) {
      // Broadcast: the readers wait for the root.
      int64_t v = rk.rank == 0 ? 100 + it : -1;
      step(0, [&] { CFX_ASSERT_OK(cfxBroadcast(&v, &v, 1, cfxInt64, 0, rk.comm, nullptr)); });
      ASSERT_EQ(v, 100 + it) << "call " << it;
      // Reduce: the root waits for the last rank, which returns early.
      const int64_t in = rk.rank + it;
      int64_t out = -1;
      step(2, [&] { CFX_ASSERT_OK(cfxReduce(&in, &out, 1, cfxInt64, cfxSum, 0, rk.comm, nullptr)); });
      if (rk.rank == 0) {
        ASSERT_EQ(out, 3 * it + 3) << "call " << it;
      }
      // AllReduce: every rank waits for rank 1.
      step(1, [&] { CFX_ASSERT_OK(cfxAllReduce(&in, &out, 1, cfxInt64, cfxSum, rk.comm, nullptr)); });
      ASSERT_EQ(out, 3 * it + 3) << "call " << it;
    }
    std::sort(waits.begin(), waits.end());
    EXPECT_LT(waits[waits.size() / 2], 20.0) << "median of " << waits.size()
                                              << " waits in ms: a publication did not wake its sleeping peers";
  }, o);
}

}  // namespace
}  // namespace cfxtest
