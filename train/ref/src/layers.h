// The reference model's layers (one parameter unit each).
#pragma once

#include "conflux/train/ref/model.h"
#include "norms.h"

namespace conflux::train::ref {

// y = act(x W + b), W stored [in, out]; act is ReLU or identity.
class Dense : public Layer {
 public:
  Dense(std::string name, int in, int out, bool relu);
  void init(float* w, Rng& rng) const override;
  void forward(const Batch& batch, const Act& in, Act& out) override;
  void backward(const Batch& batch, const Act& dout, Act& din) override;

 private:
  int in_, out_;
  bool relu_;
  size_t W_, b_;
  Act x_, y_;  // the input and the output (ReLU's mask is y > 0)
};

// Optional layer norm, a linear map to `classes` logits, and the mean cross-entropy loss. Its
// output is the loss (1 x 1); backward starts from d(loss) = dout (1 x 1).
class Head : public Layer {
 public:
  Head(std::string name, int in, int classes, bool layerNorm);
  void init(float* w, Rng& rng) const override;
  void forward(const Batch& batch, const Act& in, Act& out) override;
  void backward(const Batch& batch, const Act& dout, Act& din) override;

 private:
  int in_, classes_;
  bool layerNorm_;
  size_t gamma_ = 0, beta_ = 0, W_, b_;
  LayerNormCache ln_;
  Act z_, probs_;
};

// Token embedding plus learned position embedding.
class Embedding : public Layer {
 public:
  Embedding(std::string name, int vocab, int seqLen, int dim);
  void init(float* w, Rng& rng) const override;
  void forward(const Batch& batch, const Act& in, Act& out) override;
  void backward(const Batch& batch, const Act& dout, Act& din) override;

 private:
  int vocab_, seqLen_, dim_;
  size_t tok_, pos_;
};

// Pre-norm transformer block: x + Attn(LN1(x)), then + MLP(LN2(.)) with GELU (tanh form).
// Attention is causal and multi-head, within each sequence of the batch.
class TransformerBlock : public Layer {
 public:
  TransformerBlock(std::string name, const TransformerConfig& c);
  void init(float* w, Rng& rng) const override;
  void forward(const Batch& batch, const Act& in, Act& out) override;
  void backward(const Batch& batch, const Act& dout, Act& din) override;

 private:
  int dim_, heads_, ffn_;
  static constexpr size_t kNoBias = ~size_t{0};
  size_t ln1g_, ln1b_, wq_, bq_, wk_, wv_, bv_, wo_, bo_, ln2g_, ln2b_, w1_, b1_, w2_, b2_;
  // Forward caches for backward.
  Act x_, a_, q_, k_, v_, o_, x1_, c_, h_, u_;
  std::vector<float> probs_;  // [sequence][head][T][T]
  LayerNormCache ln1_, ln2_;
};

}  // namespace conflux::train::ref
