#include <cmath>

#include "layers.h"
#include "linalg.h"

namespace conflux::train::ref {

Dense::Dense(std::string name, int in, int out, bool relu) : Layer(std::move(name)), in_(in), out_(out), relu_(relu) {
  W_ = addTensor("weight", static_cast<size_t>(in) * out);
  b_ = addTensor("bias", static_cast<size_t>(out));
}

void Dense::init(float* w, Rng& rng) const {
  const float a = 1.0f / std::sqrt(static_cast<float>(in_));
  for (size_t i = 0; i < static_cast<size_t>(in_) * out_; ++i) w[W_ + i] = rng.uniform(a);
  for (int j = 0; j < out_; ++j) w[b_ + static_cast<size_t>(j)] = rng.uniform(0.1f);
}

void Dense::forward(const Batch&, const Act& in, Act& out) {
  x_ = in;
  y_.resize(in.rows, out_);
  matmul(in.v.data(), w(W_), y_.v.data(), in.rows, in_, out_, false);
  addBias(y_.v.data(), w(b_), in.rows, out_);
  if (relu_) {
    for (float& y : y_.v) y = y > 0.0f ? y : 0.0f;
  }
  out = y_;
}

void Dense::backward(const Batch&, const Act& dout, Act& din) {
  Act dy = dout;
  if (relu_) {
    for (size_t i = 0; i < dy.v.size(); ++i) {
      if (!(y_.v[i] > 0.0f)) dy.v[i] = 0.0f;
    }
  }
  weightGradient([this, dy] {
    matmulTnAcc(x_.v.data(), dy.v.data(), g(W_), dy.rows, in_, out_);
    biasGrad(dy.v.data(), g(b_), dy.rows, out_);
  });
  din.resize(dy.rows, in_);
  matmulNt(dy.v.data(), w(W_), din.v.data(), dy.rows, out_, in_, false);
}

Head::Head(std::string name, int in, int classes, bool layerNorm)
    : Layer(std::move(name)), in_(in), classes_(classes), layerNorm_(layerNorm) {
  if (layerNorm_) {
    gamma_ = addTensor("norm.weight", static_cast<size_t>(in));
    beta_ = addTensor("norm.bias", static_cast<size_t>(in));
  }
  W_ = addTensor("weight", static_cast<size_t>(in) * classes);
  b_ = addTensor("bias", static_cast<size_t>(classes));
}

void Head::init(float* w, Rng& rng) const {
  if (layerNorm_) {
    for (int j = 0; j < in_; ++j) w[gamma_ + static_cast<size_t>(j)] = 1.0f + rng.uniform(0.1f);
    for (int j = 0; j < in_; ++j) w[beta_ + static_cast<size_t>(j)] = rng.uniform(0.1f);
  }
  const float a = 1.0f / std::sqrt(static_cast<float>(in_));
  for (size_t i = 0; i < static_cast<size_t>(in_) * classes_; ++i) w[W_ + i] = rng.uniform(a);
  for (int j = 0; j < classes_; ++j) w[b_ + static_cast<size_t>(j)] = rng.uniform(0.1f);
}

void Head::forward(const Batch& batch, const Act& in, Act& out) {
  if (layerNorm_) {
    layerNormForward(in, w(gamma_), w(beta_), z_, ln_);
  } else {
    z_ = in;
  }
  Act logits;
  logits.resize(in.rows, classes_);
  matmul(z_.v.data(), w(W_), logits.v.data(), in.rows, in_, classes_, false);
  addBias(logits.v.data(), w(b_), in.rows, classes_);
  float loss = softmaxCrossEntropy(logits, batch.targets, probs_);
  out.resize(1, 1);
  out.v[0] = loss;
}

void Head::backward(const Batch& batch, const Act& dout, Act& din) {
  Act dlogits;
  softmaxCrossEntropyBackward(probs_, batch.targets, dout.v[0], dlogits);
  const int rows = dlogits.rows;
  weightGradient([this, dlogits] {
    matmulTnAcc(z_.v.data(), dlogits.v.data(), g(W_), dlogits.rows, in_, classes_);
    biasGrad(dlogits.v.data(), g(b_), dlogits.rows, classes_);
  });
  Act dz;
  dz.resize(rows, in_);
  matmulNt(dlogits.v.data(), w(W_), dz.v.data(), rows, classes_, in_, false);
  if (layerNorm_) {
    layerNormBackward(dz, w(gamma_), ln_, din, false, g(gamma_), g(beta_));
  } else {
    din = std::move(dz);
  }
}

Embedding::Embedding(std::string name, int vocab, int seqLen, int dim)
    : Layer(std::move(name)), vocab_(vocab), seqLen_(seqLen), dim_(dim) {
  tok_ = addTensor("token", static_cast<size_t>(vocab) * dim);
  pos_ = addTensor("position", static_cast<size_t>(seqLen) * dim);
}

void Embedding::init(float* w, Rng& rng) const {
  for (size_t i = 0; i < static_cast<size_t>(vocab_) * dim_; ++i) w[tok_ + i] = rng.uniform(1.0f);
  for (size_t i = 0; i < static_cast<size_t>(seqLen_) * dim_; ++i) w[pos_ + i] = rng.uniform(0.2f);
}

void Embedding::forward(const Batch& batch, const Act&, Act& out) {
  out.resize(batch.rows, dim_);
  for (int r = 0; r < batch.rows; ++r) {
    const float* t = w(tok_) + static_cast<size_t>(batch.tokens[static_cast<size_t>(r)]) * dim_;
    const float* p = w(pos_) + static_cast<size_t>(r % seqLen_) * dim_;
    float* o = out.row(r);
    for (int j = 0; j < dim_; ++j) o[j] = t[j] + p[j];
  }
}

void Embedding::backward(const Batch& batch, const Act& dout, Act& din) {
  // Only weight gradients: all of it is deferred under a zero-bubble schedule.
  weightGradient([this, tokens = batch.tokens, dout] {
    for (int r = 0; r < dout.rows; ++r) {
      float* gt = g(tok_) + static_cast<size_t>(tokens[static_cast<size_t>(r)]) * dim_;
      float* gp = g(pos_) + static_cast<size_t>(r % seqLen_) * dim_;
      const float* d = dout.row(r);
      for (int j = 0; j < dim_; ++j) {
        gt[j] += d[j];
        gp[j] += d[j];
      }
    }
  });
  din = Act{};
}

}  // namespace conflux::train::ref
