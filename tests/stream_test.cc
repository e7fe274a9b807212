// Asynchronous streams: in-order execution on the progress engine, query and synchronize, and
// ordering between stream work and blocking calls.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#include "harness.h"

namespace cfxtest {
namespace {

class StreamTest : public ::testing::TestWithParam<int> {};

// A chain of dependent operations on one stream: each reads what the previous one wrote.
TEST_P(StreamTest, DependentChainRunsInOrder) {
  runRanks(GetParam(), [](Rank& rk) {
    const int n = rk.nranks;
    const size_t count = 300001;
    std::vector<int64_t> a(count), b(count), c(count * n), d(count);
    for (size_t i = 0; i < count; ++i) a[i] = static_cast<int64_t>(i) * (rk.rank + 1);
    cfxStream_t s;
    CFX_ASSERT_OK(cfxStreamCreate(&s));
    CFX_ASSERT_OK(cfxAllReduce(a.data(), b.data(), count, cfxInt64, cfxSum, rk.comm, s));  // b = i*n(n+1)/2
    CFX_ASSERT_OK(cfxAllGather(b.data(), c.data(), count, cfxInt64, rk.comm, s));          // c = n copies of b
    CFX_ASSERT_OK(cfxReduceScatter(c.data(), d.data(), count, cfxInt64, cfxMax, rk.comm, s));  // d = b
    cfxResult_t q = cfxStreamQuery(s);
    EXPECT_TRUE(q == cfxSuccess || q == cfxInProgress);
    CFX_ASSERT_OK(cfxStreamSynchronize(s));
    EXPECT_EQ(cfxStreamQuery(s), cfxSuccess);
    const int64_t tri = static_cast<int64_t>(n) * (n + 1) / 2;
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(b[i], static_cast<int64_t>(i) * tri);
      ASSERT_EQ(d[i], static_cast<int64_t>(i) * tri);
    }
    CFX_ASSERT_OK(cfxStreamDestroy(s));
  });
}

// Work queued on a stream runs before a later blocking call on the same communicator.
TEST_P(StreamTest, BlockingCallWaitsForQueuedWork) {
  runRanks(GetParam(), [](Rank& rk) {
    const size_t count = 1 << 20;
    std::vector<float> x(count, 1.0f), y(count, 0.0f), z(count, 0.0f);
    cfxStream_t s;
    CFX_ASSERT_OK(cfxStreamCreate(&s));
    for (int k = 0; k < 4; ++k) CFX_ASSERT_OK(cfxAllReduce(x.data(), y.data(), count, cfxFloat32, cfxSum, rk.comm, s));
    CFX_ASSERT_OK(cfxAllReduce(y.data(), z.data(), count, cfxFloat32, cfxSum, rk.comm, nullptr));
    for (size_t i = 0; i < count; i += 4099) ASSERT_EQ(z[i], float(rk.nranks * rk.nranks));
    CFX_ASSERT_OK(cfxStreamSynchronize(s));
    CFX_ASSERT_OK(cfxStreamDestroy(s));
  });
}

// Two streams, one communicator, a group on a stream, and an empty group.
TEST_P(StreamTest, GroupOnStream) {
  runRanks(GetParam(), [](Rank& rk) {
    const int n = rk.nranks, next = (rk.rank + 1) % n, prev = (rk.rank + n - 1) % n;
    cfxStream_t s1, s2;
    CFX_ASSERT_OK(cfxStreamCreate(&s1));
    CFX_ASSERT_OK(cfxStreamCreate(&s2));
    std::vector<int32_t> out(100000, rk.rank), in(100000, -1);
    CFX_ASSERT_OK(cfxGroupStart());
    CFX_ASSERT_OK(cfxSend(out.data(), out.size(), cfxInt32, next, rk.comm, s1));
    CFX_ASSERT_OK(cfxRecv(in.data(), in.size(), cfxInt32, prev, rk.comm, s2));
    CFX_ASSERT_OK(cfxGroupEnd());
    CFX_ASSERT_OK(cfxGroupStart());
    CFX_ASSERT_OK(cfxGroupEnd());
    CFX_ASSERT_OK(cfxStreamSynchronize(s1));
    CFX_ASSERT_OK(cfxStreamSynchronize(s2));
    for (int32_t v : in) ASSERT_EQ(v, prev);
    CFX_ASSERT_OK(cfxStreamDestroy(s1));
    CFX_ASSERT_OK(cfxStreamDestroy(s2));
  });
}

// Enqueueing returns while the peers have not called yet: rank 0 enqueues, and only then lets
// the others call (through a file). An enqueue that waited for its peers would never return.
TEST_P(StreamTest, EnqueueReturnsBeforeThePeersCall) {
  if (GetParam() < 2) GTEST_SKIP() << "needs peers";
  RunOptions opts;
  opts.deadlineSeconds = 20;
  runRanks(GetParam(), [](Rank& rk) {
    const std::filesystem::path gate = "/tmp/cfx-stream-gate." + std::to_string(getppid());
    std::vector<int32_t> x(1000, rk.rank + 1), y(1000, 0);
    cfxStream_t s;
    CFX_ASSERT_OK(cfxStreamCreate(&s));
    if (rk.rank == 0) {
      CFX_ASSERT_OK(cfxAllReduce(x.data(), y.data(), x.size(), cfxInt32, cfxSum, rk.comm, s));
      std::ofstream(gate) << "open";
    } else {
      while (!std::filesystem::exists(gate)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      CFX_ASSERT_OK(cfxAllReduce(x.data(), y.data(), x.size(), cfxInt32, cfxSum, rk.comm, s));
    }
    CFX_ASSERT_OK(cfxStreamSynchronize(s));
    for (int32_t v : y) ASSERT_EQ(v, rk.nranks * (rk.nranks + 1) / 2);
    CFX_ASSERT_OK(cfxStreamDestroy(s));
    if (rk.rank == 0) std::filesystem::remove(gate);  // every peer has called: all passed the gate
  }, opts);
}

INSTANTIATE_TEST_SUITE_P(Ranks, StreamTest, ::testing::Values(1, 2, 3, 4, 7));

}  // namespace
}  // namespace cfxtest
