// Send/Recv and group semantics: exact payloads, FIFO matching per peer, self-sends, exchanges
// that only complete because they are grouped, and size mismatches.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "harness.h"

namespace cfxtest {
namespace {

// Byte i of the message from src to dst, tagged with the message number.
uint8_t payload(int src, int dst, int msg, size_t i) { return static_cast<uint8_t>(src * 31 + dst * 7 + msg * 13 + i); }

std::vector<uint8_t> message(int src, int dst, int msg, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = payload(src, dst, msg, i);
  return v;
}

class P2pTest : public ::testing::TestWithParam<int> {};

// Everyone sends to everyone (itself included) 1 MB, far more than a channel holds: without the
// group every rank would block in its first send.
void allPairsExchange(int nranks, const RunOptions& o = {}) {
  runRanks(nranks, [](Rank& rk) {
    const size_t bytes = (1 << 20) + 3;
    std::vector<std::vector<uint8_t>> out(rk.nranks), in(rk.nranks, std::vector<uint8_t>(bytes));
    CFX_ASSERT_OK(cfxGroupStart());
    for (int p = 0; p < rk.nranks; ++p) {
      out[p] = message(rk.rank, p, 0, bytes);
      CFX_ASSERT_OK(cfxSend(out[p].data(), bytes, cfxUint8, p, rk.comm, nullptr));
      CFX_ASSERT_OK(cfxRecv(in[p].data(), bytes, cfxUint8, p, rk.comm, nullptr));
    }
    CFX_ASSERT_OK(cfxGroupEnd());
    for (int p = 0; p < rk.nranks; ++p) ASSERT_EQ(in[p], message(p, rk.rank, 0, bytes)) << "from rank " << p;
  }, o);
}
TEST_P(P2pTest, GroupedAllPairsExchange) { allPairsExchange(GetParam()); }

// Ring shift with several messages of different sizes to the same peer: matched in issue order.
void ringFifoOrder(int nranks, const RunOptions& o = {}) {
  runRanks(nranks, [](Rank& rk) {
    const int next = (rk.rank + 1) % rk.nranks, prev = (rk.rank + rk.nranks - 1) % rk.nranks;
    const size_t sizes[] = {1, 333333, 17, 0, 65536};
    std::vector<std::vector<uint8_t>> out, in;
    for (int m = 0; m < 5; ++m) {
      out.push_back(message(rk.rank, next, m, sizes[m]));
      in.emplace_back(sizes[m]);
    }
    CFX_ASSERT_OK(cfxGroupStart());
    for (int m = 0; m < 5; ++m) {
      CFX_ASSERT_OK(cfxSend(out[m].data(), sizes[m], cfxUint8, next, rk.comm, nullptr));
      CFX_ASSERT_OK(cfxRecv(in[m].data(), sizes[m], cfxUint8, prev, rk.comm, nullptr));
    }
    CFX_ASSERT_OK(cfxGroupEnd());
    for (int m = 0; m < 5; ++m) ASSERT_EQ(in[m], message(prev, rk.rank, m, sizes[m])) << "message " << m;
  }, o);
}
TEST_P(P2pTest, RingFifoOrder) { ringFifoOrder(GetParam()); }

// Small grouped exchanges with both neighbours, call after call, blocking and on a stream: the
// express path of small transfers (executor.cc) must finish every one before the group returns
// (blocking) or the stream synchronises. Sizes around the express limit (4 KiB) and a channel slot.
TEST_P(P2pTest, SmallGroupedExchangesCallAfterCall) {
  runRanks(GetParam(), [](Rank& rk) {
    const int next = (rk.rank + 1) % rk.nranks, prev = (rk.rank + rk.nranks - 1) % rk.nranks;
    const size_t sizes[] = {1, 8, 63, 64, 4096, 4097};
    cfxStream_t stream = nullptr;
    CFX_ASSERT_OK(cfxStreamCreate(&stream));
    for (int it = 0; it < 120; ++it) {
      const size_t bytes = sizes[it % 6];
      const bool blocking = (it / 6) % 2 == 0;
      std::vector<uint8_t> toNext = message(rk.rank, next, it, bytes), toPrev = message(rk.rank, prev, it + 1000, bytes);
      std::vector<uint8_t> fromPrev(bytes), fromNext(bytes);
      cfxStream_t s = blocking ? nullptr : stream;
      CFX_ASSERT_OK(cfxGroupStart());
      CFX_ASSERT_OK(cfxSend(toNext.data(), bytes, cfxUint8, next, rk.comm, s));
      CFX_ASSERT_OK(cfxRecv(fromPrev.data(), bytes, cfxUint8, prev, rk.comm, s));
      CFX_ASSERT_OK(cfxSend(toPrev.data(), bytes, cfxUint8, prev, rk.comm, s));
      CFX_ASSERT_OK(cfxRecv(fromNext.data(), bytes, cfxUint8, next, rk.comm, s));
      CFX_ASSERT_OK(cfxGroupEnd());
      if (!blocking) CFX_ASSERT_OK(cfxStreamSynchronize(stream));
      ASSERT_EQ(fromPrev, message(prev, rk.rank, it, bytes)) << "call " << it << ", " << bytes << " bytes";
      ASSERT_EQ(fromNext, message(next, rk.rank, it + 1000, bytes)) << "call " << it << ", " << bytes << " bytes";
    }
    CFX_ASSERT_OK(cfxStreamDestroy(stream));
  });
}

// A collective and point-to-point operations in one group.
TEST_P(P2pTest, CollectiveInsideGroup) {
  runRanks(GetParam(), [](Rank& rk) {
    const int next = (rk.rank + 1) % rk.nranks, prev = (rk.rank + rk.nranks - 1) % rk.nranks;
    int32_t x = rk.rank + 1, sum = 0, got = -1;
    int32_t mine = 1000 + rk.rank;
    CFX_ASSERT_OK(cfxGroupStart());
    CFX_ASSERT_OK(cfxRecv(&got, 1, cfxInt32, prev, rk.comm, nullptr));
    CFX_ASSERT_OK(cfxAllReduce(&x, &sum, 1, cfxInt32, cfxSum, rk.comm, nullptr));
    CFX_ASSERT_OK(cfxSend(&mine, 1, cfxInt32, next, rk.comm, nullptr));
    CFX_ASSERT_OK(cfxGroupEnd());
    EXPECT_EQ(sum, rk.nranks * (rk.nranks + 1) / 2);
    EXPECT_EQ(got, 1000 + prev);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, P2pTest, ::testing::Values(1, 2, 3, 5, 8));

// The same with every Send of 1 byte or more offered for a single copy (the receiver reads the
// sender's buffer; transport/shm/channel.h): forced, as it is off by default.
RunOptions singleCopy() {
  RunOptions o;
  o.env = {"CFX_CMA=1", "CFX_P2P_CMA_MIN_BYTES=1"};
  return o;
}
class P2pSingleCopyTest : public ::testing::TestWithParam<int> {};
TEST_P(P2pSingleCopyTest, GroupedAllPairsExchange) { allPairsExchange(GetParam(), singleCopy()); }
TEST_P(P2pSingleCopyTest, RingFifoOrder) { ringFifoOrder(GetParam(), singleCopy()); }
INSTANTIATE_TEST_SUITE_P(Ranks, P2pSingleCopyTest, ::testing::Values(2, 3, 5));

TEST(P2pSingleCopy, SizeMismatchIsAnError) {
  RunOptions o = singleCopy();
  o.env.push_back("CFX_TIMEOUT=20");
  runRanks(2, [](Rank& rk) {
    std::vector<uint8_t> buf(1 << 20);
    cfxResult_t r = rk.rank == 0 ? cfxSend(buf.data(), 400000, cfxUint8, 1, rk.comm, nullptr)
                                 : cfxRecv(buf.data(), 800000, cfxUint8, 0, rk.comm, nullptr);
    if (rk.rank == 1) {
      EXPECT_EQ(r, cfxInvalidUsage);
      EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("rank 0 sent 400000 bytes"), std::string::npos)
          << cfxGetLastError(rk.comm);
    } else {
      // The offer is never read: the sender learns of the failure from the poisoned communicator,
      // as the usage error it is.
      EXPECT_EQ(r, cfxInvalidUsage) << cfxGetErrorString(r);
      EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("rank 0 sent 400000 bytes"), std::string::npos)
          << cfxGetLastError(rk.comm);
    }
  }, o);
}

// Blocking send and receive of a large message between two ranks (no group needed).
TEST(P2p, BlockingPair) {
  runRanks(2, [](Rank& rk) {
    const size_t bytes = 3 << 20;
    if (rk.rank == 0) {
      auto m = message(0, 1, 0, bytes);
      CFX_ASSERT_OK(cfxSend(m.data(), bytes / 4, cfxFloat32, 1, rk.comm, nullptr));
    } else {
      std::vector<uint8_t> in(bytes);
      CFX_ASSERT_OK(cfxRecv(in.data(), bytes / 4, cfxFloat32, 0, rk.comm, nullptr));
      ASSERT_EQ(in, message(0, 1, 0, bytes));
    }
  });
}

// Without a group the same exchange deadlocks; Conflux reports it as a timeout instead of hanging.
TEST(P2p, UngroupedExchangeTimesOut) {
  RunOptions o;
  o.env = {"CFX_TIMEOUT=1"};
  runRanks(2, [](Rank& rk) {
    const size_t bytes = 4 << 20;
    std::vector<uint8_t> out(bytes, 1);
    auto t0 = std::chrono::steady_clock::now();
    cfxResult_t r = cfxSend(out.data(), bytes, cfxUint8, 1 - rk.rank, rk.comm, nullptr);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // One rank times out; the other learns of it at once from the poisoned communicator.
    EXPECT_TRUE(r == cfxTimeout || r == cfxRemoteError) << cfxGetErrorString(r);
    EXPECT_LT(secs, 10.0);
    EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("Send to rank"), std::string::npos)
        << cfxGetLastError(rk.comm);
    cfxResult_t async = cfxSuccess;
    CFX_ASSERT_OK(cfxCommGetAsyncError(rk.comm, &async));
    EXPECT_EQ(async, r);
  }, o);
}

TEST(P2p, SizeMismatchIsAnError) {
  RunOptions o;
  o.env = {"CFX_TIMEOUT=20"};
  runRanks(2, [](Rank& rk) {
    std::vector<uint8_t> buf(1000);
    cfxResult_t r = rk.rank == 0 ? cfxSend(buf.data(), 400, cfxUint8, 1, rk.comm, nullptr)
                                 : cfxRecv(buf.data(), 800, cfxUint8, 0, rk.comm, nullptr);
    if (rk.rank == 1) {
      EXPECT_EQ(r, cfxInvalidUsage);
      EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("rank 0 sent 400 bytes"), std::string::npos)
          << cfxGetLastError(rk.comm);
    } else {
      // The 400 bytes fit in the channel, so the send itself may already have completed.
      EXPECT_TRUE(r == cfxSuccess || r == cfxInvalidUsage) << cfxGetErrorString(r);
    }
  }, o);
}

// The same mismatch inside a group: cfxGroupEnd fails, and the reason is the communicator's last
// error as well as the thread's (a C user asks cfxGetLastError(comm) of the communicator).
TEST(P2p, GroupFailureIsTheCommunicatorsLastError) {
  RunOptions o;
  o.env = {"CFX_TIMEOUT=20"};
  runRanks(2, [](Rank& rk) {
    std::vector<uint8_t> in(1000), out(1000, 7);
    const int peer = 1 - rk.rank;
    CFX_ASSERT_OK(cfxGroupStart());
    CFX_ASSERT_OK(cfxSend(out.data(), rk.rank == 0 ? 400 : 800, cfxUint8, peer, rk.comm, nullptr));
    CFX_ASSERT_OK(cfxRecv(in.data(), 800, cfxUint8, peer, rk.comm, nullptr));
    cfxResult_t r = cfxGroupEnd();
    if (rk.rank == 1) {
      EXPECT_EQ(r, cfxInvalidUsage) << cfxGetErrorString(r);
      std::string commErr = cfxGetLastError(rk.comm);
      EXPECT_NE(commErr.find("cfxGroupEnd: "), std::string::npos) << commErr;
      EXPECT_NE(commErr.find("rank 0 sent 400 bytes"), std::string::npos) << commErr;
      EXPECT_EQ(commErr, std::string(cfxGetLastError(nullptr)));
    } else if (r != cfxSuccess) {
      EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("cfxGroupEnd: "), std::string::npos)
          << cfxGetLastError(rk.comm);
    }
  }, o);
}

// A receiver that sleeps at once (no spinning, no yields) is woken by the send, not by the end of
// its sleep (100 ms here): a send leaves its peer's doorbell to the end of the pass or the call
// (Context::oweRing), and a wake-up lost there would cost each message a whole sleep. Ping-pong of
// 8 B, blocking and grouped, the sender pausing first so that its peer is asleep: 80 messages took
// 0.2 s, and 7.4 s with the send's ring left out.
TEST(P2p, SleepingReceiversAreWokenBySends) {
  RunOptions o;
  o.env = {"CFX_SPIN=0", "CFX_YIELDS=0", "CFX_LIVENESS_MS=100"};
  runRanks(2, [](Rank& rk) {
    const int peer = 1 - rk.rank;
    const auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < 40; ++it) {
      const bool grouped = it % 2 == 1;
      const uint64_t ping = 1000 + it, pong = 2000 + it;
      uint64_t got = 0;
      auto exchange = [&](const uint64_t* out, bool sendFirst) {
        if (sendFirst) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (grouped) CFX_ASSERT_OK(cfxGroupStart());
        if (sendFirst) {
          CFX_ASSERT_OK(cfxSend(out, 1, cfxUint64, peer, rk.comm, nullptr));
        } else {
          CFX_ASSERT_OK(cfxRecv(&got, 1, cfxUint64, peer, rk.comm, nullptr));
        }
        if (grouped) CFX_ASSERT_OK(cfxGroupEnd());
      };
      exchange(&ping, rk.rank == 0);
      exchange(&pong, rk.rank == 1);
      ASSERT_EQ(got, rk.rank == 0 ? pong : ping) << "message " << it;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(secs, 2.0) << "80 messages to a sleeping receiver: a send did not wake its peer";
  }, o);
}

}  // namespace
}  // namespace cfxtest
