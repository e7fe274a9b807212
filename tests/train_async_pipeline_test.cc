// The asynchronous pipeline schedules on real ranks against a single-process replay of the same
// staleness: PipeDream (an update after every backward, weight stashing), PipeDream-2BW (one
// update per batch, every micro-batch of batch b on version b - 1) and 1F1B-RR (2BW with stages
// replicated, their gradients averaged by DDP at each update). The replay runs every micro-batch
// through the whole model in one process with, on each stage, the weight version its forward used
// there, and applies each stage's updates in order to the gradients of the micro-batches whose
// backward preceded them: what the schedule promises, computed without a pipeline. The versions come
// from the schedules' definitions (fromDefinition), not from the generators under test.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conflux/train/ddp.h"
#include "conflux/train/pipeline/executor.h"
#include "conflux/train/pipeline/partition.h"
#include "conflux/train/ref/pipeline_stages.h"
#include "harness.h"
#include "train_support.h"

namespace cfxtest {
namespace {

namespace train = conflux::train;
namespace pp = conflux::train::pipeline;

constexpr int kRuns = 2;  // the second run starts from the first's weights, versions from 0 again

// The stream: m micro-batches of two sequences each.
std::vector<ref::Batch> stream(int run, int m) {
  std::vector<ref::Batch> out;
  for (int k = 0; k < m; ++k) out.push_back(ref::makeTokenBatch(pipeTransformer(), 2, 900 + 100 * static_cast<uint64_t>(run) + k));
  return out;
}

// Each (stage, micro-batch)'s staleness: the version its forward used, and the version made by the
// update its gradient goes into; and each stage's updates.
struct Staleness {
  std::vector<std::vector<int>> forwardVersion, intoUpdate;  // [stage][mb]
  std::vector<int> updates;                                  // per stage
};

enum class Kind { kPipeDream, kTwoBW };  // 1F1B-RR is 2BW with replicated stages

// The staleness from the definitions, never from the schedule under test (whose generator the
// replay must be able to catch):
//  - PipeDream: 1F1B, an update after every backward. Stage s holds at most p - s micro-batches
//    between forward and backward, so the forward of micro-batch i waits for the backward of
//    micro-batch i - (p - s), and 1F1B runs it as soon as that backward is done: it uses the weights
//    after i - (p - s) + 1 updates (version 0 while i < p - s). The gradient of micro-batch i makes
//    update i + 1: m updates per stage.
//  - 2BW (and 1F1B-RR): micro-batch i belongs to batch k = i / batch; every micro-batch of batch k
//    uses version k - 1 (0 for the first batch) and its gradient goes into the update that ends
//    the batch, k + 1 (a last, partial batch included): ceil(m / batch) updates per stage.
Staleness fromDefinition(Kind kind, int p, int m, int batch) {
  Staleness st;
  st.forwardVersion.assign(static_cast<size_t>(p), std::vector<int>(static_cast<size_t>(m), -1));
  st.intoUpdate = st.forwardVersion;
  for (int s = 0; s < p; ++s) {
    for (int i = 0; i < m; ++i) {
      const bool dream = kind == Kind::kPipeDream;
      st.forwardVersion[static_cast<size_t>(s)][static_cast<size_t>(i)] =
          dream ? std::max(0, i - (p - s) + 1) : std::max(0, i / batch - 1);
      st.intoUpdate[static_cast<size_t>(s)][static_cast<size_t>(i)] = dream ? i + 1 : i / batch + 1;
    }
  }
  st.updates.assign(static_cast<size_t>(p), kind == Kind::kPipeDream ? m : (m + batch - 1) / batch);
  return st;
}

// The single-process replay. Parameters per stage and version; gradients per stage and update.
class Replay {
 public:
  Replay(const pp::Schedule& s, Staleness st, std::vector<int> bounds, Opt opt)
      : s_(s), st_(std::move(st)), bounds_(std::move(bounds)), model_(makePipeModel()) {
    const size_t p = static_cast<size_t>(s.stages);
    current_.resize(p);
    work_.resize(p);
    grad_.resize(p);
    for (size_t st = 0; st < p; ++st) {
      opt_.push_back(makeOptimizer(opt));
      for (int l = bounds_[st]; l < bounds_[st + 1]; ++l) {
        std::vector<float> w(model_.layer(l).numParams());
        model_.initLayer(l, w.data(), kInitSeed);
        current_[st].push_back(w);
        work_[st].push_back(w);
        grad_[st].emplace_back(w.size(), 0.0f);
        opt_[st]->addGroup(work_[st].back().data(), grad_[st].back().data(), w.size());
      }
    }
  }

  void run(const std::vector<ref::Batch>& mbs, float lossScale) {
    const Staleness& st = st_;
    const size_t p = static_cast<size_t>(s_.stages);
    std::vector<std::vector<std::vector<std::vector<float>>>> versions(p);  // [stage][version][layer]
    // [stage][(update, replica)][layer]: each replica sums its share of an update, as on the ranks.
    std::vector<std::map<std::pair<int, int>, std::vector<std::vector<float>>>> grads(p);
    for (size_t k = 0; k < p; ++k) versions[k].push_back(current_[k]);
    auto apply = [&](size_t k) {  // the stage's next update
      const int u = static_cast<int>(versions[k].size());
      for (size_t l = 0; l < work_[k].size(); ++l) {
        work_[k][l] = versions[k].back()[l];
        std::fill(grad_[k][l].begin(), grad_[k][l].end(), 0.0f);
        for (int r = 0; r < s_.replicasOf(static_cast<int>(k)); ++r) {  // the replicas' shares, added in rank order
          auto it = grads[k].find({u, r});
          if (it == grads[k].end()) continue;
          for (size_t i = 0; i < grad_[k][l].size(); ++i) grad_[k][l][i] += it->second[l][i];
        }
      }
      opt_[k]->step();
      versions[k].push_back(work_[k]);
    };
    for (size_t mb = 0; mb < mbs.size(); ++mb) {
      for (size_t k = 0; k < p; ++k) {
        const int v = st.forwardVersion[k][mb];
        while (static_cast<int>(versions[k].size()) <= v) apply(k);
        auto& g = grads[k][{st.intoUpdate[k][mb], static_cast<int>(mb) % s_.replicasOf(static_cast<int>(k))}];
        if (g.empty()) {
          for (const auto& w : current_[k]) g.emplace_back(w.size(), 0.0f);
        }
        for (int l = bounds_[k]; l < bounds_[k + 1]; ++l) {
          const size_t i = static_cast<size_t>(l - bounds_[k]);
          model_.layer(l).bind(versions[k][static_cast<size_t>(v)][i].data(), g[i].data());
        }
      }
      model_.forward(mbs[mb]);
      model_.backward(mbs[mb], lossScale);
    }
    for (size_t k = 0; k < p; ++k) {
      while (static_cast<int>(versions[k].size()) <= st.updates[k]) apply(k);
      current_[k] = versions[k].back();
    }
  }

  const std::vector<std::vector<float>>& params(int stage) const { return current_[static_cast<size_t>(stage)]; }

 private:
  const pp::Schedule& s_;
  Staleness st_;
  std::vector<int> bounds_;
  ref::Model model_;
  std::vector<std::vector<std::vector<float>>> current_, work_, grad_;  // [stage][layer]
  std::vector<std::unique_ptr<train::Optimizer>> opt_;
};

// Runs `s` for kRuns streams of m micro-batches on this rank's worker and compares its stage's
// parameters with the replay's. `batch`: micro-batches per update (the loss scale is 1 / batch).
void trainAsync(cfxComm_t world, const pp::Schedule& s, Kind kind, int batch, Opt opt) {
  const Staleness expected = fromDefinition(kind, s.stages, s.microbatches, batch);
  int rank = 0;
  CFX_ASSERT_OK(cfxCommUserRank(world, &rank));
  const int stage = s.stageOfWorker(rank), replicas = s.replicasOf(stage);
  const std::vector<int> bounds = pp::partition(pipeLayerCosts(), s.stages);
  ref::PipelineStages stages(makePipeModel, bounds, {stage}, pipeTransformer().dim, kInitSeed);
  auto o = makeOptimizer(opt);
  for (int l : stages.layers()) o->addGroup(stages.params(l), stages.grads(l), stages.numParams(l));
  cfxComm_t peers = nullptr;  // the stage's replicas
  std::unique_ptr<train::DistributedDataParallel> ddp;
  std::vector<int> ids;
  if (!s.replicas.empty()) CFX_ASSERT_OK(cfxCommSplit(world, stage, rank, &peers, nullptr));  // collective: every rank
  if (replicas > 1) {
    ddp = std::make_unique<train::DistributedDataParallel>(peers);
    for (int l : stages.layers()) {
      ids.push_back(ddp->addParameter("layer" + std::to_string(l), stages.params(l), stages.grads(l), stages.numParams(l), cfxFloat32));
    }
    ddp->finalize();
  }
  pp::StageFunctions f = stages.functions();
  int updates = 0;
  f.update = [&](int version) {
    EXPECT_EQ(version, ++updates);
    if (ddp) {
      // Each replica holds the sum over its share of the batch; DDP averages, so scale by the
      // replicas to get the sum over the whole batch (exact for a power of two).
      for (int l : stages.layers()) {
        for (size_t i = 0; i < stages.numParams(l); ++i) stages.grads(l)[i] *= static_cast<float>(replicas);
      }
      for (int id : ids) ddp->markReady(id);
      ddp->finishBackward();
    }
    o->step();
    stages.zeroGrad();
  };
  pp::Executor exec(world, s, f);
  Replay replay(s, expected, bounds, opt);
  size_t stashed = 0;
  for (int run = 0; run < kRuns; ++run) {
    std::vector<ref::Batch> mbs = stream(run, s.microbatches);
    stages.setMicrobatches(mbs, 1.0f / static_cast<float>(batch));
    updates = 0;
    pp::StepResult r = exec.run();
    EXPECT_EQ(r.updates, expected.updates[static_cast<size_t>(stage)]) << s.name;
    stashed = std::max(stashed, r.peakStashedBytes);
    replay.run(mbs, 1.0f / static_cast<float>(batch));
  }
  std::vector<std::vector<float>> got;
  for (int l : stages.layers()) got.emplace_back(stages.params(l), stages.params(l) + stages.numParams(l));
  EXPECT_LE(maxRelativeDiff(got, replay.params(stage)), 1e-5) << s.name << ": stage " << stage << " (worker " << rank
                                                               << ") differs from the single-process replay";
  // Weight stashing kept at most the versions the validator counted, beside the live one.
  size_t stageBytes = 0;
  for (int l : stages.layers()) stageBytes += stages.numParams(l) * sizeof(float);
  EXPECT_LE(stashed, stageBytes * static_cast<size_t>(exec.report().peakVersions[static_cast<size_t>(rank)] - 1)) << s.name;
  if (peers != nullptr) {
    ddp.reset();
    CFX_ASSERT_OK(cfxCommDestroy(peers));
  }
}

class AsyncPipeline : public ::testing::TestWithParam<int> {};

TEST_P(AsyncPipeline, MatchesTheReplayOfItsStaleness) {
  const int p = GetParam();
  runRanks(p, [p](Rank& rk) {
    trainAsync(rk.comm, pp::pipeDream(p, 7), Kind::kPipeDream, 1, Opt::kSgd);
    trainAsync(rk.comm, pp::pipeDream(p, 6), Kind::kPipeDream, 1, Opt::kAdam);
    trainAsync(rk.comm, pp::pipeDream2BW(p, 9, p), Kind::kTwoBW, p, Opt::kSgd);
    trainAsync(rk.comm, pp::pipeDream2BW(p, 8, 4), Kind::kTwoBW, 4, Opt::kAdam);
  });
}

INSTANTIATE_TEST_SUITE_P(Stages, AsyncPipeline, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return "p" + std::to_string(i.param); });

// 1F1B-RR on 3 ranks: the first or the last of two stages replicated.
TEST(RoundRobin, ThreeWorkersMatchTheReplay) {
  runRanks(3, [](Rank& rk) {
    trainAsync(rk.comm, pp::oneFOneBRR({2, 1}, 8, 4), Kind::kTwoBW, 4, Opt::kSgd);
    trainAsync(rk.comm, pp::oneFOneBRR({1, 2}, 8, 4), Kind::kTwoBW, 4, Opt::kAdam);
    trainAsync(rk.comm, pp::oneFOneBRR({1, 2}, 6, 2), Kind::kTwoBW, 2, Opt::kSgd);
  });
}

// 1F1B-RR on 4 ranks: three stages with one replicated, and two stages both replicated.
TEST(RoundRobin, FourWorkersMatchTheReplay) {
  runRanks(4, [](Rank& rk) {
    trainAsync(rk.comm, pp::oneFOneBRR({1, 2, 1}, 8, 4), Kind::kTwoBW, 4, Opt::kSgd);
    trainAsync(rk.comm, pp::oneFOneBRR({2, 2}, 8, 4), Kind::kTwoBW, 4, Opt::kAdam);
  });
}

// An asynchronous schedule needs an update callback, and stashing needs the parameter buffers.
TEST(AsyncPipelineExecutor, RejectsMissingCallbacks) {
  runRanks(2, [](Rank& rk) {
    pp::StageFunctions f;
    f.activationSize = [](int) { return size_t{1}; };
    f.forward = [](int, int, const float*, float*, bool) { return 0.0f; };
    f.backward = [](int, int, const float*, float*) {};
    try {
      pp::Executor exec(rk.comm, pp::pipeDream(2, 4), f);
      ADD_FAILURE() << "accepted PipeDream without update";
    } catch (const train::Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("StageFunctions::update must be set"), std::string::npos) << e.what();
    }
    f.update = [](int) {};
    if (rk.rank == 0) {  // stage 0 computes with stashed versions; the last stage never does
      try {
        pp::Executor exec(rk.comm, pp::pipeDream(2, 4), f);
        ADD_FAILURE() << "accepted PipeDream's stage 0 without parameter buffers";
      } catch (const train::Error& e) {
        EXPECT_EQ(e.code(), cfxInvalidArgument);
        EXPECT_NE(std::string(e.what()).find("StageFunctions::parameters"), std::string::npos) << e.what();
      }
    }
    try {
      pp::Executor exec(rk.comm, pp::oneFOneBRR({2, 1}, 4, 2), f);
      ADD_FAILURE() << "accepted 3 workers on 2 ranks";
    } catch (const train::Error& e) {
      EXPECT_NE(std::string(e.what()).find("has 3 workers but the communicator has 2 ranks"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace cfxtest
