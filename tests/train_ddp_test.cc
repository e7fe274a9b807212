// DDP over real ranks: N ranks on N equal slices of each batch end where one process on the
// whole batch ends (SGD and Adam, with and without micro-batch accumulation), every rank holds
// the same bits after every step, and misuse is a clear error on every rank, never a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "conflux/train/ddp.h"
#include "conflux/train/ref/adapters.h"
#include "harness.h"
#include "train_support.h"

namespace cfxtest {
namespace {

namespace train = conflux::train;

constexpr int kSteps = 4;

std::vector<std::vector<float>> paramsOf(ref::Model& m) {
  std::vector<std::vector<float>> out;
  for (int i = 0; i < m.layerCount(); ++i) out.emplace_back(m.params(i), m.params(i) + m.layer(i).numParams());
  return out;
}

// Trains kSteps steps on this rank's slice (split into `micro` micro-batches accumulated under
// noSync) and checks the result against the single-process reference.
void ddpMatchesReference(Rank& rk, Opt opt, int micro, train::DdpOptions dopts) {
  ref::Model m = ref::makeTransformer(testTransformer());
  // Different initial values off rank 0: the constructor's broadcast must make them equal.
  m.allocate(rk.rank == 0 ? kInitSeed : kInitSeed + 1000 + static_cast<uint64_t>(rk.rank));
  train::DistributedDataParallel ddp(rk.comm, dopts);
  ref::DdpModel hooks(m, ddp);
  auto o = makeOptimizer(opt);
  for (int i = 0; i < m.layerCount(); ++i) o->addGroup(m.params(i), m.grads(i), m.layer(i).numParams());
  for (int s = 0; s < kSteps; ++s) {
    ref::Batch mine = stepBatch(s).slice(rk.rank, rk.nranks);
    m.zeroGrad();
    for (int k = 0; k < micro; ++k) {
      ref::Batch b = mine.slice(k, micro);
      auto step = [&] {
        m.forward(b, &hooks);
        m.backward(b, 1.0f / static_cast<float>(micro), &hooks);
        ddp.finishBackward();
      };
      if (k + 1 < micro) {
        auto scope = ddp.noSync();
        step();
      } else {
        step();
      }
    }
    o->step();
    ASSERT_TRUE(sameOnAllRanks(rk.comm, hashParams(paramsOf(m)))) << "ranks differ after step " << s;
  }
  double diff = maxRelativeDiff(paramsOf(m), referenceTraining(opt, kSteps));
  EXPECT_LE(diff, 1e-5) << optName(opt) << " on " << rk.nranks << " ranks, " << micro << " micro-batches";
  if (rk.rank == 0) std::printf("[ max relative difference %s, %d ranks, %d micro: %.3g ]\n", optName(opt), rk.nranks, micro, diff);
}

class DdpEquivalence : public ::testing::TestWithParam<std::tuple<int, Opt>> {};

TEST_P(DdpEquivalence, MatchesOneProcess) {
  const int n = std::get<0>(GetParam());
  const Opt opt = std::get<1>(GetParam());
  train::DdpOptions o;
  o.bucketCapBytes = 4096;  // several buckets, issued while backward runs
  runRanks(n, [opt, o](Rank& rk) { ddpMatchesReference(rk, opt, 1, o); });
}

TEST_P(DdpEquivalence, OneBucketMatchesOneProcess) {
  const int n = std::get<0>(GetParam());
  const Opt opt = std::get<1>(GetParam());
  runRanks(n, [opt](Rank& rk) { ddpMatchesReference(rk, opt, 1, train::DdpOptions{}); });
}

TEST_P(DdpEquivalence, NoSyncAccumulationMatchesOneProcess) {
  const int n = std::get<0>(GetParam());
  const Opt opt = std::get<1>(GetParam());
  const int micro = (kSequences / n) % 3 == 0 ? 3 : 2;  // micro-batches of whole sequences
  train::DdpOptions o;
  o.bucketCapBytes = 8192;
  runRanks(n, [opt, micro, o](Rank& rk) { ddpMatchesReference(rk, opt, micro, o); });
}

INSTANTIATE_TEST_SUITE_P(Ranks, DdpEquivalence,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Values(Opt::kSgd, Opt::kAdam)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" + optName(std::get<1>(info.param));
                         });

// The same across hosts (CTest's TrainAcrossHosts entry), where the AllReduces go hierarchical.
TEST(AcrossHosts, DdpMatchesOneProcess) {
  if (layoutRanks() == 0) GTEST_SKIP() << "needs CFX_TEST_HOSTS (run by CTest as TrainAcrossHosts.*)";
  train::DdpOptions o;
  o.bucketCapBytes = 4096;
  runRanks(layoutRanks(), [o](Rank& rk) { ddpMatchesReference(rk, Opt::kAdam, 1, o); });
}

// Buckets go out in bucket order, in reverse registration order, capped by size.
TEST(Ddp, BucketsFollowReverseRegistrationOrder) {
  runRanks(1, [](Rank& rk) {
    std::vector<float> p(1000), g(1000);
    train::DdpOptions o;
    o.bucketCapBytes = 1200;  // 300 floats
    train::DistributedDataParallel ddp(rk.comm, o);
    int a = ddp.addParameter("a", p.data(), g.data(), 200, cfxFloat32);
    int b = ddp.addParameter("b", p.data() + 200, g.data() + 200, 200, cfxFloat32);
    int c = ddp.addParameter("c", p.data() + 400, g.data() + 400, 50, cfxFloat32);
    int d = ddp.addParameter("d", p.data() + 450, g.data() + 450, 100, cfxFloat32);
    ddp.finalize();
    EXPECT_EQ(ddp.bucketCount(), 3);
    EXPECT_EQ(ddp.bucketOf(d), 0);
    EXPECT_EQ(ddp.bucketOf(c), 0);
    EXPECT_EQ(ddp.bucketOf(b), 1);
    EXPECT_EQ(ddp.bucketOf(a), 2);
  });
}

// bf16 on the wire: each averaged gradient is within bf16 rounding (a few ulps of 2^-8, relative
// to the average of magnitudes) of the fp32 average, and buffers are half the size.
TEST(Ddp, Bf16WireAveragesWithinBf16Rounding) {
  runRanks(3, [](Rank& rk) {
    const size_t n = 5001;
    std::vector<float> p(n, 0.0f), g(n), exact(n), mag(n);
    ref::Rng rng(50 + static_cast<uint64_t>(rk.rank));
    for (float& x : g) x = rng.uniform(3.0f);
    for (size_t i = 0; i < n; ++i) mag[i] = std::fabs(g[i]);
    CFX_ASSERT_OK(cfxAllReduce(g.data(), exact.data(), n, cfxFloat32, cfxAvg, rk.comm, nullptr));
    CFX_ASSERT_OK(cfxAllReduce(mag.data(), mag.data(), n, cfxFloat32, cfxAvg, rk.comm, nullptr));
    train::DdpOptions o;
    o.wire = train::WireType::kBf16;
    train::DistributedDataParallel ddp(rk.comm, o);
    int id = ddp.addParameter("w", p.data(), g.data(), n, cfxFloat32);
    ddp.finalize();
    EXPECT_EQ(ddp.bucketBufferBytes(), n * 2);
    ddp.markReady(id);
    ddp.finishBackward();
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      if (std::fabs(g[i] - exact[i]) > std::ldexp(mag[i], -6)) ++bad;
    }
    EXPECT_EQ(bad, 0u);
    bool changed = false;
    for (size_t i = 0; i < n; ++i) changed |= g[i] != exact[i];
    EXPECT_TRUE(changed) << "bf16 rounding left no trace: the wire was not bf16";
  });
}

// A rank that registers one parameter more: finalize() fails on every rank with the counts.
TEST(DdpErrors, MismatchedRegistrationIsReportedOnEveryRank) {
  runRanks(3, [](Rank& rk) {
    std::vector<float> p(64), g(64);
    train::DistributedDataParallel ddp(rk.comm);
    ddp.addParameter("w", p.data(), g.data(), 32, cfxFloat32);
    if (rk.rank == 2) ddp.addParameter("extra", p.data() + 32, g.data() + 32, 32, cfxFloat32);
    try {
      ddp.finalize();
      ADD_FAILURE() << "finalize accepted a mismatched registration";
    } catch (const train::Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidUsage);
      std::string what = e.what();
      EXPECT_NE(what.find("differ across ranks: rank 2 registered 2 items"), std::string::npos) << what;
    }
  });
}

// One rank forgets a gradient: it gets an error naming it, and the others, already waiting for
// the bucket's AllReduce, fail within seconds (the communicator is aborted), not at the timeout.
TEST(DdpErrors, FinishBackwardWithoutAllGradientsReady) {
  RunOptions ro;
  ro.env = {"CFX_TIMEOUT=60"};
  ro.initComm = false;  // the failing rank's communicator is aborted: the harness must not destroy it
  runRanks(3, [](Rank& rk) {
    cfxComm_t comm = nullptr;
    CFX_ASSERT_OK(cfxCommInitFromEnv(&comm));
    std::vector<float> p(300, 1.0f), g(300, 1.0f);
    {
      train::DistributedDataParallel ddp(comm);
      int a = ddp.addParameter("layer.weight", p.data(), g.data(), 200, cfxFloat32);
      int b = ddp.addParameter("layer.bias", p.data() + 200, g.data() + 200, 100, cfxFloat32);
      ddp.finalize();
      // Rank 1 fails only once the others have their parameters: finalize()'s Broadcast of 1200 B
      // may return on rank 1 before rank 2 has read it (the latency path returns a reader as soon as
      // it has the data), and rank 1's abort would then fail rank 2's Broadcast instead of its
      // gradient AllReduce. A Send from each of the others, after its Broadcast, orders them.
      int32_t token = rk.rank;
      if (rk.rank == 1) {
        int32_t from0 = -1, from2 = -1;
        CFX_ASSERT_OK(cfxGroupStart());
        CFX_ASSERT_OK(cfxRecv(&from0, 1, cfxInt32, 0, comm, nullptr));
        CFX_ASSERT_OK(cfxRecv(&from2, 1, cfxInt32, 2, comm, nullptr));
        CFX_ASSERT_OK(cfxGroupEnd());
        ASSERT_EQ(from0 + from2, 2);
      } else {
        CFX_ASSERT_OK(cfxSend(&token, 1, cfxInt32, 1, comm, nullptr));
      }
      ddp.markReady(b);
      if (rk.rank != 1) ddp.markReady(a);
      auto t0 = std::chrono::steady_clock::now();
      try {
        ddp.finishBackward();
        ADD_FAILURE() << "finishBackward succeeded";
      } catch (const train::Error& e) {
        std::string what = e.what();
        if (rk.rank == 1) {
          EXPECT_EQ(e.code(), cfxInvalidUsage);
          EXPECT_NE(what.find("not marked ready: layer.weight"), std::string::npos) << what;
          // Stay alive: the others must stop because of the abort, not because this process exited.
          std::this_thread::sleep_for(std::chrono::seconds(4));
        } else {
          EXPECT_EQ(e.code(), cfxRemoteError) << what;
          EXPECT_NE(what.find("DDP gradient AllReduce"), std::string::npos) << what;
          EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);
        }
      }
    }
    if (rk.rank != 1) (void)cfxCommDestroy(comm);
  }, ro);
}

TEST(DdpErrors, MisuseIsRejected) {
  runRanks(1, [](Rank& rk) {
    std::vector<float> p(8), g(8);
    train::DistributedDataParallel ddp(rk.comm);
    int a = ddp.addParameter("w", p.data(), g.data(), 8, cfxFloat32);
    EXPECT_THROW(ddp.markReady(a), train::Error);  // before finalize
    EXPECT_THROW(ddp.addParameter("x", nullptr, nullptr, 4, cfxFloat32), train::Error);
    EXPECT_THROW(ddp.addParameter("y", p.data(), g.data(), 4, static_cast<cfxDataType_t>(99)), train::Error);
    ddp.finalize();
    try {
      ddp.markReady(5);
      ADD_FAILURE();
    } catch (const train::Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidArgument);
    }
    ddp.markReady(a);
    EXPECT_THROW(ddp.markReady(a), train::Error);  // twice in one step
    ddp.finishBackward();
    EXPECT_THROW(train::DistributedDataParallel(nullptr), train::Error);
  });
}

}  // namespace
}  // namespace cfxtest
