// Splitting a sequence of layers into pipeline stages, and the communicators of pipeline x data
// parallelism.
#pragma once

#include <conflux/conflux.h>

#include <vector>

#include "conflux/train/error.h"

namespace conflux::train::pipeline {

// Contiguous split of layers with costs `costs` into `parts` non-empty parts minimising the
// largest part's cost (ties: the earliest boundaries). Returns parts + 1 boundaries: part k is
// layers [bounds[k], bounds[k + 1]). For interleaved schedules pass parts = p * v: part k is
// virtual stage k. Throws cfxInvalidArgument for fewer layers than parts or a negative cost.
CFX_TRAIN_API std::vector<int> partition(const std::vector<double>& costs, int parts);

// Pipeline x data parallelism over `world` (size stages x replicas, rank = replica * stages +
// stage): `pipeline` joins the ranks of one replica (rank = stage), `replicas` joins the ranks
// holding the same stage (rank = replica), for DDP across pipelines. Both come from cfxCommSplit.
struct ParallelComms {
  cfxComm_t pipeline = nullptr;
  cfxComm_t replicas = nullptr;
  int stage = 0, replica = 0;
};
CFX_TRAIN_API ParallelComms splitPipelineData(cfxComm_t world, int stages);

}  // namespace conflux::train::pipeline
