// Glue between the reference model and the training layer: what a framework integration does
// (PyTorch's autograd hooks), in a few lines per wrapper.
#pragma once

#include <cstdint>
#include <vector>

#include "conflux/train/ddp.h"
#include "conflux/train/fsdp.h"
#include "conflux/train/ref/model.h"

namespace conflux::train::ref {

// DDP: registers every tensor of the (allocated) model, finalizes, and marks a layer's tensors
// ready as soon as that layer's backward is done.
class DdpModel : public Hooks {
 public:
  DdpModel(Model& model, DistributedDataParallel& ddp);
  void afterBackward(int layer) override;

 private:
  DistributedDataParallel& ddp_;
  std::vector<std::vector<int>> ids_;  // layer -> parameter indices
};

// FSDP: one unit per layer, initialised from Model::initLayer(seed) on rank 0 and loaded sharded.
// forward/backward run the model with the gathers, frees and reductions around every layer.
class FsdpModel : public Hooks {
 public:
  FsdpModel(Model& model, FullyShardedDataParallel& fsdp, uint64_t seed);
  float forward(const Batch& batch);
  void backward(const Batch& batch, float scale = 1.0f);  // ends with fsdp.finishBackward()

  void beforeForward(int layer) override;
  void afterForward(int layer) override;
  void beforeBackward(int layer) override;
  void afterBackward(int layer) override;

 private:
  Model& model_;
  FullyShardedDataParallel& fsdp_;
};

}  // namespace conflux::train::ref
