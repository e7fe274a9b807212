// FSDP over real ranks, in every sharding strategy: training matches one process on the whole
// batch; full state gathers on rank 0 and loads back sharded; FULL_SHARD holds about 1/N of
// DDP's bytes; misuse is a clear error.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "conflux/train/fsdp.h"
#include "conflux/train/ref/adapters.h"
#include "harness.h"
#include "train_support.h"

namespace cfxtest {
namespace {

namespace train = conflux::train;
using train::ShardingStrategy;

constexpr int kSteps = 4;

const char* strategyName(ShardingStrategy s) {
  switch (s) {
    case ShardingStrategy::kFullShard: return "FullShard";
    case ShardingStrategy::kShardGradOp: return "ShardGradOp";
    case ShardingStrategy::kNoShard: return "NoShard";
    case ShardingStrategy::kHybridShard: return "HybridShard";
  }
  return "?";
}

// An optimizer over every unit's local shard.
std::unique_ptr<train::Optimizer> shardOptimizer(Opt opt, train::FullyShardedDataParallel& f) {
  auto o = makeOptimizer(opt);
  for (int u = 0; u < f.unitCount(); ++u) {
    o->addGroup(static_cast<float*>(f.shardParams(u)), static_cast<float*>(f.shardGrads(u)), f.shardCount(u));
  }
  return o;
}

void trainSteps(ref::Model& m, ref::FsdpModel& hooks, train::Optimizer& o, Rank& rk, int from, int to) {
  for (int s = from; s < to; ++s) {
    ref::Batch b = stepBatch(s).slice(rk.rank, rk.nranks);
    hooks.forward(b);
    hooks.backward(b);
    o.step();
  }
}

// Every unit's full parameters on rank 0 (empty elsewhere).
std::vector<std::vector<float>> fullParams(ref::Model& m, train::FullyShardedDataParallel& f, int rank) {
  std::vector<std::vector<float>> out;
  for (int u = 0; u < f.unitCount(); ++u) {
    out.emplace_back(rank == 0 ? f.unitCount(u) : 0);
    f.gatherFull(u, f.shardParams(u), out.back().data());
  }
  return out;
}

struct Case {
  int ranks;
  ShardingStrategy strategy;
  int hybridSize;
  Opt opt;
};

class FsdpEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(FsdpEquivalence, MatchesOneProcess) {
  const Case c = GetParam();
  runRanks(c.ranks, [c](Rank& rk) {
    ref::Model m = ref::makeTransformer(testTransformer());
    train::FsdpOptions fo;
    fo.strategy = c.strategy;
    fo.hybridShardSize = c.hybridSize;
    train::FullyShardedDataParallel fsdp(rk.comm, fo);
    ref::FsdpModel hooks(m, fsdp, kInitSeed);
    if (c.strategy == ShardingStrategy::kNoShard) {
      EXPECT_EQ(fsdp.shardCount(1), fsdp.unitCount(1));
    } else {
      int group = c.hybridSize > 0 ? c.hybridSize : rk.nranks;
      EXPECT_EQ(fsdp.shardGroupSize(), group);
      EXPECT_EQ(fsdp.shardCount(1), (fsdp.unitCount(1) + static_cast<size_t>(group) - 1) / static_cast<size_t>(group));
    }
    auto o = shardOptimizer(c.opt, fsdp);
    trainSteps(m, hooks, *o, rk, 0, kSteps);
    auto full = fullParams(m, fsdp, rk.rank);
    if (rk.rank != 0) return;
    double diff = maxRelativeDiff(full, referenceTraining(c.opt, kSteps));
    EXPECT_LE(diff, 1e-5) << strategyName(c.strategy) << " " << optName(c.opt) << " on " << rk.nranks << " ranks";
    std::printf("[ max relative difference %s %s, %d ranks: %.3g ]\n", strategyName(c.strategy), optName(c.opt),
                rk.nranks, diff);
  });
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (Opt o : {Opt::kSgd, Opt::kAdam}) {
    for (int n : {1, 2, 3, 4}) v.push_back({n, ShardingStrategy::kFullShard, 0, o});
    for (int n : {2, 3}) v.push_back({n, ShardingStrategy::kShardGradOp, 0, o});
    for (int n : {2, 3}) v.push_back({n, ShardingStrategy::kNoShard, 0, o});
    v.push_back({4, ShardingStrategy::kHybridShard, 2, o});  // 2 groups of 2
    v.push_back({2, ShardingStrategy::kHybridShard, 0, o});  // one host: one group
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Strategies, FsdpEquivalence, ::testing::ValuesIn(cases()), [](const auto& info) {
  const Case& c = info.param;
  return std::string(strategyName(c.strategy)) + "_" + std::to_string(c.ranks) + "ranks" +
         (c.hybridSize ? "_group" + std::to_string(c.hybridSize) : "") + "_" + optName(c.opt);
});

// Two steps under FULL_SHARD, full parameters and Adam state gathered on rank 0, loaded into a
// fresh SHARD_GRAD_OP instance, two more steps: the same end as four uninterrupted steps.
TEST(Fsdp, FullStateSavesOnRankZeroAndLoadsBackSharded) {
  runRanks(3, [](Rank& rk) {
    std::vector<std::vector<float>> saved;  // per unit: params, m, v (rank 0 only)
    long steps = 0;
    {
      ref::Model m = ref::makeTransformer(testTransformer());
      train::FullyShardedDataParallel fsdp(rk.comm);
      ref::FsdpModel hooks(m, fsdp, kInitSeed);
      auto o = shardOptimizer(Opt::kAdam, fsdp);
      trainSteps(m, hooks, *o, rk, 0, 2);
      for (int u = 0; u < fsdp.unitCount(); ++u) {
        for (int slot = -1; slot < 2; ++slot) {
          const void* shard = slot < 0 ? fsdp.shardParams(u) : o->state(u, slot);
          saved.emplace_back(rk.rank == 0 ? fsdp.unitCount(u) : 0);
          fsdp.gatherFull(u, shard, saved.back().data());
        }
      }
      steps = o->steps();
    }
    ref::Model m = ref::makeTransformer(testTransformer());
    train::FsdpOptions fo;
    fo.strategy = ShardingStrategy::kShardGradOp;
    train::FullyShardedDataParallel fsdp(rk.comm, fo);
    ref::FsdpModel hooks(m, fsdp, /*seed, overwritten below*/ 12345);
    auto o = shardOptimizer(Opt::kAdam, fsdp);
    o->setSteps(steps);
    for (int u = 0; u < fsdp.unitCount(); ++u) {
      fsdp.loadFull(u, saved[3 * static_cast<size_t>(u)].data());
      for (int slot = 0; slot < 2; ++slot) {
        fsdp.scatterFull(u, saved[3 * static_cast<size_t>(u) + 1 + static_cast<size_t>(slot)].data(), o->state(u, slot));
      }
    }
    trainSteps(m, hooks, *o, rk, 2, 4);
    auto full = fullParams(m, fsdp, rk.rank);
    if (rk.rank == 0) {
      EXPECT_LE(maxRelativeDiff(full, referenceTraining(Opt::kAdam, 4)), 1e-5);
    }
  });
}

// Peak bytes per rank under FULL_SHARD, with Adam's state on shards only, against DDP's (full
// parameters, gradients and Adam state), for a model of many units: at most 1/N + 10%.
class FsdpMemoryTest : public ::testing::TestWithParam<int> {};

TEST_P(FsdpMemoryTest, FullShardHoldsAboutOneNthOfDdpBytes) {
  {
    runRanks(GetParam(), [](Rank& rk) {
      ref::TransformerConfig c = testTransformer();
      c.blocks = 16;
      ref::Model m = ref::makeTransformer(c);
      train::FullyShardedDataParallel fsdp(rk.comm);
      ref::FsdpModel hooks(m, fsdp, kInitSeed);
      auto o = shardOptimizer(Opt::kAdam, fsdp);
      fsdp.resetPeak();
      for (int s = 0; s < 2; ++s) {
        ref::Batch b = ref::makeTokenBatch(c, 4 * rk.nranks, 100 + static_cast<uint64_t>(s)).slice(rk.rank, rk.nranks);
        hooks.forward(b);
        hooks.backward(b);
        o->step();
      }
      const double ddp = static_cast<double>(m.numParams()) * sizeof(float) * 4;  // params, grads, m, v
      const double fsdpBytes = static_cast<double>(fsdp.memory().peakTotalBytes + o->stateBytes());
      EXPECT_LE(fsdpBytes / ddp, 1.0 / rk.nranks + 0.10) << "FSDP " << fsdpBytes << " bytes, DDP " << ddp;
      EXPECT_GT(fsdpBytes / ddp, 1.0 / rk.nranks);  // gathered units do cost something
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, FsdpMemoryTest, ::testing::Values(2, 4));

// Under a hosts layout (CTest's TrainAcrossHosts entry: CFX_TEST_HOSTS with fake hosts over
// TCP), HYBRID_SHARD's default groups are the hosts: shards inside a host, replicas across.
TEST(AcrossHosts, HybridShardGroupsAreHosts) {
  if (layoutRanks() == 0) GTEST_SKIP() << "needs CFX_TEST_HOSTS (run by CTest as TrainAcrossHosts.*)";
  const int perHost = testHosts()[0].ranks;
  runRanks(layoutRanks(), [perHost](Rank& rk) {
    int host = -1, nhosts = 0;
    CFX_ASSERT_OK(cfxCommHost(rk.comm, &host, &nhosts));
    EXPECT_EQ(nhosts, rk.nranks / perHost);
    EXPECT_EQ(host, rk.rank / perHost);
    ref::Model m = ref::makeTransformer(testTransformer());
    train::FsdpOptions fo;
    fo.strategy = ShardingStrategy::kHybridShard;
    train::FullyShardedDataParallel fsdp(rk.comm, fo);
    EXPECT_EQ(fsdp.shardGroupSize(), perHost);
    ref::FsdpModel hooks(m, fsdp, kInitSeed);
    auto o = shardOptimizer(Opt::kAdam, fsdp);
    trainSteps(m, hooks, *o, rk, 0, kSteps);
    auto full = fullParams(m, fsdp, rk.rank);
    if (rk.rank == 0) {
      EXPECT_LE(maxRelativeDiff(full, referenceTraining(Opt::kAdam, kSteps)), 1e-5);
    }
  });
}

TEST(FsdpErrors, UnknownUnitAndMisuseAreClearErrors) {
  runRanks(2, [](Rank& rk) {
    train::FullyShardedDataParallel fsdp(rk.comm);
    fsdp.addUnit("a", 10);
    fsdp.addUnit("b", 7);
    EXPECT_THROW(fsdp.unshard(0), train::Error);  // before finalize
    fsdp.finalize();
    EXPECT_EQ(fsdp.shardCount(1), 4u);
    fsdp.beginForward();
    try {
      fsdp.unshard(5);
      ADD_FAILURE() << "unshard of an unknown unit succeeded";
    } catch (const train::Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("unit 5 is not registered (2 units)"), std::string::npos) << e.what();
    }
    EXPECT_THROW(fsdp.reduceGradients(0), train::Error);  // not in backward
    fsdp.beginBackward();
    EXPECT_THROW(fsdp.grad(1), train::Error);             // not unsharded for backward
    EXPECT_THROW(fsdp.reduceGradients(1), train::Error);
    EXPECT_THROW(fsdp.addUnit("late", 3), train::Error);
  });
}

TEST(FsdpErrors, MismatchedUnitsAreReportedOnEveryRank) {
  runRanks(2, [](Rank& rk) {
    train::FullyShardedDataParallel fsdp(rk.comm);
    fsdp.addUnit("a", rk.rank == 0 ? 10 : 11);
    try {
      fsdp.finalize();
      ADD_FAILURE();
    } catch (const train::Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidUsage);
      EXPECT_NE(std::string(e.what()).find("FSDP unit registrations differ"), std::string::npos) << e.what();
    }
  });
}

TEST(FsdpErrors, HybridGroupSizeMustDivideRanks) {
  runRanks(3, [](Rank& rk) {
    train::FsdpOptions fo;
    fo.strategy = ShardingStrategy::kHybridShard;
    fo.hybridShardSize = 2;
    EXPECT_THROW(train::FullyShardedDataParallel(rk.comm, fo), train::Error);
  });
}

}  // namespace
}  // namespace cfxtest
