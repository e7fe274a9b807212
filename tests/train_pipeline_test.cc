// Pipeline parallelism over real ranks: the reference transformer split into stages, trained with
// GPipe, 1F1B and interleaved 1F1B (with and without recomputation), ends where one process on
// the whole batch ends; so does pipeline x data parallelism on 2 x 2 ranks, and data x pipeline x
// tensor parallelism on 2 x 2 x 2 ranks (Megatron's 3-D layout, every block tensor-parallel). A stage whose
// callback fails takes its neighbours down with an error, not a hang. Partitioning balances cost.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "conflux/train/ddp.h"
#include "conflux/train/pipeline/executor.h"
#include "conflux/train/pipeline/partition.h"
#include "conflux/train/ref/pipeline_stages.h"
#include "conflux/train/ref/tensor_parallel.h"
#include "conflux/train/sbp.h"
#include "harness.h"
#include "train_support.h"

namespace cfxtest {
namespace {

namespace train = conflux::train;
namespace pp = conflux::train::pipeline;

constexpr int kSteps = 3;

ref::Batch pipeBatch(int step) { return ref::makeTokenBatch(pipeTransformer(), kSequences, 500 + static_cast<uint64_t>(step)); }

std::vector<std::vector<float>> referenceParams(Opt opt) {
  ref::Model m = makePipeModel();
  m.allocate(kInitSeed);
  auto o = makeOptimizer(opt);
  for (int i = 0; i < m.layerCount(); ++i) o->addGroup(m.params(i), m.grads(i), m.layer(i).numParams());
  for (int s = 0; s < kSteps; ++s) {
    ref::Batch b = pipeBatch(s);
    m.zeroGrad();
    m.forward(b);
    m.backward(b);
    o->step();
  }
  std::vector<std::vector<float>> out;
  for (int i = 0; i < m.layerCount(); ++i) out.emplace_back(m.params(i), m.params(i) + m.layer(i).numParams());
  return out;
}

// Losses of the first step's micro-batches with the initial parameters, on one process.
std::vector<float> referenceLosses(int replica, int replicas, int m) {
  ref::Model model = makePipeModel();
  model.allocate(kInitSeed);
  ref::Batch mine = pipeBatch(0).slice(replica, replicas);
  std::vector<float> out;
  for (int k = 0; k < m; ++k) out.push_back(model.forward(mine.slice(k, m)));
  return out;
}


struct Config {
  std::string schedule;  // gpipe, 1f1b, interleaved, zbh1, zbh1-unsplit (callbacks with one backward)
  int m, v;
  bool recompute;
  Opt opt;
};

pp::Schedule makeSchedule(const Config& c, int p) {
  if (c.schedule == "gpipe") return pp::gpipe(p, c.m);
  if (c.schedule == "1f1b") return pp::oneFOneB(p, c.m);
  if (c.schedule.rfind("zbh1", 0) == 0) return pp::zeroBubbleH1(p, c.m);
  return pp::interleaved1F1B(p, c.m, c.v);
}

// Trains kSteps on replica `replica` of `replicas` (its slice of every batch), through `pipe`;
// with replicas > 1, gradients are averaged across replicas by DDP on `dp`; with `tp`, every block
// is tensor-parallel over that group. Compares this rank's layers' final parameters with the
// reference's for the same layers (their slices, for tensor-parallel blocks), and returns them.
std::vector<std::vector<float>> trainPipeline(cfxComm_t pipe, cfxComm_t dp, int replica, int replicas, const Config& c,
                   const conflux::train::tp::Group* tp = nullptr) {
  int p = 0, stage = 0;
  EXPECT_EQ(cfxCommCount(pipe, &p), cfxSuccess);
  EXPECT_EQ(cfxCommUserRank(pipe, &stage), cfxSuccess);
  const std::string what = c.schedule + " p=" + std::to_string(p) + " m=" + std::to_string(c.m) + " v=" +
                           std::to_string(c.v) + (c.recompute ? " recompute" : "") + " " + optName(c.opt);
  pp::Schedule sched = makeSchedule(c, p);
  std::vector<int> bounds = pp::partition(pipeLayerCosts(), sched.virtualStages());
  std::vector<int> mine;
  for (int vs = stage; vs < sched.virtualStages(); vs += p) mine.push_back(vs);
  std::function<ref::Model()> factory = makePipeModel;
  if (tp != nullptr) factory = [tp] { return ref::makeTensorParallelTransformer(pipeTransformer(), *tp); };
  ref::PipelineStages stages(factory, bounds, mine, pipeTransformer().dim, kInitSeed);
  pp::StageFunctions functions = stages.functions();
  if (c.schedule == "zbh1-unsplit") {  // the old single backward: the weight slots stay empty
    functions.backwardInput = nullptr;
    functions.backwardWeight = nullptr;
  }
  pp::Executor exec(pipe, sched, functions, pp::ExecutorOptions{c.recompute});
  auto o = makeOptimizer(c.opt);
  std::unique_ptr<train::DistributedDataParallel> ddp;
  std::vector<int> ids;
  if (replicas > 1) {
    ddp = std::make_unique<train::DistributedDataParallel>(dp);
    for (int l : stages.layers()) {
      ids.push_back(ddp->addParameter("layer" + std::to_string(l), stages.params(l), stages.grads(l), stages.numParams(l),
                                      cfxFloat32));
    }
    ddp->finalize();
  }
  for (int l : stages.layers()) o->addGroup(stages.params(l), stages.grads(l), stages.numParams(l));
  for (int s = 0; s < kSteps; ++s) {
    ref::Batch b = pipeBatch(s).slice(replica, replicas);
    std::vector<ref::Batch> micro;
    for (int k = 0; k < c.m; ++k) micro.push_back(b.slice(k, c.m));
    stages.setMicrobatches(std::move(micro));
    stages.zeroGrad();
    pp::StepResult r = exec.run();
    if (s == 0 && stage == sched.stageOf(sched.virtualStages() - 1)) {
      std::vector<float> want = referenceLosses(replica, replicas, c.m);
      EXPECT_EQ(r.losses.size(), want.size()) << what;
      if (r.losses.size() != want.size()) return {};
      for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(r.losses[k], want[k], 1e-5 * std::fabs(want[k])) << what << " mb " << k;
    } else if (stage != sched.stageOf(sched.virtualStages() - 1)) {
      EXPECT_TRUE(r.losses.empty()) << what;
    }
    if (ddp) {
      for (int id : ids) ddp->markReady(id);
      ddp->finishBackward();
    }
    o->step();
  }
  if (c.recompute) {
    EXPECT_EQ(stages.peakLiveChains(), 1) << what << ": recomputation holds one micro-batch's caches at most";
  } else if (c.schedule == "gpipe") {
    EXPECT_EQ(stages.peakLiveChains(), c.m) << what;
  } else if (c.schedule == "1f1b") {
    EXPECT_LE(stages.peakLiveChains(), std::min(p - stage, c.m)) << what;
  } else if (c.schedule == "zbh1") {  // 1F1B's in flight, plus the weight halves waiting
    EXPECT_LE(stages.peakLiveChains(), std::min(p - stage, c.m) + exec.report().peakDeferredWeights[static_cast<size_t>(stage)]) << what;
  }
  std::vector<std::vector<float>> got, want;
  const auto ref = referenceParams(c.opt);
  const int blocks = pipeTransformer().blocks;
  for (int l : stages.layers()) {
    got.emplace_back(stages.params(l), stages.params(l) + stages.numParams(l));
    want.push_back(ref[static_cast<size_t>(l)]);
    if (tp != nullptr && l >= 1 && l <= blocks) {  // a tensor-parallel block: this rank's slice
      std::vector<float> slice(stages.numParams(l));
      ref::shardTransformerBlock(pipeTransformer(), tp->size(), tp->rank(), want.back().data(), slice.data());
      want.back() = std::move(slice);
    }
  }
  double diff = maxRelativeDiff(got, want);
  EXPECT_LE(diff, 1e-5) << what << ": stage " << stage << " differs from single-process training";
  return got;
}

class PipelineTraining : public ::testing::TestWithParam<int> {};

TEST_P(PipelineTraining, SchedulesMatchSingleProcess) {
  const int p = GetParam();
  runRanks(p, [p](Rank& rk) {
    // m divides the 12 sequences; interleaved needs m a multiple of p.
    std::vector<Config> configs = {
        {"gpipe", p == 2 ? 4 : p, 1, false, Opt::kSgd},
        {"gpipe", 6, 1, true, Opt::kSgd},
        {"1f1b", 6, 1, false, Opt::kSgd},
        {"1f1b", p == 3 ? 3 : 4, 1, false, Opt::kAdam},
        {"interleaved", p == 3 ? 6 : 4, 2, false, Opt::kSgd},
        {"interleaved", p == 3 ? 6 : 4, 2, true, Opt::kAdam},
        {"zbh1", 6, 1, false, Opt::kSgd},
        {"zbh1-unsplit", 6, 1, false, Opt::kSgd},
        {"zbh1", p == 3 ? 3 : 4, 1, false, Opt::kAdam},
    };
    std::map<std::string, std::vector<std::vector<float>>> got;
    for (const Config& c : configs) {
      got[c.schedule + std::to_string(c.m) + optName(c.opt)] = trainPipeline(rk.comm, nullptr, 0, 1, c);
      if (::testing::Test::HasFailure()) return;
    }
    // ZB-H1 against 1F1B itself: the same parameters after 3 steps (the split backward only moves
    // the weight gradients, so the sums differ in order at most).
    for (const std::string& key : {std::string("6") + optName(Opt::kSgd), std::to_string(p == 3 ? 3 : 4) + optName(Opt::kAdam)}) {
      EXPECT_LE(maxRelativeDiff(got["zbh1" + key], got["1f1b" + key]), 1e-5) << "ZB-H1 against 1F1B, " << key;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Stages, PipelineTraining, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return "p" + std::to_string(i.param); });

TEST(PipelineData, TwoByTwoMatchesSingleProcess) {
  runRanks(4, [](Rank& rk) {
    pp::ParallelComms pc = pp::splitPipelineData(rk.comm, 2);
    EXPECT_EQ(pc.stage, rk.rank % 2);
    EXPECT_EQ(pc.replica, rk.rank / 2);
    trainPipeline(pc.pipeline, pc.replicas, pc.replica, 2, Config{"1f1b", 3, 1, false, Opt::kSgd});
    trainPipeline(pc.pipeline, pc.replicas, pc.replica, 2, Config{"interleaved", 2, 2, false, Opt::kAdam});
    CFX_ASSERT_OK(cfxCommDestroy(pc.pipeline));
    CFX_ASSERT_OK(cfxCommDestroy(pc.replicas));
  });
}

// Megatron's 3-D layout on 8 ranks: data x pipeline x tensor = 2 x 2 x 2, the communicators from
// one placement (sbp.h: a 2 x 2 x 2 mesh of the world, one sub-communicator per axis; the tensor
// axis varies fastest, so a tensor-parallel pair shares a host's memory first). 1F1B across the
// pipeline, DDP across the replicas, every block split over its tensor-parallel pair: 3 steps end
// within 1e-5 of one process.
TEST(ThreeD, DataPipelineTensorMatchesSingleProcess) {
  runRanks(8, [](Rank& rk) {
    conflux::train::sbp::Placement mesh(rk.comm, {2, 2, 2});
    const std::vector<int>& at = mesh.coords();
    EXPECT_EQ(at[0] * 4 + at[1] * 2 + at[2], rk.rank);
    conflux::train::tp::Group tp(mesh.axisComm(2), false);
    trainPipeline(mesh.axisComm(1), mesh.axisComm(0), at[0], 2, Config{"1f1b", 3, 1, false, Opt::kSgd}, &tp);
  });
}

// Stage 1's backward throws: stage 0, waiting for that gradient, fails with an error well before
// the harness deadline instead of hanging.
TEST(PipelineExecutor, FailingStageStopsItsNeighbours) {
  runRanks(2, [](Rank& rk) {
    pp::StageFunctions f;
    f.activationSize = [](int) { return size_t{4}; };
    f.forward = [](int, int, const float*, float* out, bool) {
      if (out != nullptr) std::fill(out, out + 4, 1.0f);
      return 0.0f;
    };
    f.backward = [&rk](int, int, const float*, float* din) {
      if (rk.rank == 1) throw std::runtime_error("stage 1 backward failed");
      if (din != nullptr) std::fill(din, din + 4, 0.0f);
    };
    cfxComm_t pipe = nullptr;  // the executor aborts it; the harness's communicator stays whole
    CFX_ASSERT_OK(cfxCommSplit(rk.comm, 0, rk.rank, &pipe, nullptr));
    pp::Executor exec(pipe, pp::oneFOneB(2, 4), f);
    if (rk.rank == 1) {
      EXPECT_THROW(exec.run(), std::runtime_error);
    } else {
      try {
        exec.run();
        ADD_FAILURE() << "stage 0 finished although stage 1 failed";
      } catch (const train::Error& e) {
        EXPECT_EQ(e.code(), cfxRemoteError) << e.what();
        EXPECT_NE(std::string(e.what()).find("rank 1 aborted the communicator"), std::string::npos) << e.what();
      }
    }
  });
}

TEST(PipelineExecutor, RejectsMisuse) {
  runRanks(2, [](Rank& rk) {
    pp::StageFunctions f;
    try {
      pp::Executor exec(rk.comm, pp::gpipe(2, 2), f);
      ADD_FAILURE() << "accepted empty callbacks";
    } catch (const train::Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidArgument);
    }
    f.activationSize = [](int) { return size_t{1}; };
    f.forward = [](int, int, const float*, float*, bool) { return 0.0f; };
    f.backward = [](int, int, const float*, float*) {};
    try {
      pp::Executor exec(rk.comm, pp::gpipe(3, 2), f);
      ADD_FAILURE() << "accepted 3 stages on 2 ranks";
    } catch (const train::Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("3 stages but the communicator has 2 ranks"), std::string::npos) << e.what();
    }
  });
}

TEST(PipelinePartition, BalancesCost) {
  EXPECT_EQ(pp::partition({1, 1, 1, 1}, 2), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(pp::partition({4, 1, 1, 1, 1}, 2), (std::vector<int>{0, 1, 5}));
  EXPECT_EQ(pp::partition({1, 2, 3, 4, 5, 6, 7, 8, 9}, 3), (std::vector<int>{0, 5, 7, 9}));  // 15, 13, 17
  EXPECT_EQ(pp::partition({5, 5, 5}, 3), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(pp::partition({0, 0, 7}, 1), (std::vector<int>{0, 3}));
  // The transformer: embedding and head are cheap, the blocks equal; 8 layers in 4 stages.
  std::vector<int> b = pp::partition(pipeLayerCosts(), 4);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b.front(), 0);
  EXPECT_EQ(b.back(), 8);
}

TEST(PipelinePartition, RejectsBadInput) {
  for (auto [costs, parts] : {std::pair<std::vector<double>, int>{{1, 2}, 3}, {{1, 2}, 0}, {{1, -1}, 1}, {{1, NAN}, 1}}) {
    try {
      pp::partition(costs, parts);
      ADD_FAILURE() << "accepted " << costs.size() << " layers in " << parts << " parts";
    } catch (const train::Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidArgument);
    }
  }
}

// Two transfers between the same pair of stages in one group whose receiver posts them the
// other way round: the simulation alone cannot see it (groups complete together), the order
// check names it.
TEST(PipelineSchedule, CrossedMessagesInAGroupAreNamed) {
  pp::Schedule s = pp::gpipe(2, 2);
  // Stage 0: both forwards, then one group with both sends; stage 1: one group with both receives.
  s.actions[0] = {{pp::Op::kForward, 0, 0}, {pp::Op::kForward, 1, 0}, {pp::Op::kSendActivation, 0, 0},
                  {pp::Op::kSendActivation, 1, 0}, {pp::Op::kRecvGradient, 0, 0}, {pp::Op::kRecvGradient, 1, 0},
                  {pp::Op::kBackward, 0, 0}, {pp::Op::kBackward, 1, 0}};
  s.actions[1] = {{pp::Op::kRecvActivation, 1, 1}, {pp::Op::kRecvActivation, 0, 1}, {pp::Op::kForward, 0, 1},
                  {pp::Op::kForward, 1, 1}, {pp::Op::kBackward, 0, 1}, {pp::Op::kBackward, 1, 1},
                  {pp::Op::kSendGradient, 0, 1}, {pp::Op::kSendGradient, 1, 1}};
  try {
    pp::validate(s);
    ADD_FAILURE() << "accepted crossed messages";
  } catch (const train::Error& e) {
    EXPECT_NE(std::string(e.what()).find("stage 0, send-act(mb 0, vs 0 -> stage 1): is the sender's message 0"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cfxtest
