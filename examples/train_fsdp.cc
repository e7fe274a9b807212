// FSDP (FULL_SHARD unless told otherwise) training of the reference transformer:
//   cfxrun -n 4 build/examples/train_fsdp [steps] [full|grad_op|none|hybrid]
#include <cstdio>
#include <cstring>

#include "conflux/train/fsdp.h"
#include "conflux/train/optim.h"
#include "conflux/train/ref/adapters.h"
#include "train_common.h"

namespace train = conflux::train;

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 30;
  const char* strategy = argc > 2 ? argv[2] : "full";
  train::FsdpOptions fo;
  if (std::strcmp(strategy, "grad_op") == 0) fo.strategy = train::ShardingStrategy::kShardGradOp;
  if (std::strcmp(strategy, "none") == 0) fo.strategy = train::ShardingStrategy::kNoShard;
  if (std::strcmp(strategy, "hybrid") == 0) fo.strategy = train::ShardingStrategy::kHybridShard;
  cfxComm_t comm = nullptr;
  if (cfxCommInitFromEnv(&comm) != cfxSuccess) {
    std::fprintf(stderr, "train_fsdp: %s\n", cfxGetLastError(nullptr));
    return 1;
  }
  int rank = 0, nranks = 1;
  cfxCommUserRank(comm, &rank);
  cfxCommCount(comm, &nranks);
  try {
    train::ref::Model m = train::ref::makeTransformer(example::model());
    train::FullyShardedDataParallel fsdp(comm, fo);
    train::ref::FsdpModel hooks(m, fsdp, /*seed=*/1);  // one unit per layer, loaded sharded
    train::Adam opt({.lr = 3e-3f});
    for (int u = 0; u < fsdp.unitCount(); ++u) {
      opt.addGroup(static_cast<float*>(fsdp.shardParams(u)), static_cast<float*>(fsdp.shardGrads(u)),
                   fsdp.shardCount(u));
    }
    if (rank == 0) {
      std::printf("FSDP (%s): %d ranks, %zu parameters in %d units, shard group %d\n", strategy, nranks,
                  m.numParams(), fsdp.unitCount(), fsdp.shardGroupSize());
    }
    for (int s = 0; s < steps; ++s) {
      auto t0 = std::chrono::steady_clock::now();
      train::ref::Batch b = example::batch(s, rank, nranks);
      float loss = hooks.forward(b);
      hooks.backward(b);  // gathers, frees and reduce-scatters around every layer
      opt.step();         // on the local shards only
      example::report(comm, rank, s, loss, example::msSince(t0));
    }
    train::FsdpMemory mem = fsdp.memory();
    if (rank == 0) {
      std::printf("peak bytes per rank: parameters %zu, gradients %zu, optimizer state %zu (unsharded model: %zu each)\n",
                  mem.peakParamBytes, mem.peakGradBytes, opt.stateBytes(), m.numParams() * sizeof(float));
    }
  } catch (const train::Error& e) {
    std::fprintf(stderr, "train_fsdp rank %d: %s\n", rank, e.what());
    return 1;
  }
  cfxCommDestroy(comm);
  return 0;
}
