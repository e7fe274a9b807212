#include <algorithm>
#include <stdexcept>

#include "conflux/train/ref/model.h"
#include "layers.h"

namespace conflux::train::ref {

uint64_t Rng::next() {
  uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float Rng::uniform(float a) {
  const float u = static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);  // [0, 1), 24 bits
  return (2.0f * u - 1.0f) * a;
}

size_t Layer::addTensor(const std::string& name, size_t count) {
  tensors_.push_back(TensorSpec{name, numParams_, count});
  numParams_ += count;
  return tensors_.back().offset;
}

void Layer::weightGradient(std::function<void()> work) {
  if (defer_) {
    pending_.push_back(std::move(work));
  } else {
    work();
  }
}

void Layer::runWeightGradients() {
  for (auto& work : pending_) work();
  pending_.clear();
}

Batch Batch::slice(int part, int parts) const {
  const int sequences = rows / seqLen;
  if (parts <= 0 || part < 0 || part >= parts || sequences % parts != 0) {
    throw std::invalid_argument("Batch::slice: " + std::to_string(sequences) + " sequences do not split into " +
                                std::to_string(parts) + " equal parts");
  }
  Batch b;
  b.seqLen = seqLen;
  b.inputs = inputs;
  b.rows = rows / parts;
  const size_t r0 = static_cast<size_t>(part) * static_cast<size_t>(b.rows), n = static_cast<size_t>(b.rows);
  if (!features.empty()) {
    const size_t k = static_cast<size_t>(inputs);
    b.features.assign(features.begin() + static_cast<std::ptrdiff_t>(r0 * k),
                      features.begin() + static_cast<std::ptrdiff_t>((r0 + n) * k));
  }
  if (!tokens.empty()) {
    b.tokens.assign(tokens.begin() + static_cast<std::ptrdiff_t>(r0), tokens.begin() + static_cast<std::ptrdiff_t>(r0 + n));
  }
  b.targets.assign(targets.begin() + static_cast<std::ptrdiff_t>(r0), targets.begin() + static_cast<std::ptrdiff_t>(r0 + n));
  return b;
}

Model::Model(std::vector<std::unique_ptr<Layer>> layers) : layers_(std::move(layers)) {}

size_t Model::numParams() const {
  size_t n = 0;
  for (const auto& l : layers_) n += l->numParams();
  return n;
}

void Model::initLayer(int i, float* w, uint64_t seed) const {
  Rng rng(seed * 1000003ull + static_cast<uint64_t>(i));
  layers_[static_cast<size_t>(i)]->init(w, rng);
}

void Model::allocate(uint64_t seed) {
  params_.clear();
  grads_.clear();
  for (int i = 0; i < layerCount(); ++i) {
    params_.emplace_back(layers_[static_cast<size_t>(i)]->numParams(), 0.0f);
    grads_.emplace_back(layers_[static_cast<size_t>(i)]->numParams(), 0.0f);
    initLayer(i, params_.back().data(), seed);
    layers_[static_cast<size_t>(i)]->bind(params_.back().data(), grads_.back().data());
  }
}

void Model::zeroGrad() {
  for (auto& g : grads_) std::fill(g.begin(), g.end(), 0.0f);
}

float Model::forward(const Batch& batch, Hooks* hooks) {
  Act cur, next;
  if (!batch.features.empty()) {
    cur.rows = batch.rows;
    cur.cols = batch.inputs;
    cur.v = batch.features;
  }
  for (int i = 0; i < layerCount(); ++i) {
    if (hooks != nullptr) hooks->beforeForward(i);
    layers_[static_cast<size_t>(i)]->forward(batch, cur, next);
    if (hooks != nullptr) hooks->afterForward(i);
    std::swap(cur, next);
  }
  return cur.v.empty() ? 0.0f : cur.v[0];
}

void Model::backward(const Batch& batch, float scale, Hooks* hooks) {
  Act d, next;
  d.resize(1, 1);
  d.v[0] = scale;
  for (int i = layerCount() - 1; i >= 0; --i) {
    if (hooks != nullptr) hooks->beforeBackward(i);
    layers_[static_cast<size_t>(i)]->backward(batch, d, next);
    if (hooks != nullptr) hooks->afterBackward(i);
    std::swap(d, next);
  }
}

Model makeMlp(const MlpConfig& c) {
  std::vector<std::unique_ptr<Layer>> layers;
  int in = c.inputs;
  for (int l = 0; l < c.layers; ++l) {
    layers.push_back(std::make_unique<Dense>("dense" + std::to_string(l), in, c.hidden, true));
    in = c.hidden;
  }
  layers.push_back(std::make_unique<Head>("classifier", in, c.classes, false));
  return Model(std::move(layers));
}

Model makeTransformer(const TransformerConfig& c) {
  if (c.heads <= 0 || c.dim % c.heads != 0) throw std::invalid_argument("makeTransformer: dim must divide into heads");
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Embedding>("embed", c.vocab, c.seqLen, c.dim));
  for (int b = 0; b < c.blocks; ++b) layers.push_back(std::make_unique<TransformerBlock>("block" + std::to_string(b), c));
  layers.push_back(std::make_unique<Head>("lm_head", c.dim, c.vocab, true));
  return Model(std::move(layers));
}

Batch makeClassBatch(const MlpConfig& c, int rows, uint64_t seed) {
  Rng proj(12345);  // the task: fixed across batches
  std::vector<float> P(static_cast<size_t>(c.inputs) * c.classes);
  for (float& p : P) p = proj.uniform(1.0f);
  Rng rng(seed);
  Batch b;
  b.rows = rows;
  b.inputs = c.inputs;
  b.features.resize(static_cast<size_t>(rows) * c.inputs);
  for (float& f : b.features) f = rng.uniform(1.0f);
  for (int r = 0; r < rows; ++r) {
    int best = 0;
    float bestScore = -1e30f;
    for (int k = 0; k < c.classes; ++k) {
      float s = 0;
      for (int i = 0; i < c.inputs; ++i) s += b.features[static_cast<size_t>(r) * c.inputs + i] * P[static_cast<size_t>(i) * c.classes + k];
      if (s > bestScore) {
        bestScore = s;
        best = k;
      }
    }
    b.targets.push_back(best);
  }
  return b;
}

Batch makeTokenBatch(const TransformerConfig& c, int sequences, uint64_t seed) {
  Rng rng(seed);
  Batch b;
  b.seqLen = c.seqLen;
  b.rows = sequences * c.seqLen;
  for (int s = 0; s < sequences; ++s) {
    const int a = 1 + 2 * rng.below(3), inc = 1 + rng.below(3);
    int t = rng.below(c.vocab);
    for (int i = 0; i < c.seqLen; ++i) {
      b.tokens.push_back(t);
      t = (a * t + inc) % c.vocab;
      b.targets.push_back(t);
    }
  }
  return b;
}

}  // namespace conflux::train::ref
