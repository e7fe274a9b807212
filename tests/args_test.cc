// Every invalid argument returns cfxInvalidArgument with a message, touches nothing, and leaves the
// communicator usable.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace cfxtest {
namespace {

// Expects `call` to fail with cfxInvalidArgument and a message containing `needle`.
#define EXPECT_INVALID(call, comm, needle)                                                       \
  do {                                                                                           \
    cfxResult_t r_ = (call);                                                                     \
    EXPECT_EQ(r_, cfxInvalidArgument) << #call;                                                  \
    std::string m_ = cfxGetLastError(comm);                                                      \
    EXPECT_NE(m_.find(needle), std::string::npos) << #call << " gave message: " << m_;           \
  } while (0)

TEST(Args, InvalidArgumentsAreRejected) {
  runRanks(3, [](Rank& rk) {
    cfxComm_t c = rk.comm;
    std::vector<float> a(64, 1.0f), b(64 * 3, 7.0f);
    const std::vector<float> before = b;
    const auto badType = static_cast<cfxDataType_t>(12);
    const auto negType = static_cast<cfxDataType_t>(-1);
    const auto badOp = static_cast<cfxRedOp_t>(5);

    EXPECT_INVALID(cfxAllReduce(a.data(), b.data(), 4, cfxFloat32, cfxSum, nullptr, nullptr), nullptr, "comm is NULL");
    EXPECT_INVALID(cfxAllReduce(nullptr, b.data(), 4, cfxFloat32, cfxSum, c, nullptr), c, "sendbuff is NULL");
    EXPECT_INVALID(cfxAllReduce(a.data(), nullptr, 4, cfxFloat32, cfxSum, c, nullptr), c, "recvbuff is NULL");
    EXPECT_INVALID(cfxAllReduce(a.data(), b.data(), 4, badType, cfxSum, c, nullptr), c, "invalid datatype 12");
    EXPECT_INVALID(cfxAllReduce(a.data(), b.data(), 4, negType, cfxSum, c, nullptr), c, "invalid datatype -1");
    EXPECT_INVALID(cfxAllReduce(a.data(), b.data(), 4, cfxFloat32, badOp, c, nullptr), c, "invalid reduction op 5");
    EXPECT_INVALID(cfxAllReduce(a.data(), b.data(), SIZE_MAX / 2, cfxFloat32, cfxSum, c, nullptr), c, "overflows");
    EXPECT_INVALID(cfxAllReduce(a.data(), a.data() + 1, 8, cfxFloat32, cfxSum, c, nullptr), c, "overlap");
    EXPECT_INVALID(cfxReduce(a.data(), b.data(), 4, cfxFloat32, cfxSum, 3, c, nullptr), c, "root 3 is out of range");
    EXPECT_INVALID(cfxReduce(a.data(), b.data(), 4, cfxFloat32, cfxSum, -1, c, nullptr), c, "root -1");
    EXPECT_INVALID(cfxBroadcast(a.data(), b.data(), 4, cfxFloat32, 7, c, nullptr), c, "root 7");
    EXPECT_INVALID(cfxAllGather(a.data(), nullptr, 4, cfxFloat32, c, nullptr), c, "recvbuff is NULL");
    EXPECT_INVALID(cfxAllGather(a.data(), b.data(), SIZE_MAX / 8, cfxFloat64, c, nullptr), c, "overflows");
    // AllGather in place must sit at recvbuff + rank * sendcount; one element off is an overlap.
    EXPECT_INVALID(cfxAllGather(b.data() + rk.rank * 4 + 1, b.data(), 4, cfxFloat32, c, nullptr), c, "overlap");
    EXPECT_INVALID(cfxReduceScatter(a.data(), b.data(), 4, cfxFloat32, badOp, c, nullptr), c, "op");
    EXPECT_INVALID(cfxReduceScatter(b.data(), b.data() + 1, 4, cfxFloat32, cfxSum, c, nullptr), c, "overlap");
    EXPECT_INVALID(cfxAlltoAll(a.data(), b.data(), 4, badType, c, nullptr), c, "datatype");
    EXPECT_INVALID(cfxSend(a.data(), 4, cfxFloat32, 3, c, nullptr), c, "peer 3 is out of range");
    EXPECT_INVALID(cfxRecv(b.data(), 4, cfxFloat32, -2, c, nullptr), c, "peer -2");
    EXPECT_INVALID(cfxSend(nullptr, 4, cfxFloat32, 0, c, nullptr), c, "sendbuff is NULL");
    uint64_t notAStream[4] = {};  // sized like a handle: the check reads its magic
    EXPECT_INVALID(cfxAllReduce(a.data(), b.data(), 4, cfxFloat32, cfxSum, c, notAStream), c, "stream");
    EXPECT_INVALID(cfxStreamSynchronize(notAStream), nullptr, "stream");
    EXPECT_INVALID(cfxCommCount(c, nullptr), c, "count is NULL");
    EXPECT_INVALID(cfxCommUserRank(c, nullptr), c, "rank is NULL");
    int host = -1, nhosts = 0;
    EXPECT_INVALID(cfxCommHost(c, &host, nullptr), c, "nhosts is NULL");
    EXPECT_EQ(cfxCommHost(c, &host, &nhosts), cfxSuccess);
    EXPECT_EQ(host, 0);  // one host here
    EXPECT_EQ(nhosts, 1);
    int timeoutMs = 0;
    EXPECT_INVALID(cfxCommGetTimeout(c, nullptr), c, "timeoutMs is NULL");
    EXPECT_EQ(cfxCommGetTimeout(c, &timeoutMs), cfxSuccess);
    EXPECT_EQ(timeoutMs, 300000);  // CFX_TIMEOUT's default
    int spinPolls = -1;
    EXPECT_INVALID(cfxCommGetSpin(c, nullptr), c, "spinPolls is NULL");
    EXPECT_EQ(cfxCommGetSpin(c, &spinPolls), cfxSuccess);
    EXPECT_TRUE(spinPolls == 0 || spinPolls == 2000) << spinPolls;  // CFX_SPIN=auto: this host decides
    {
      cfxConfig_t cfg = CFX_CONFIG_INITIALIZER;
      cfg.timeoutMs = 1234;
      cfxComm_t child = nullptr;
      ASSERT_EQ(cfxCommSplit(c, 0, rk.rank, &child, &cfg), cfxSuccess);
      EXPECT_EQ(cfxCommGetTimeout(child, &timeoutMs), cfxSuccess);
      EXPECT_EQ(timeoutMs, 1234);  // the config's, not the environment's
      EXPECT_EQ(cfxCommDestroy(child), cfxSuccess);
    }
    EXPECT_INVALID(cfxGetUniqueId(nullptr), nullptr, "NULL");
    EXPECT_INVALID(cfxCommSplit(c, -5, 0, nullptr, nullptr), c, "newcomm is NULL");
    cfxComm_t dummy;
    EXPECT_INVALID(cfxCommSplit(c, -5, 0, &dummy, nullptr), c, "color -5");
    cfxConfig_t badCfg = CFX_CONFIG_INITIALIZER;
    badCfg.magic = 0;
    EXPECT_INVALID(cfxCommSplit(c, 0, 0, &dummy, &badCfg), c, "CFX_CONFIG_INITIALIZER");
    cfxUniqueId garbage;
    std::memset(&garbage, 0x42, sizeof(garbage));
    EXPECT_INVALID(cfxCommInitRank(&dummy, 2, garbage, 0), nullptr, "not a Conflux unique id");
    EXPECT_EQ(cfxGroupEnd(), cfxInvalidUsage);

    // Nothing was written, and the communicator still works.
    EXPECT_EQ(b, before);
    float x = 1.0f, y = 0.0f;
    CFX_ASSERT_OK(cfxAllReduce(&x, &y, 1, cfxFloat32, cfxSum, c, nullptr));
    EXPECT_EQ(y, 3.0f);
    // Count 0 with NULL buffers is fine, as in NCCL.
    CFX_ASSERT_OK(cfxAllReduce(nullptr, nullptr, 0, cfxFloat32, cfxSum, c, nullptr));
    cfxResult_t async = cfxInternalError;
    CFX_ASSERT_OK(cfxCommGetAsyncError(c, &async));
    EXPECT_EQ(async, cfxSuccess);
  });
}

// An argument error inside a group fails the whole group: nothing of it runs.
// Arguments only the root checks (Broadcast's sendbuff, Reduce's recvbuff): the root alone gets
// cfxInvalidArgument, and its call never started; the other ranks are already in theirs and wait
// for it, as in NCCL. When the root repeats the call with valid arguments, every rank completes
// with the right values: nothing was lost and the communicator was never failed. (Had the root
// called a different collective instead, every rank would get the mismatch: cfxInvalidUsage.)
TEST(Args, RootOnlyCheckFailsTheRootAloneAndItsRetryCompletes) {
  runRanks(3, [](Rank& rk) {
    for (size_t count : {size_t{7}, size_t{5000}}) {  // the latency path, and a staged one
      std::vector<int32_t> buf(count + 1), out(count, -1);
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<int32_t>(i * 3 + 1);
      if (rk.rank == 0) {
        // sendbuff overlaps recvbuff without being equal to it.
        EXPECT_EQ(cfxBroadcast(buf.data(), buf.data() + 1, count, cfxInt32, 0, rk.comm, nullptr), cfxInvalidArgument);
        EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("overlap"), std::string::npos) << cfxGetLastError(rk.comm);
        CFX_ASSERT_OK(cfxBroadcast(buf.data(), out.data(), count, cfxInt32, 0, rk.comm, nullptr));
      } else {
        CFX_ASSERT_OK(cfxBroadcast(nullptr, out.data(), count, cfxInt32, 0, rk.comm, nullptr));
      }
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], static_cast<int32_t>(i * 3 + 1)) << "count " << count << " at " << i;

      std::vector<int32_t> in(count, rk.rank + 1), sum(count + 1, -1);
      if (rk.rank == 2) {
        EXPECT_EQ(cfxReduce(sum.data() + 1, sum.data(), count, cfxInt32, cfxSum, 2, rk.comm, nullptr),
                  cfxInvalidArgument);
        CFX_ASSERT_OK(cfxReduce(in.data(), sum.data(), count, cfxInt32, cfxSum, 2, rk.comm, nullptr));
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(sum[i], 6) << "count " << count << " at " << i;
      } else {
        CFX_ASSERT_OK(cfxReduce(in.data(), nullptr, count, cfxInt32, cfxSum, 2, rk.comm, nullptr));
      }
      cfxResult_t async = cfxInternalError;
      CFX_ASSERT_OK(cfxCommGetAsyncError(rk.comm, &async));
      EXPECT_EQ(async, cfxSuccess);
    }
  });
}

TEST(Args, ErrorInsideGroupCancelsGroup) {
  runRanks(2, [](Rank& rk) {
    int32_t x = 5, y = -1;
    CFX_ASSERT_OK(cfxGroupStart());
    CFX_ASSERT_OK(cfxAllReduce(&x, &y, 1, cfxInt32, cfxSum, rk.comm, nullptr));
    EXPECT_EQ(cfxSend(&x, 1, cfxInt32, 9, rk.comm, nullptr), cfxInvalidArgument);
    EXPECT_EQ(cfxGroupEnd(), cfxInvalidArgument);
    EXPECT_NE(std::string(cfxGetLastError(nullptr)).find("group not run"), std::string::npos);
    EXPECT_EQ(y, -1);
    CFX_ASSERT_OK(cfxAllReduce(&x, &y, 1, cfxInt32, cfxSum, rk.comm, nullptr));
    EXPECT_EQ(y, 10);
  });
}

// A destroyed communicator is rejected, not used after free.
TEST(Args, DestroyedCommunicator) {
  runRanks(2, [](Rank& rk) {
    cfxComm_t c = rk.comm;
    CFX_ASSERT_OK(cfxCommDestroy(c));
    rk.comm = nullptr;
    int32_t x = 1, y = 0;
    EXPECT_INVALID(cfxAllReduce(&x, &y, 1, cfxInt32, cfxSum, c, nullptr), c, "destroyed");
    EXPECT_INVALID(cfxCommDestroy(c), c, "already destroyed");
    int n = 0;
    EXPECT_INVALID(cfxCommCount(c, &n), c, "destroyed");
  });
}

// A communicator destroyed by another thread while the thread that created it (whose calls count
// themselves without a locked instruction, api/handle.h) runs calls in a loop: each call succeeds
// with the right value or is refused as destroyed, and none runs on the freed communicator.
TEST(Args, DestroyedByAnotherThreadDuringCalls) {
  runRanks(1, [](Rank& rk) {
    cfxComm_t c = rk.comm;
    rk.comm = nullptr;
    std::atomic<bool> started{false};
    std::thread destroyer([&] {
      while (!started.load()) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_EQ(cfxCommDestroy(c), cfxSuccess);
    });
    const int64_t x = 7;
    int64_t succeeded = 0, refused = 0;
    while (refused < 1000) {
      int64_t y = -1;
      const cfxResult_t r = cfxAllReduce(&x, &y, 1, cfxInt64, cfxSum, c, nullptr);
      started = true;
      if (r == cfxSuccess) {
        ASSERT_EQ(refused, 0) << "a call succeeded after one was refused";
        ASSERT_EQ(y, 7);
        ++succeeded;
      } else {
        ASSERT_EQ(r, cfxInvalidArgument) << cfxGetErrorString(r);
        ++refused;
      }
    }
    destroyer.join();
    EXPECT_GT(succeeded, 0);
    int64_t y = -1;
    EXPECT_INVALID(cfxAllReduce(&x, &y, 1, cfxInt64, cfxSum, c, nullptr), c, "destroyed");
    EXPECT_EQ(y, -1);
  });
}

TEST(Args, VersionAndStrings) {
  int v = 0;
  ASSERT_EQ(cfxGetVersion(&v), cfxSuccess);
  EXPECT_EQ(v, CFX_VERSION_CODE);
  EXPECT_EQ(CFX_VERSION_CODE, CFX_MAJOR * 10000 + CFX_MINOR * 100 + CFX_PATCH);
  EXPECT_STREQ(cfxGetErrorString(cfxSuccess), "no error");
  EXPECT_NE(std::string(cfxGetErrorString(cfxRemoteError)).find("remote"), std::string::npos);
  EXPECT_NE(std::string(cfxGetErrorString(cfxTimeout)).find("timed out"), std::string::npos);
  // NCCL's enum values, so that porting is a rename.
  EXPECT_EQ(cfxInt8, 0);
  EXPECT_EQ(cfxFloat8e5m2, 11);
  EXPECT_EQ(cfxBfloat16, 9);
  EXPECT_EQ(cfxAvg, 4);
  EXPECT_EQ(cfxInProgress, 7);
  EXPECT_EQ(cfxHalf, cfxFloat16);
  EXPECT_EQ(cfxDouble, cfxFloat64);
}

}  // namespace
}  // namespace cfxtest
