// What the two training examples share: the model, its synthetic data, and the per-step line.
#pragma once

#include <conflux/conflux.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "conflux/train/error.h"
#include "conflux/train/ref/model.h"

namespace example {

inline conflux::train::ref::TransformerConfig model() {
  conflux::train::ref::TransformerConfig c;
  c.vocab = 64;
  c.seqLen = 16;
  c.dim = 64;
  c.heads = 4;
  c.ffn = 256;
  c.blocks = 4;
  return c;
}

// This rank's share of step s's global batch (8 sequences per rank).
inline conflux::train::ref::Batch batch(int step, int rank, int nranks) {
  return conflux::train::ref::makeTokenBatch(model(), 8 * nranks, 1000 + static_cast<uint64_t>(step)).slice(rank, nranks);
}

// Averages the loss over ranks and prints it on rank 0.
inline void report(cfxComm_t comm, int rank, int step, float loss, double ms) {
  conflux::train::check(cfxAllReduce(&loss, &loss, 1, cfxFloat32, cfxAvg, comm, nullptr), "loss AllReduce", comm);
  if (rank == 0) std::printf("step %3d  loss %.4f  %.1f ms\n", step, static_cast<double>(loss), ms);
}

inline double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace example
