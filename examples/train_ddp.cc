// DDP training of the reference transformer on synthetic data:
//   cfxrun -n 4 build/examples/train_ddp [steps]
#include <cstdio>

#include "conflux/train/ddp.h"
#include "conflux/train/optim.h"
#include "conflux/train/ref/adapters.h"
#include "train_common.h"

namespace train = conflux::train;

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 30;
  cfxComm_t comm = nullptr;
  if (cfxCommInitFromEnv(&comm) != cfxSuccess) {
    std::fprintf(stderr, "train_ddp: %s\n", cfxGetLastError(nullptr));
    return 1;
  }
  int rank = 0, nranks = 1;
  cfxCommUserRank(comm, &rank);
  cfxCommCount(comm, &nranks);
  try {
    train::ref::Model m = train::ref::makeTransformer(example::model());
    m.allocate(/*seed=*/1);
    train::DistributedDataParallel ddp(comm, train::DdpOptions{.bucketCapBytes = 256 << 10});
    train::ref::DdpModel hooks(m, ddp);  // registers every tensor, broadcasts rank 0's values
    train::Adam opt({.lr = 3e-3f});
    for (int i = 0; i < m.layerCount(); ++i) opt.addGroup(m.params(i), m.grads(i), m.layer(i).numParams());
    if (rank == 0) {
      std::printf("DDP: %d ranks, %zu parameters, %d buckets\n", nranks, m.numParams(), ddp.bucketCount());
    }
    for (int s = 0; s < steps; ++s) {
      auto t0 = std::chrono::steady_clock::now();
      train::ref::Batch b = example::batch(s, rank, nranks);
      m.zeroGrad();
      float loss = m.forward(b, &hooks);
      m.backward(b, 1.0f, &hooks);  // buckets reduce while backward goes on
      ddp.finishBackward();
      opt.step();
      example::report(comm, rank, s, loss, example::msSince(t0));
    }
  } catch (const train::Error& e) {
    std::fprintf(stderr, "train_ddp rank %d: %s\n", rank, e.what());
    return 1;
  }
  cfxCommDestroy(comm);
  return 0;
}
