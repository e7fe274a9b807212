#include "conflux/train/ref/pipeline_stages.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace conflux::train::ref {

PipelineStages::PipelineStages(std::function<Model()> factory, std::vector<int> bounds, std::vector<int> vstages,
                               int width, uint64_t seed)
    : factory_(std::move(factory)), bounds_(std::move(bounds)), vstages_(std::move(vstages)), width_(width) {
  Model probe = factory_();
  const int nv = static_cast<int>(bounds_.size()) - 1;
  if (nv < 1 || bounds_.front() != 0 || bounds_.back() != probe.layerCount() || width_ < 1) {
    throw std::invalid_argument("PipelineStages: bounds must run from 0 to the layer count and width be positive");
  }
  for (int vs : vstages_) {
    if (vs < 0 || vs >= nv) throw std::invalid_argument("PipelineStages: virtual stage " + std::to_string(vs) + " out of range");
    for (int l = bounds_[static_cast<size_t>(vs)]; l < bounds_[static_cast<size_t>(vs) + 1]; ++l) {
      owned_.push_back(l);
      auto& w = params_[l];
      w.assign(probe.layer(l).numParams(), 0.0f);
      probe.initLayer(l, w.data(), seed);
      grads_[l].assign(w.size(), 0.0f);
    }
  }
}

void PipelineStages::setMicrobatches(std::vector<Batch> microbatches, float lossScale) {
  micro_ = std::move(microbatches);
  lossScale_ = lossScale != 0.0f ? lossScale : 1.0f / static_cast<float>(std::max<size_t>(micro_.size(), 1));
}

void PipelineStages::zeroGrad() {
  for (auto& [l, g] : grads_) std::fill(g.begin(), g.end(), 0.0f);
}

PipelineStages::Chain& PipelineStages::acquire(int vstage) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if ((*it)->vstage == vstage) {
      Chain* c = *it;
      free_.erase(it);
      return *c;
    }
  }
  chains_.push_back(std::make_unique<Chain>(Chain{factory_(), vstage}));
  Chain& c = *chains_.back();
  for (int l = bounds_[static_cast<size_t>(vstage)]; l < bounds_[static_cast<size_t>(vstage) + 1]; ++l) {
    c.model.layer(l).bind(params_.at(l).data(), grads_.at(l).data());
  }
  return c;
}

void PipelineStages::release(Chain* chain) { free_.push_back(chain); }

float PipelineStages::forward(int vstage, int mb, const float* in, float* out, bool keep) {
  const Batch& b = micro_.at(static_cast<size_t>(mb));
  Chain& c = acquire(vstage);
  Act cur, next;
  if (in != nullptr) {
    cur.resize(b.rows, width_);
    std::memcpy(cur.v.data(), in, cur.v.size() * sizeof(float));
  } else if (!b.features.empty()) {
    cur.rows = b.rows;
    cur.cols = b.inputs;
    cur.v = b.features;
  }
  for (int l = bounds_[static_cast<size_t>(vstage)]; l < bounds_[static_cast<size_t>(vstage) + 1]; ++l) {
    c.model.layer(l).forward(b, cur, next);
    std::swap(cur, next);
  }
  if (out != nullptr) std::memcpy(out, cur.v.data(), cur.v.size() * sizeof(float));
  if (keep) {
    auto& slot = live_[{mb, vstage}];
    if (slot != nullptr) release(slot);  // a repeated forward replaces the earlier caches
    slot = &c;
    peakLive_ = std::max(peakLive_, static_cast<int>(live_.size() + awaitingWeights_.size()));
  } else {
    peakLive_ = std::max(peakLive_, static_cast<int>(live_.size() + awaitingWeights_.size()) + 1);
    release(&c);
  }
  const bool last = bounds_[static_cast<size_t>(vstage) + 1] == bounds_.back();
  return last && !cur.v.empty() ? cur.v[0] : 0.0f;
}

void PipelineStages::backward(int vstage, int mb, const float* dout, float* din, bool deferWeights) {
  const Batch& b = micro_.at(static_cast<size_t>(mb));
  auto it = live_.find({mb, vstage});
  if (it == live_.end()) {
    throw std::logic_error("PipelineStages: backward of mb " + std::to_string(mb) + ", vs " + std::to_string(vstage) +
                           " without a kept forward");
  }
  Chain& c = *it->second;
  live_.erase(it);
  Act d, next;
  if (dout != nullptr) {
    d.resize(b.rows, width_);
    std::memcpy(d.v.data(), dout, d.v.size() * sizeof(float));
  } else {
    d.resize(1, 1);
    d.v[0] = lossScale_;
  }
  for (int l = bounds_[static_cast<size_t>(vstage) + 1] - 1; l >= bounds_[static_cast<size_t>(vstage)]; --l) {
    c.model.layer(l).deferWeightGradients(deferWeights);
    c.model.layer(l).backward(b, d, next);
    c.model.layer(l).deferWeightGradients(false);
    std::swap(d, next);
  }
  if (din != nullptr) std::memcpy(din, d.v.data(), d.v.size() * sizeof(float));
  if (deferWeights) {
    awaitingWeights_[{mb, vstage}] = &c;
  } else {
    release(&c);
  }
}

void PipelineStages::backwardWeight(int vstage, int mb) {
  auto it = awaitingWeights_.find({mb, vstage});
  if (it == awaitingWeights_.end()) {
    throw std::logic_error("PipelineStages: weight gradient of mb " + std::to_string(mb) + ", vs " + std::to_string(vstage) +
                           " without its input-gradient half");
  }
  Chain& c = *it->second;
  awaitingWeights_.erase(it);
  for (int l = bounds_[static_cast<size_t>(vstage)]; l < bounds_[static_cast<size_t>(vstage) + 1]; ++l) {
    c.model.layer(l).runWeightGradients();
  }
  release(&c);
}

pipeline::StageFunctions PipelineStages::functions() {
  pipeline::StageFunctions f;
  f.activationSize = [this](int) {
    return static_cast<size_t>(micro_.at(0).rows) * static_cast<size_t>(width_);
  };
  f.forward = [this](int vs, int mb, const float* in, float* out, bool keep) { return forward(vs, mb, in, out, keep); };
  f.backward = [this](int vs, int mb, const float* dout, float* din) { backward(vs, mb, dout, din, false); };
  f.backwardInput = [this](int vs, int mb, const float* dout, float* din) { backward(vs, mb, dout, din, true); };
  f.backwardWeight = [this](int vs, int mb) { backwardWeight(vs, mb); };
  for (int l : owned_) f.parameters.push_back({params_.at(l).data(), params_.at(l).size()});
  return f;
}

}  // namespace conflux::train::ref
