#include "conflux/train/ref/adapters.h"

namespace conflux::train::ref {

DdpModel::DdpModel(Model& model, DistributedDataParallel& ddp) : ddp_(ddp) {
  for (int i = 0; i < model.layerCount(); ++i) {
    Layer& l = model.layer(i);
    ids_.emplace_back();
    for (const TensorSpec& t : l.tensors()) {
      ids_.back().push_back(ddp.addParameter(l.name() + "." + t.name, model.params(i) + t.offset,
                                             model.grads(i) + t.offset, t.count, cfxFloat32));
    }
  }
  ddp.finalize();
}

void DdpModel::afterBackward(int layer) {
  for (int id : ids_[static_cast<size_t>(layer)]) ddp_.markReady(id);
}

FsdpModel::FsdpModel(Model& model, FullyShardedDataParallel& fsdp, uint64_t seed) : model_(model), fsdp_(fsdp) {
  for (int i = 0; i < model.layerCount(); ++i) fsdp.addUnit(model.layer(i).name(), model.layer(i).numParams());
  fsdp.finalize();
  const int root = 0;  // every rank computes the same init; rank 0's is the one loaded
  std::vector<float> full;
  for (int i = 0; i < model.layerCount(); ++i) {
    full.assign(model.layer(i).numParams(), 0.0f);
    model.initLayer(i, full.data(), seed);
    fsdp.loadFull(i, full.data(), root);
  }
}

float FsdpModel::forward(const Batch& batch) {
  fsdp_.beginForward();
  return model_.forward(batch, this);
}

void FsdpModel::backward(const Batch& batch, float scale) {
  fsdp_.beginBackward();
  model_.backward(batch, scale, this);
  fsdp_.finishBackward();
}

void FsdpModel::beforeForward(int layer) {
  model_.layer(layer).bind(static_cast<const float*>(fsdp_.unshard(layer)), nullptr);
}

void FsdpModel::afterForward(int layer) { fsdp_.reshard(layer); }

void FsdpModel::beforeBackward(int layer) {
  const float* w = static_cast<const float*>(fsdp_.unshard(layer));
  model_.layer(layer).bind(w, static_cast<float*>(fsdp_.grad(layer)));
}

void FsdpModel::afterBackward(int layer) {
  fsdp_.reduceGradients(layer);
  fsdp_.reshard(layer);
}

}  // namespace conflux::train::ref
