// Glue between the reference model and the pipeline executor: this rank's virtual stages of a
// model split at layer boundaries, as StageFunctions.
//
// Layers cache one forward at a time, so every micro-batch in flight gets its own chain of layer
// objects (built by the factory), all bound to the stage's one set of parameters and gradients:
// caches are per micro-batch, weights and gradient accumulation are shared. A forward run with
// keep = false (recompute) borrows a chain and returns it at once. Under a zero-bubble schedule a
// chain stays from the forward to the weight-gradient half (its layers queue their weight
// gradients in between).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "conflux/train/pipeline/executor.h"
#include "conflux/train/ref/model.h"

namespace conflux::train::ref {

class PipelineStages {
 public:
  // `bounds`: virtual stage k runs layers [bounds[k], bounds[k + 1]) (pipeline::partition).
  // `vstages`: the virtual stages this rank runs. `width`: columns of every activation passed
  // between layers (the transformer's dim, the MLP's hidden size). Parameters of the owned layers
  // start from Model::initLayer(seed), as Model::allocate does.
  PipelineStages(std::function<Model()> factory, std::vector<int> bounds, std::vector<int> vstages, int width,
                 uint64_t seed);

  // The step's micro-batches (all the same number of rows); the loss of each is its mean, and
  // backward scales it by `lossScale`, by default 1 / microbatches so the gradients are those of
  // the mean over all of them (an asynchronous schedule's update takes fewer: 1 / its batch).
  void setMicrobatches(std::vector<Batch> microbatches, float lossScale = 0.0f);
  // Every callback, the split backward included, and the parameter buffers for weight stashing;
  // `update` is the caller's to set.
  pipeline::StageFunctions functions();

  // Global indices of the layers this rank owns, with their parameters and gradients.
  const std::vector<int>& layers() const { return owned_; }
  float* params(int layer) { return params_.at(layer).data(); }
  float* grads(int layer) { return grads_.at(layer).data(); }
  size_t numParams(int layer) const { return params_.at(layer).size(); }
  void zeroGrad();

  // Most chains (micro-batches with cached activations, weight halves waiting included) alive at
  // once since construction.
  int peakLiveChains() const { return peakLive_; }

 private:
  struct Chain {
    Model model;
    int vstage;
  };
  Chain& acquire(int vstage);
  void release(Chain* chain);
  float forward(int vstage, int mb, const float* in, float* out, bool keep);
  void backward(int vstage, int mb, const float* dout, float* din, bool deferWeights);
  void backwardWeight(int vstage, int mb);

  std::function<Model()> factory_;
  std::vector<int> bounds_, vstages_, owned_;
  int width_;
  std::map<int, std::vector<float>> params_, grads_;
  std::vector<Batch> micro_;
  float lossScale_ = 1.0f;
  std::vector<std::unique_ptr<Chain>> chains_;
  std::vector<Chain*> free_;
  std::map<std::pair<int, int>, Chain*> live_;  // (mb, vstage) -> chain holding its caches
  std::map<std::pair<int, int>, Chain*> awaitingWeights_;  // input half done, weight half not
  int peakLive_ = 0;
};

}  // namespace conflux::train::ref
