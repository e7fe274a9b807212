// The staged pipeline on host memory, across real rank processes: every collective x datatype x op
// x count, in and out of place, checked exactly against the same references as the direct path,
// with slots small enough that most calls cut many chunks and reuse every slot; the stream order
// (a producer before the call and a consumer after it, no host synchronisation between them); and
// a failure releasing the stream instead of leaving it waiting.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

#include "cases.h"
#include "common/error.h"
#include "harness.h"
#include "host_engine.h"
#include "pipeline.h"

using namespace cfxtest;
using namespace conflux::staged;

namespace {

Coll staged(CollKind c) {
  switch (c) {
    case CollKind::kAllReduce: return Coll::kAllReduce;
    case CollKind::kReduce: return Coll::kReduce;
    case CollKind::kBroadcast: return Coll::kBroadcast;
    case CollKind::kAllGather: return Coll::kAllGather;
    case CollKind::kReduceScatter: return Coll::kReduceScatter;
    case CollKind::kAlltoAll: return Coll::kAlltoAll;
    case CollKind::kSendRecv: break;
    case CollKind::kAlltoAllv: break;
  }
  return Coll::kSend;
}

// 3 slots of 1000 bytes: an odd slot size, so chunk widths are odd too.
std::unique_ptr<Pipeline> makePipeline(cfxComm_t comm) {
  return std::make_unique<Pipeline>(comm, std::make_unique<HostEngine>(3, 1000));
}

// One staged call on `stream`, then its check; "" or a failure description.
std::string runStaged(Pipeline& p, HostStream& stream, const Rank& rk, CollKind c, cfxDataType_t t, cfxRedOp_t op,
                      size_t count, bool inPlace) {
  const Pattern pat(t, reduces(c) ? op : cfxSum, rk.nranks);
  const int root = static_cast<int>((count + 1) % rk.nranks);
  CallBuffers b = makeCall(c, pat, rk.rank, rk.nranks, root, count, inPlace);
  const std::string what = std::string(collName(c)) + " " + typeName(t) + " " + opName(op) + " count " +
                           std::to_string(count) + (inPlace ? " in-place" : "") + " rank " + std::to_string(rk.rank);
  try {
    p.submit(Call{staged(c), b.sendPtr, b.recvPtr, count, t, op, root}, &stream);
  } catch (const conflux::Error& e) {
    return what + ": submit threw " + e.what();
  }
  stream.synchronize();
  std::string message;
  if (p.asyncError(&message) != cfxSuccess) return what + ": " + message;
  std::string why;
  if (verify(b, pat, why) != 0) return what + why;
  return "";
}

void stagedMatrix(const Rank& rk) {
  auto p = makePipeline(rk.comm);
  HostStream stream;
  const CollKind colls[] = {CollKind::kAllReduce, CollKind::kReduce, CollKind::kBroadcast,
                            CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kAlltoAll};
  for (CollKind c : colls) {
    std::vector<cfxRedOp_t> ops = {cfxSum};
    if (reduces(c)) ops = {cfxSum, cfxProd, cfxMax, cfxMin, cfxAvg};
    for (int t = 0; t < cfxNumTypes; ++t) {
      for (cfxRedOp_t op : ops) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}}) {
          for (bool inPlace : {false, true}) {
            ASSERT_EQ(runStaged(*p, stream, rk, c, static_cast<cfxDataType_t>(t), op, count, inPlace), "");
          }
        }
      }
    }
  }
}

}  // namespace

TEST(StagedPipeline, EveryCollectiveDatatypeAndOp1Rank) { runRanks(1, stagedMatrix); }
TEST(StagedPipeline, EveryCollectiveDatatypeAndOp2Ranks) { runRanks(2, stagedMatrix); }
TEST(StagedPipeline, EveryCollectiveDatatypeAndOp3Ranks) { runRanks(3, stagedMatrix); }
TEST(StagedPipeline, EveryCollectiveDatatypeAndOp4Ranks) { runRanks(4, stagedMatrix); }

// Large calls with many chunks in flight through few slots.
TEST(StagedPipeline, LargeAllReduceCyclesTheSlots) {
  runRanks(3, [](Rank& rk) {
    Pipeline p(rk.comm, std::make_unique<HostEngine>(2, 4096));
    HostStream stream;
    for (cfxDataType_t t : {cfxFloat32, cfxBfloat16, cfxInt64}) {
      ASSERT_EQ(runStaged(p, stream, rk, CollKind::kAllReduce, t, cfxSum, 300007, false), "");
    }
  });
}

TEST(StagedPipeline, SendAndRecv) {
  runRanks(2, [](Rank& rk) {
    Pipeline p(rk.comm, std::make_unique<HostEngine>(2, 512));
    HostStream stream;
    for (size_t count : {size_t{0}, size_t{1}, size_t{1031}, size_t{100003}}) {
      std::vector<int32_t> buf(count + 1, -1);
      if (rk.rank == 0) {
        for (size_t i = 0; i < count; ++i) buf[i] = static_cast<int32_t>(i * 7 + 1);
        p.submit(Call{Coll::kSend, buf.data(), nullptr, count, cfxInt32, cfxSum, 1}, &stream);
      } else {
        p.submit(Call{Coll::kRecv, nullptr, buf.data(), count, cfxInt32, cfxSum, 0}, &stream);
      }
      stream.synchronize();
      ASSERT_EQ(p.asyncError(), cfxSuccess);
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(buf[i], static_cast<int32_t>(i * 7 + 1)) << i;
      ASSERT_EQ(buf[count], -1) << "written past the end";
    }
  });
}

// Work queued on the stream before the call is seen by it, and work queued after it sees the result,
// with the calling thread never waiting in between.
TEST(StagedPipeline, StreamOrderWithoutHostSynchronisation) {
  runRanks(3, [](Rank& rk) {
    Pipeline p(rk.comm, std::make_unique<HostEngine>(2, 256));
    HostStream stream;
    const size_t count = 5000;
    std::vector<float> in(count, 0.0f), out(count, 0.0f), seen(count, -1.0f);
    const float mine = static_cast<float>(rk.rank + 1);
    stream.enqueue([&] {  // the producer, late on purpose
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::fill(in.begin(), in.end(), mine);
    });
    const auto start = std::chrono::steady_clock::now();
    p.submit(Call{Coll::kAllReduce, in.data(), out.data(), count, cfxFloat32, cfxSum, -1}, &stream);
    stream.enqueue([&] { seen = out; });  // the consumer
    const auto returned = std::chrono::steady_clock::now() - start;
    EXPECT_LT(returned, std::chrono::milliseconds(40)) << "submit waited for the stream";
    stream.synchronize();
    const float total = static_cast<float>(rk.nranks * (rk.nranks + 1) / 2);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(seen[i], total) << i;
  });
}

// A collective that fails on the host (a datatype the op does not take reaches Conflux only chunk by
// chunk) releases every chunk: the stream completes, the error is kept, and later calls fail at once.
TEST(StagedPipeline, FailureReleasesTheStream) {
  runRanks(2, [](Rank& rk) {
    Pipeline p(rk.comm, std::make_unique<HostEngine>(2, 256));
    HostStream stream;
    std::vector<float> in(3000, 1.0f), out(3000, 0.0f);
    p.submit(Call{Coll::kAllReduce, in.data(), out.data(), in.size(), cfxFloat32, static_cast<cfxRedOp_t>(42), -1},
             &stream);
    stream.synchronize();  // returns: the failed chunks were released
    std::string message;
    EXPECT_EQ(p.asyncError(&message), cfxInvalidArgument);
    EXPECT_NE(message.find("op"), std::string::npos) << message;
    EXPECT_THROW(p.submit(Call{Coll::kAllReduce, in.data(), out.data(), 1, cfxFloat32, cfxSum, -1}, &stream),
                 conflux::Error);
  });
}

// A peer killed mid-job: the survivor's host collective fails naming it, and its stream is released.
TEST(StagedPipeline, KilledPeerReleasesTheStream) {
  RunOptions opts;
  opts.expectKilled = {1};
  opts.env = {"CFX_TIMEOUT=10"};
  runRanks(2, [](Rank& rk) {
    Pipeline p(rk.comm, std::make_unique<HostEngine>(2, 4096));
    HostStream stream;
    std::vector<float> in(1 << 16, 1.0f), out(1 << 16, 0.0f);
    if (rk.rank == 1) raise(SIGKILL);
    p.submit(Call{Coll::kAllReduce, in.data(), out.data(), in.size(), cfxFloat32, cfxSum, -1}, &stream);
    stream.synchronize();
    std::string message;
    EXPECT_NE(p.asyncError(&message), cfxSuccess);
    EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
  }, opts);
}

// cfxCommAbort from another thread while the stream waits on a collective a peer never joins: the
// host part fails with cfxAborted and releases the stream, well before the communicator's timeout.
TEST(StagedPipeline, CommAbortReleasesTheStream) {
  RunOptions opts;
  opts.env = {"CFX_TIMEOUT=60"};
  runRanks(2, [](Rank& rk) {
    if (rk.rank == 1) {  // never joins; waits until rank 0 is done so its socket stays open
      std::this_thread::sleep_for(std::chrono::seconds(3));
      return;
    }
    Pipeline p(rk.comm, std::make_unique<HostEngine>(2, 4096));
    HostStream stream;
    std::vector<float> in(1 << 14, 1.0f), out(1 << 14, 0.0f);
    const auto t0 = std::chrono::steady_clock::now();
    p.submit(Call{Coll::kAllReduce, in.data(), out.data(), in.size(), cfxFloat32, cfxSum, -1}, &stream);
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cfxCommAbort(rk.comm);
    });
    stream.synchronize();  // returns: the abort released the chunks
    aborter.join();
    rk.comm = nullptr;  // cfxCommAbort freed it
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
    std::string message;
    EXPECT_EQ(p.asyncError(&message), cfxAborted) << message;
  }, opts);
}

// An engine that fails part way through a call (as a CUDA copy can): submit throws, the chunks
// already queued are released so the engine's streams finish, and the failure is kept.
TEST(StagedPipeline, EngineFailurePartWayReleasesWhatWasQueued) {
  class FailingEngine : public HostEngine {
   public:
    FailingEngine() : HostEngine(2, 256) {}
    void copyIn(uint64_t seq, const Copy2D& copy) override {
      if (seq == 3) throw conflux::Error(conflux::Status::kUnhandledCudaError, "copy failed (injected)");
      HostEngine::copyIn(seq, copy);
    }
  };
  runRanks(1, [](Rank& rk) {
    // The buffers outlive the pipeline: with no end() on the stream, only the engine's destructor
    // waits for the queued copies out.
    std::vector<float> in(1000, 1.0f), out(1000, 0.0f);
    Pipeline p(rk.comm, std::make_unique<FailingEngine>());
    HostStream stream;
    EXPECT_THROW(p.submit(Call{Coll::kAllReduce, in.data(), out.data(), in.size(), cfxFloat32, cfxSum, -1}, &stream),
                 conflux::Error);
    p.drain();  // returns: the three queued chunks were waited for and released
    std::string message;
    EXPECT_EQ(p.asyncError(&message), cfxUnhandledCudaError);
    EXPECT_NE(message.find("injected"), std::string::npos) << message;
  });
}

// A user stream that never reaches the call (here: held by a task until the test lets it go): the
// wait for the first chunk's input gives up after the communicator's timeout (CFX_TIMEOUT=1) with
// cfxTimeout, the remaining chunks are released without waiting again, and once the stream moves
// on it completes. Seen hanging when waitIn had no bound.
TEST(StagedPipeline, InputThatNeverComesTimesOut) {
  RunOptions opts;
  opts.env = {"CFX_TIMEOUT=1"};
  runRanks(1, [](Rank& rk) {
    Pipeline p(rk.comm, std::make_unique<HostEngine>(2, 256));
    HostStream stream;
    std::vector<float> in(3000, 1.0f), out(3000, 0.0f);  // 47 chunks through 2 slots
    std::mutex mu;
    std::condition_variable cv;
    bool go = false;
    stream.enqueue([&] {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return go; });
    });
    const auto t0 = std::chrono::steady_clock::now();
    p.submit(Call{Coll::kAllReduce, in.data(), out.data(), in.size(), cfxFloat32, cfxSum, -1}, &stream);
    while (p.asyncError() == cfxSuccess && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::string message;
    EXPECT_EQ(p.asyncError(&message), cfxTimeout) << message;
    EXPECT_NE(message.find("did not reach its staging slot within 1000 ms"), std::string::npos) << message;
    p.drain();  // every chunk released, none waited for again
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    {
      std::lock_guard<std::mutex> lock(mu);
      go = true;
    }
    cv.notify_all();
    stream.synchronize();  // the copies out and the stream's end ran
  }, opts);
}
