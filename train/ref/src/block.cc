// The transformer block: forward keeps what backward needs; backward walks the same graph in
// reverse, accumulating parameter gradients.
#include <cmath>

#include "block_ops.h"
#include "layers.h"

namespace conflux::train::ref {

TransformerBlock::TransformerBlock(std::string name, const TransformerConfig& c)
    : Layer(std::move(name)), dim_(c.dim), heads_(c.heads), ffn_(c.ffn) {
  const size_t d = static_cast<size_t>(dim_), f = static_cast<size_t>(ffn_);
  ln1g_ = addTensor("ln1.weight", d);
  ln1b_ = addTensor("ln1.bias", d);
  wq_ = addTensor("attn.q.weight", d * d);
  bq_ = addTensor("attn.q.bias", d);
  // No key bias: softmax is shift-invariant per query, so its gradient is identically zero (and
  // Adam would amplify rounding noise in it into full-size steps).
  wk_ = addTensor("attn.k.weight", d * d);
  wv_ = addTensor("attn.v.weight", d * d);
  bv_ = addTensor("attn.v.bias", d);
  wo_ = addTensor("attn.out.weight", d * d);
  bo_ = addTensor("attn.out.bias", d);
  ln2g_ = addTensor("ln2.weight", d);
  ln2b_ = addTensor("ln2.bias", d);
  w1_ = addTensor("mlp.fc1.weight", d * f);
  b1_ = addTensor("mlp.fc1.bias", f);
  w2_ = addTensor("mlp.fc2.weight", f * d);
  b2_ = addTensor("mlp.fc2.bias", d);
}

void TransformerBlock::init(float* w, Rng& rng) const {
  for (const TensorSpec& t : tensors()) {
    float a = 0.1f;
    bool norm = t.name.find("ln") == 0;
    bool weight = t.name.find(".weight") != std::string::npos;
    if (weight && !norm) a = 1.0f / std::sqrt(static_cast<float>(t.name == "mlp.fc2.weight" ? ffn_ : dim_));
    for (size_t i = 0; i < t.count; ++i) w[t.offset + i] = (norm && weight ? 1.0f : 0.0f) + rng.uniform(a);
  }
}

void TransformerBlock::forward(const Batch& batch, const Act& in, Act& out) {
  x_ = in;
  layerNormForward(x_, w(ln1g_), w(ln1b_), a_, ln1_);
  linear(a_, w(wq_), w(bq_), dim_, q_);
  linear(a_, w(wk_), nullptr, dim_, k_);
  linear(a_, w(wv_), w(bv_), dim_, v_);
  causalAttentionForward(q_, k_, v_, batch.seqLen, heads_, o_, probs_);
  Act y;
  linear(o_, w(wo_), w(bo_), dim_, y);
  x1_ = x_;
  for (size_t i = 0; i < y.v.size(); ++i) x1_.v[i] += y.v[i];
  layerNormForward(x1_, w(ln2g_), w(ln2b_), c_, ln2_);
  linear(c_, w(w1_), w(b1_), ffn_, h_);
  u_ = h_;
  for (float& e : u_.v) e = gelu(e);
  Act z;
  linear(u_, w(w2_), w(b2_), dim_, z);
  out = x1_;
  for (size_t i = 0; i < z.v.size(); ++i) out.v[i] += z.v[i];
}

void TransformerBlock::backward(const Batch& batch, const Act& dout, Act& din) {
  // The six projections' weight gradients, from the cached input x and a copy of dy (deferred
  // under a zero-bubble schedule).
  auto weights = [this](const Act& x, const Act& dy, size_t W, size_t b) {
    weightGradient([this, &x, dy, W, b] { linearWeightGrad(x, dy, g(W), b == kNoBias ? nullptr : g(b)); });
  };
  // MLP branch: out = x1 + fc2(gelu(fc1(LN2(x1)))).
  Act du, dc, dx1 = dout;
  weights(u_, dout, w2_, b2_);
  linearInputGrad(dout, w(w2_), ffn_, du, false);
  for (size_t i = 0; i < du.v.size(); ++i) du.v[i] *= geluGrad(h_.v[i]);
  weights(c_, du, w1_, b1_);
  linearInputGrad(du, w(w1_), dim_, dc, false);
  layerNormBackward(dc, w(ln2g_), ln2_, dx1, true, g(ln2g_), g(ln2b_));
  // Attention branch: x1 = x + out_proj(attn(q, k, v)), q, k, v = proj(LN1(x)).
  Act dO, dQ, dK, dV, da;
  weights(o_, dx1, wo_, bo_);
  linearInputGrad(dx1, w(wo_), dim_, dO, false);
  causalAttentionBackward(q_, k_, v_, probs_, batch.seqLen, heads_, dO, dQ, dK, dV);
  weights(a_, dQ, wq_, bq_);
  weights(a_, dK, wk_, kNoBias);
  weights(a_, dV, wv_, bv_);
  linearInputGrad(dQ, w(wq_), dim_, da, false);
  linearInputGrad(dK, w(wk_), dim_, da, true);
  linearInputGrad(dV, w(wv_), dim_, da, true);
  din = dx1;
  layerNormBackward(da, w(ln1g_), ln1_, din, true, g(ln1g_), g(ln1b_));
}

}  // namespace conflux::train::ref
