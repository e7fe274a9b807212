// A failure belongs to the call it happens in (transport/net/transport.h, Transport::shutdown):
// two TCP transports on loopback, in one process. Rank 1 sends a message of call #1, then fails in
// call #2 and shuts down, telling rank 0 so. Rank 0, which had not yet posted its receive of call #1
// (it was behind), still receives that message whole, while its receives of call #2 and later, and
// every send to rank 1, fail at once with rank 1's status and words. A notice that names no call
// fails everything at once, as before. This is the rule the cross-host mismatch tests rely on
// (MultiHostFault.Different*), made deterministic: there, a slow rank 0 met it 1 run in 4.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.h"
#include "transport/net/tcp.h"

namespace conflux::net {
namespace {

// The address all-gather of two ranks, in memory.
class Exchange {
 public:
  std::vector<std::string> operator()(int rank, const std::string& mine) {
    std::unique_lock<std::mutex> lock(mu_);
    blobs_[rank] = mine;
    if (++arrived_ == 2) cv_.notify_all();
    cv_.wait(lock, [&] { return arrived_ == 2; });
    return blobs_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> blobs_ = std::vector<std::string>(2);
  int arrived_ = 0;
};

TransportSetup setupFor(int rank, Exchange& ex) {
  TransportSetup s;
  s.rank = rank;
  s.nranks = 2;
  s.peers = {1 - rank};
  s.commHash = 0x5eed;
  s.connectTimeout = std::chrono::seconds(20);
  s.exchange = [&ex, rank](const std::string& mine) { return ex(rank, mine); };
  s.describeRank = [](int r) { return "rank " + std::to_string(r); };
  s.describeCall = [](const CallTag& t) { return "call #" + std::to_string(t.seq); };
  return s;
}

// Both transports, connected over loopback.
struct Pair {
  std::unique_ptr<Transport> t[2];
  Pair() {
    setenv("CFX_SOCKET_IFNAME", "lo", 1);
    Exchange ex;
    std::thread other([&] { t[1] = createTcpTransport(setupFor(1, ex)); });
    t[0] = createTcpTransport(setupFor(0, ex));
    other.join();
    unsetenv("CFX_SOCKET_IFNAME");
  }
};

bool waitFinished(const RequestPtr& r) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!r->finished() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return r->finished();
}

constexpr uint64_t kCallA = (uint64_t{1} << 63) | 7;  // two packed calls (call_tag.h); any nonzero value
constexpr uint64_t kCallB = (uint64_t{1} << 63) | 9;

TEST(TcpNotice, EarlierCallsStillCompleteLaterOnesFail) {
  Pair p;
  std::vector<uint8_t> out(300000), in(300000, 0);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 31 + 7);
  RequestPtr sent = p.t[1]->postSend(0, kCollChannel, out.data(), out.size(), CallTag{kCallA, 1});
  // Rank 1 fails in call #2 before rank 0 has even posted its receive of call #1.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p.t[1]->shutdown("collective mismatch in call #2 (test)", Status::kInvalidUsage, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the notice is there by now
  RequestPtr got = p.t[0]->postRecv(1, kCollChannel, in.data(), in.size(), CallTag{kCallA, 1});
  ASSERT_TRUE(waitFinished(got));
  ASSERT_EQ(got->state(), Request::State::kDone) << got->errorMessage();
  EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
  RequestPtr later = p.t[0]->postRecv(1, kCollChannel, in.data(), 16, CallTag{kCallB, 2});
  ASSERT_TRUE(waitFinished(later));
  EXPECT_EQ(later->state(), Request::State::kFailed);
  EXPECT_EQ(later->errorStatus(), Status::kInvalidUsage);
  EXPECT_NE(later->errorMessage().find("collective mismatch in call #2 (test)"), std::string::npos)
      << later->errorMessage();
  EXPECT_NE(later->errorMessage().find("rank 1"), std::string::npos) << later->errorMessage();
  RequestPtr send = p.t[0]->postSend(1, kCollChannel, out.data(), 16, CallTag{kCallA, 1});
  ASSERT_TRUE(waitFinished(send));
  EXPECT_EQ(send->state(), Request::State::kFailed);
}

// A notice naming no call (a user Send/Recv failed, or an abort) fails every request at once, even
// one whose data was sent before it.
TEST(TcpNotice, WithoutACallEverythingFails) {
  Pair p;
  std::vector<uint8_t> out(1000, 3), in(1000, 0);
  RequestPtr sent = p.t[1]->postSend(0, kCollChannel, out.data(), out.size(), CallTag{kCallA, 1});
  ASSERT_TRUE(waitFinished(sent));
  p.t[1]->shutdown("it aborted its communicator", Status::kRemoteError, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  RequestPtr got = p.t[0]->postRecv(1, kCollChannel, in.data(), in.size(), CallTag{kCallA, 1});
  ASSERT_TRUE(waitFinished(got));
  EXPECT_EQ(got->state(), Request::State::kFailed);
  EXPECT_EQ(got->errorStatus(), Status::kRemoteError);
  EXPECT_NE(got->errorMessage().find("aborted"), std::string::npos) << got->errorMessage();
}

}  // namespace
}  // namespace conflux::net
