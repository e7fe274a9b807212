// Training-layer benchmark: step time of the reference transformer split into compute,
// communication and communication left exposed, for bucketed DDP, DDP with one AllReduce after
// backward, and FSDP FULL_SHARD; and FSDP's peak bytes per rank against DDP's.
//
//   cfxrun -n 4 build/perf/train_bench [--steps 20] [--bucket-kib 1024] [--blocks 16] [--dim 128]
//
// Every iteration runs each mode once, in turn (so a slow moment of this shared machine hits all
// modes alike), and the table gives medians over iterations:
//   compute  forward + backward with no communication at all
//   comm     the mode's communication alone (every gradient ready at once, then the wait)
//   exposed  time spent waiting for communication in the real step (DDP: in finishBackward, on the
//            rank that waited least, i.e. the last to finish backward, so waiting for slower
//            ranks is not counted; FSDP: step minus compute, rank 0)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "conflux/train/ddp.h"
#include "conflux/train/fsdp.h"
#include "conflux/train/optim.h"
#include "conflux/train/ref/adapters.h"

namespace train = conflux::train;
namespace ref = conflux::train::ref;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Options {
  int steps = 20, warmup = 2, bucketKiB = 1024, blocks = 16, dim = 128, seqsPerRank = 2;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (k == "--steps") o.steps = v;
    else if (k == "--warmup") o.warmup = v;
    else if (k == "--bucket-kib") o.bucketKiB = v;
    else if (k == "--blocks") o.blocks = v;
    else if (k == "--dim") o.dim = v;
    else if (k == "--seqs") o.seqsPerRank = v;
    else {
      std::fprintf(stderr, "train_bench: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

// A DDP configuration: its own model copy, DDP instance and hooks.
struct DdpMode {
  std::string name;
  ref::Model model;
  std::unique_ptr<train::DistributedDataParallel> ddp;
  std::unique_ptr<ref::DdpModel> hooks;
  std::vector<double> step, exposed, comm;
  cfxComm_t cm;

  DdpMode(std::string n, const ref::TransformerConfig& c, cfxComm_t comm, size_t cap)
      : name(std::move(n)), model(ref::makeTransformer(c)), cm(comm) {
    model.allocate(1);
    ddp = std::make_unique<train::DistributedDataParallel>(comm, train::DdpOptions{.bucketCapBytes = cap});
    hooks = std::make_unique<ref::DdpModel>(model, *ddp);
  }

  void runStep(const ref::Batch& b, bool record) {
    model.zeroGrad();
    double t0 = now();
    model.forward(b, hooks.get());
    model.backward(b, 1.0f, hooks.get());
    ddp->finishBackward();
    double t = now() - t0;
    double ex = ddp->lastStats().exposedSeconds;
    cfxAllReduce(&ex, &ex, 1, cfxFloat64, cfxMin, cm, nullptr);  // outside the timed region
    if (record) {
      step.push_back(t);
      exposed.push_back(ex);
    }
  }

  // Communication alone: every gradient ready at once (in backward's order); the wait in
  // finishBackward, as for `exposed` (packing the buckets is excluded from both).
  void runCommOnly(int params, bool record) {
    for (int i = params - 1; i >= 0; --i) ddp->markReady(i);
    ddp->finishBackward();
    double t = ddp->lastStats().exposedSeconds;
    cfxAllReduce(&t, &t, 1, cfxFloat64, cfxMin, cm, nullptr);
    if (record) comm.push_back(t);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  cfxComm_t comm = nullptr;
  if (cfxCommInitFromEnv(&comm) != cfxSuccess) {
    std::fprintf(stderr, "train_bench: %s\n", cfxGetLastError(nullptr));
    return 1;
  }
  int rank = 0, n = 1;
  cfxCommUserRank(comm, &rank);
  cfxCommCount(comm, &n);
  ref::TransformerConfig c;
  c.vocab = 256;
  c.seqLen = 32;
  c.dim = o.dim;
  c.heads = 4;
  c.ffn = 4 * o.dim;
  c.blocks = o.blocks;
  try {
    ref::Model plain = ref::makeTransformer(c);
    plain.allocate(1);
    DdpMode bucketed("DDP, " + std::to_string(o.bucketKiB) + " KiB buckets", c, comm,
                     static_cast<size_t>(o.bucketKiB) << 10);
    DdpMode larger("DDP, " + std::to_string(4 * o.bucketKiB) + " KiB buckets", c, comm,
                   static_cast<size_t>(4 * o.bucketKiB) << 10);
    DdpMode single("DDP, one AllReduce after backward", c, comm, size_t{1} << 40);
    ref::Model fsdpModel = ref::makeTransformer(c);
    train::FullyShardedDataParallel fsdp(comm);
    ref::FsdpModel fsdpHooks(fsdpModel, fsdp, 1);
    train::Adam fsdpOpt({});
    for (int u = 0; u < fsdp.unitCount(); ++u) {
      fsdpOpt.addGroup(static_cast<float*>(fsdp.shardParams(u)), static_cast<float*>(fsdp.shardGrads(u)), fsdp.shardCount(u));
    }
    int params = 0;
    for (int i = 0; i < plain.layerCount(); ++i) params += static_cast<int>(plain.layer(i).tensors().size());

    std::vector<double> compute, fsdpStep;
    fsdp.resetPeak();
    for (int it = 0; it < o.warmup + o.steps; ++it) {
      const bool rec = it >= o.warmup;
      ref::Batch b = ref::makeTokenBatch(c, o.seqsPerRank * n, 500 + static_cast<uint64_t>(it)).slice(rank, n);
      cfxAllReduce(&it, &it, 0, cfxInt32, cfxSum, comm, nullptr);
      double t0 = now();
      plain.zeroGrad();
      plain.forward(b);
      plain.backward(b);
      if (rec) compute.push_back(now() - t0);
      for (DdpMode* m : {&bucketed, &larger, &single}) m->runStep(b, rec);
      for (DdpMode* m : {&bucketed, &larger, &single}) m->runCommOnly(params, rec);
      t0 = now();
      fsdpHooks.forward(b);
      fsdpHooks.backward(b);
      if (rec) fsdpStep.push_back(now() - t0);
      fsdpOpt.step();
    }
    if (rank == 0) {
      const double ms = 1e3, comp = median(compute) * ms;
      std::printf("Transformer: %zu parameters (%d blocks, dim %d, seq %d), %d sequences per rank, %d ranks; "
                  "median of %d steps, ms\n\n", plain.numParams(), c.blocks, c.dim, c.seqLen, o.seqsPerRank, n, o.steps);
      std::printf("| ranks | mode | step | compute | comm alone | exposed | hidden share of comm |\n");
      std::printf("|---|---|---|---|---|---|---|\n");
      for (DdpMode* m : {&bucketed, &larger, &single}) {
        double cm = median(m->comm) * ms, ex = median(m->exposed) * ms;
        std::printf("| %d | %s (%d buckets) | %.1f | %.1f | %.1f | %.1f | %.0f%% |\n", n, m->name.c_str(),
                    m->ddp->bucketCount(), median(m->step) * ms, comp, cm, ex, cm > 0 ? 100.0 * (1.0 - std::min(ex, cm) / cm) : 0.0);
      }
      double fs = median(fsdpStep) * ms;
      std::printf("| %d | FSDP FULL_SHARD, prefetch | %.1f | %.1f | - | %.1f | - |\n\n", n, fs, comp, std::max(0.0, fs - comp));
      train::FsdpMemory mem = fsdp.memory();
      const double full = static_cast<double>(plain.numParams()) * sizeof(float);
      const double ddpBytes = 4 * full, fsdpBytes = static_cast<double>(mem.peakTotalBytes + fsdpOpt.stateBytes());
      std::printf("| ranks | bytes per rank (Adam) | parameters | gradients | optimizer state | total | of DDP |\n");
      std::printf("|---|---|---|---|---|---|---|\n");
      std::printf("| %d | DDP | %.0f | %.0f | %.0f | %.0f | 100%% |\n", n, full, full, 2 * full, ddpBytes);
      std::printf("| %d | FSDP FULL_SHARD (peak) | %zu | %zu | %zu | %.0f | %.1f%% (target <= %.1f%%) |\n", n,
                  mem.peakParamBytes, mem.peakGradBytes, fsdpOpt.stateBytes(), fsdpBytes, 100.0 * fsdpBytes / ddpBytes,
                  100.0 * (1.0 / n + 0.10));
    }
  } catch (const train::Error& e) {
    std::fprintf(stderr, "train_bench rank %d: %s\n", rank, e.what());
    return 1;
  }
  cfxCommDestroy(comm);
  return 0;
}
