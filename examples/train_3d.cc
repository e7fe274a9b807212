// 3-D parallel training of the reference transformer (Megatron's layout): data x pipeline x
// tensor parallelism from one world communicator.
//
//   cfxrun -n 8 build/examples/train_3d                       # dp 2 x pp 2 x tp 2
//   cfxrun -n 8 build/examples/train_3d --dp 8 --pp 1 --tp 1 --micro 1  # pure data parallelism
//   options: --steps N (20) --seqs S (16 sequences per step, all replicas together) --micro M (4)
//            --dp D --pp P --tp T
//
// The ranks form a dp x pp x tp mesh (sbp::Placement; rank = (d * pp + p) * tp + t, the tensor
// axis fastest so a tensor-parallel group sits on one host), one sub-communicator per axis:
// every block is split over its tensor-parallel group (tensor_parallel.h), the layers are cut
// into pp stages run by 1F1B with M micro-batches, and the replicas average their gradients with
// DDP (one AllReduce per step after backward). Each step prints the loss; the end prints the
// median step time split into compute (the forward and backward callbacks less the tensor-
// parallel communication inside them) and exposed communication (the rest: tensor-parallel
// reductions, pipeline sends and receives and their waits, the DDP AllReduce), on rank 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "conflux/train/ddp.h"
#include "conflux/train/optim.h"
#include "conflux/train/pipeline/executor.h"
#include "conflux/train/pipeline/partition.h"
#include "conflux/train/ref/pipeline_stages.h"
#include "conflux/train/ref/tensor_parallel.h"
#include "conflux/train/sbp.h"
#include "train_common.h"

namespace train = conflux::train;
namespace ref = conflux::train::ref;
namespace pp = conflux::train::pipeline;

namespace {

struct Options {
  int steps = 20, seqs = 16, micro = 4, dp = 2, pp = 2, tp = 2;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--steps") o.steps = v;
    else if (k == "--seqs") o.seqs = v;
    else if (k == "--micro") o.micro = v;
    else if (k == "--dp") o.dp = v;
    else if (k == "--pp") o.pp = v;
    else if (k == "--tp") o.tp = v;
    else {
      std::fprintf(stderr, "train_3d: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  cfxComm_t world = nullptr;
  if (cfxCommInitFromEnv(&world) != cfxSuccess) {
    std::fprintf(stderr, "train_3d: %s\n", cfxGetLastError(nullptr));
    return 1;
  }
  int rank = 0, nranks = 1;
  cfxCommUserRank(world, &rank);
  cfxCommCount(world, &nranks);
  try {
    train::sbp::Placement mesh(world, {o.dp, o.pp, o.tp});
    const int replica = mesh.coords()[0], stage = mesh.coords()[1];
    train::tp::Group tp(mesh.axisComm(2), false);
    const ref::TransformerConfig cfg = example::model();
    auto factory = [&] { return ref::makeTensorParallelTransformer(cfg, tp); };

    pp::Schedule sched = pp::oneFOneB(o.pp, o.micro);
    std::vector<double> costs;
    ref::Model probe = ref::makeTransformer(cfg);
    for (int i = 0; i < probe.layerCount(); ++i) costs.push_back(static_cast<double>(probe.layer(i).numParams()));
    std::vector<int> bounds = pp::partition(costs, o.pp);
    ref::PipelineStages stages(factory, bounds, {stage}, cfg.dim, /*seed=*/1);
    pp::Executor exec(mesh.axisComm(1), sched, stages.functions());
    train::DistributedDataParallel ddp(mesh.axisComm(0));
    std::vector<int> ids;
    train::Adam opt({.lr = 3e-3f});
    for (int l : stages.layers()) {
      ids.push_back(ddp.addParameter("layer" + std::to_string(l), stages.params(l), stages.grads(l),
                                     stages.numParams(l), cfxFloat32));
      opt.addGroup(stages.params(l), stages.grads(l), stages.numParams(l));
    }
    ddp.finalize();
    if (o.seqs % (o.dp * o.micro) != 0) {
      throw train::Error(cfxInvalidArgument, "--seqs must divide into dp x micro-batches");
    }
    if (rank == 0) {
      std::printf("3-D: %d ranks = dp %d x pp %d x tp %d, %zu parameters, 1F1B with %d micro-batches, %d sequences per step\n",
                  nranks, o.dp, o.pp, o.tp, probe.numParams(), o.micro, o.seqs);
    }
    std::vector<double> stepMs, computeMs, exposedMs;
    for (int s = 0; s < o.steps; ++s) {
      const auto t0 = std::chrono::steady_clock::now();
      const double tpBefore = tp.commSeconds();
      ref::Batch b = ref::makeTokenBatch(cfg, o.seqs, 1000 + static_cast<uint64_t>(s)).slice(replica, o.dp);
      std::vector<ref::Batch> micro;
      for (int k = 0; k < o.micro; ++k) micro.push_back(b.slice(k, o.micro));
      stages.setMicrobatches(std::move(micro));
      stages.zeroGrad();
      pp::StepResult r = exec.run();
      for (int id : ids) ddp.markReady(id);
      ddp.finishBackward();
      opt.step();
      const double ms = example::msSince(t0);
      const double compute = (r.computeSeconds - (tp.commSeconds() - tpBefore)) * 1e3;
      stepMs.push_back(ms);
      computeMs.push_back(compute);
      exposedMs.push_back(ms - compute);
      // The loss lives on the last stage: its ranks' mean, averaged over the world.
      float loss = 0;
      for (float l : r.losses) loss += l / static_cast<float>(r.losses.size());
      train::check(cfxAllReduce(&loss, &loss, 1, cfxFloat32, cfxSum, world, nullptr), "loss AllReduce", world);
      loss /= static_cast<float>(o.dp * o.tp);
      if (rank == 0) std::printf("step %3d  loss %.4f  %.1f ms\n", s, static_cast<double>(loss), ms);
    }
    if (rank == 0) {
      std::printf("median of %d steps (rank 0): step %.1f ms, compute %.1f ms, exposed communication %.1f ms\n",
                  o.steps, median(stepMs), median(computeMs), median(exposedMs));
    }
  } catch (const train::Error& e) {
    std::fprintf(stderr, "train_3d rank %d: %s\n", rank, e.what());
    return 1;
  }
  cfxCommDestroy(world);
  return 0;
}
