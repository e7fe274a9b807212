// Megatron's column- and row-parallel linear layers and the tensor-parallel transformer block
// (tensor_parallel.h) on the reference model's kernels.
#include <cstring>
#include <vector>

#include "block_ops.h"
#include "conflux/train/ref/tensor_parallel.h"
#include "layers.h"
#include "linalg.h"

namespace conflux::train::ref {

namespace {
int checkedPart(int total, int parts, const char* what) {
  if (parts < 1 || total % parts != 0) {
    throw Error(cfxInvalidArgument, std::string("tensor parallelism: ") + what + " (" + std::to_string(total) +
                                        ") does not divide by the group's " + std::to_string(parts) + " ranks");
  }
  return total / parts;
}
}  // namespace

ColumnParallelLinear::ColumnParallelLinear(const tp::Group& group, int in, int out)
    : group_(group), in_(in), localOut_(checkedPart(out, group.size(), "a column-parallel layer's outputs")) {}

void ColumnParallelLinear::forward(const Act& x, int rows, const float* W, const float* b, Act& y) {
  x_.resize(rows, in_);
  group_.enterForward(x.v.data(), x_.v.data(), rows, in_);
  linear(x_, W, b, localOut_, y);
}

void ColumnParallelLinear::backward(const Act& dy, const float* W, float* dW, float* db, Act& dx) {
  Act partial;
  linearBackward(x_, dy, W, dW, db, partial, false);
  dx.resize(group_.localRows(x_.rows), in_);
  group_.enterBackward(partial.v.data(), dx.v.data(), x_.rows, in_);
}

RowParallelLinear::RowParallelLinear(const tp::Group& group, int in, int out)
    : group_(group), localIn_(checkedPart(in, group.size(), "a row-parallel layer's inputs")), out_(out) {}

void RowParallelLinear::forward(const Act& x, const float* W, const float* b, Act& y) {
  x_ = x;
  Act partial;
  linear(x, W, nullptr, out_, partial);
  y.resize(group_.localRows(x.rows), out_);
  group_.exitForward(partial.v.data(), y.v.data(), x.rows, out_);
  if (b != nullptr) addBias(y.v.data(), b, y.rows, out_);
}

void RowParallelLinear::backward(const Act& dy, const float* W, float* dW, float* db, Act& dx) {
  Act full;
  full.resize(x_.rows, out_);
  group_.exitBackward(dy.v.data(), full.v.data(), x_.rows, out_);
  if (db != nullptr) {
    std::vector<float> inc(static_cast<size_t>(out_), 0.0f);
    biasGrad(dy.v.data(), inc.data(), dy.rows, out_);
    group_.addReplicatedGrad(db, inc.data(), inc.size());
  }
  linearBackward(x_, full, W, dW, nullptr, dx, false);
}

namespace {

// The order of the block's tensors, shared by the layer and the sharding below.
struct BlockSizes {
  size_t d, dl, fl;
  BlockSizes(const TransformerConfig& c, int n)
      : d(static_cast<size_t>(c.dim)),
        dl(static_cast<size_t>(c.dim / n)),
        fl(static_cast<size_t>(checkedPart(c.ffn, n, "the MLP's hidden features"))) {
    checkedPart(c.heads, n, "the attention heads");
  }
};

class TensorParallelBlock final : public Layer {
 public:
  TensorParallelBlock(std::string name, const TransformerConfig& c, const tp::Group& group)
      : Layer(std::move(name)),
        c_(c),
        group_(group),
        s_(c, group.size()),
        heads_(c.heads / group.size()),
        qkv_(group, c.dim, 3 * c.dim),
        out_(group, c.dim, c.dim),
        fc1_(group, c.dim, c.ffn),
        fc2_(group, c.ffn, c.dim) {
    const size_t d = s_.d, dl = s_.dl, fl = s_.fl;
    ln1g_ = addTensor("ln1.weight", d);
    ln1b_ = addTensor("ln1.bias", d);
    qkvW_ = addTensor("attn.qkv.weight", d * 3 * dl);
    qkvB_ = addTensor("attn.qkv.bias", 3 * dl);
    wo_ = addTensor("attn.out.weight", dl * d);
    bo_ = addTensor("attn.out.bias", d);
    ln2g_ = addTensor("ln2.weight", d);
    ln2b_ = addTensor("ln2.bias", d);
    w1_ = addTensor("mlp.fc1.weight", d * fl);
    b1_ = addTensor("mlp.fc1.bias", fl);
    w2_ = addTensor("mlp.fc2.weight", fl * d);
    b2_ = addTensor("mlp.fc2.bias", d);
  }

  // The one-process block's draws, then this rank's slice.
  void init(float* w, Rng& rng) const override {
    TransformerBlock whole("whole", c_);
    std::vector<float> full(whole.numParams());
    whole.init(full.data(), rng);
    shardTransformerBlock(c_, group_.size(), group_.rank(), full.data(), w);
  }

  void forward(const Batch& batch, const Act& in, Act& out) override {
    const int rows = batch.rows, dl = static_cast<int>(s_.dl);
    x_ = in;
    layerNormForward(x_, w(ln1g_), w(ln1b_), a_, ln1_);
    Act qkv;
    qkv_.forward(a_, rows, w(qkvW_), w(qkvB_), qkv);
    q_.resize(rows, dl);
    k_.resize(rows, dl);
    v_.resize(rows, dl);
    for (int r = 0; r < rows; ++r) {
      std::memcpy(q_.row(r), qkv.row(r), dl * sizeof(float));
      std::memcpy(k_.row(r), qkv.row(r) + dl, dl * sizeof(float));
      std::memcpy(v_.row(r), qkv.row(r) + 2 * dl, dl * sizeof(float));
    }
    causalAttentionForward(q_, k_, v_, batch.seqLen, heads_, o_, probs_);
    Act y;
    out_.forward(o_, w(wo_), w(bo_), y);
    x1_ = x_;
    for (size_t i = 0; i < y.v.size(); ++i) x1_.v[i] += y.v[i];
    layerNormForward(x1_, w(ln2g_), w(ln2b_), c_act_, ln2_);
    fc1_.forward(c_act_, rows, w(w1_), w(b1_), h_);
    u_ = h_;
    for (float& e : u_.v) e = gelu(e);
    Act z;
    fc2_.forward(u_, w(w2_), w(b2_), z);
    out = x1_;
    for (size_t i = 0; i < z.v.size(); ++i) out.v[i] += z.v[i];
  }

  void backward(const Batch& batch, const Act& dout, Act& din) override {
    const int rows = batch.rows, dl = static_cast<int>(s_.dl);
    // MLP: out = x1 + fc2(gelu(fc1(LN2(x1)))).
    Act du, dc, dx1 = dout;
    fc2_.backward(dout, w(w2_), g(w2_), g(b2_), du);
    for (size_t i = 0; i < du.v.size(); ++i) du.v[i] *= geluGrad(h_.v[i]);
    fc1_.backward(du, w(w1_), g(w1_), g(b1_), dc);
    layerNormGrads(dc, ln2g_, ln2b_, ln2_, dx1);
    // Attention: x1 = x + out(attn(qkv(LN1(x)))).
    Act dO, dQ, dK, dV, da;
    out_.backward(dx1, w(wo_), g(wo_), g(bo_), dO);
    causalAttentionBackward(q_, k_, v_, probs_, batch.seqLen, heads_, dO, dQ, dK, dV);
    Act dqkv;
    dqkv.resize(rows, 3 * dl);
    for (int r = 0; r < rows; ++r) {
      std::memcpy(dqkv.row(r), dQ.row(r), dl * sizeof(float));
      std::memcpy(dqkv.row(r) + dl, dK.row(r), dl * sizeof(float));
      std::memcpy(dqkv.row(r) + 2 * dl, dV.row(r), dl * sizeof(float));
    }
    qkv_.backward(dqkv, w(qkvW_), g(qkvW_), g(qkvB_), da);
    // The one-process block has no key bias (its gradient is zero up to rounding): keep it zero.
    std::memset(g(qkvB_) + dl, 0, dl * sizeof(float));
    din = dx1;
    layerNormGrads(da, ln1g_, ln1b_, ln1_, din);
  }

 private:
  // dx += LN backward of dy; the norm's parameters are replicated, so their gradients go through
  // the group (summed over it with sequence parallelism).
  void layerNormGrads(const Act& dy, size_t gamma, size_t beta, const LayerNormCache& cache, Act& dx) {
    std::vector<float> dg(s_.d, 0.0f), db(s_.d, 0.0f);
    layerNormBackward(dy, w(gamma), cache, dx, true, dg.data(), db.data());
    group_.addReplicatedGrad(g(gamma), dg.data(), s_.d);
    group_.addReplicatedGrad(g(beta), db.data(), s_.d);
  }

  TransformerConfig c_;
  const tp::Group& group_;
  BlockSizes s_;
  int heads_;
  ColumnParallelLinear qkv_;
  RowParallelLinear out_;
  ColumnParallelLinear fc1_;
  RowParallelLinear fc2_;
  size_t ln1g_, ln1b_, qkvW_, qkvB_, wo_, bo_, ln2g_, ln2b_, w1_, b1_, w2_, b2_;
  Act x_, a_, q_, k_, v_, o_, x1_, c_act_, h_, u_;
  std::vector<float> probs_;
  LayerNormCache ln1_, ln2_;
};

}  // namespace

std::unique_ptr<Layer> makeTensorParallelBlock(std::string name, const TransformerConfig& c, const tp::Group& group) {
  return std::make_unique<TensorParallelBlock>(std::move(name), c, group);
}

Model makeTensorParallelTransformer(const TransformerConfig& c, const tp::Group& group) {
  if (group.sequenceParallel()) {
    throw Error(cfxInvalidArgument, "makeTensorParallelTransformer: the embedding and the head hold whole rows; "
                                    "use a group without sequence parallelism");
  }
  if (c.heads <= 0 || c.dim % c.heads != 0) throw Error(cfxInvalidArgument, "makeTensorParallelTransformer: dim must divide into heads");
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Embedding>("embed", c.vocab, c.seqLen, c.dim));
  for (int b = 0; b < c.blocks; ++b) layers.push_back(makeTensorParallelBlock("block" + std::to_string(b), c, group));
  layers.push_back(std::make_unique<Head>("lm_head", c.dim, c.vocab, true));
  return Model(std::move(layers));
}

void shardTransformerBlock(const TransformerConfig& c, int groupSize, int groupRank, const float* full, float* local) {
  const BlockSizes s(c, groupSize);
  const size_t d = s.d, dl = s.dl, fl = s.fl, f = static_cast<size_t>(c.ffn), r = static_cast<size_t>(groupRank);
  TransformerBlock whole("whole", c);
  auto at = [&](const char* name) {
    for (const TensorSpec& t : whole.tensors()) {
      if (t.name == name) return full + t.offset;
    }
    throw Error(cfxInternalError, std::string("no tensor ") + name + " in the transformer block");
  };
  float* out = local;
  auto put = [&](const float* src, size_t n) {
    std::memcpy(out, src, n * sizeof(float));
    out += n;
  };
  auto zeros = [&](size_t n) {
    std::memset(out, 0, n * sizeof(float));
    out += n;
  };
  put(at("ln1.weight"), d);
  put(at("ln1.bias"), d);
  for (size_t i = 0; i < d; ++i) {  // [d, 3 dl]: this rank's columns of Q, K and V, row by row
    put(at("attn.q.weight") + i * d + r * dl, dl);
    put(at("attn.k.weight") + i * d + r * dl, dl);
    put(at("attn.v.weight") + i * d + r * dl, dl);
  }
  put(at("attn.q.bias") + r * dl, dl);
  zeros(dl);  // no key bias
  put(at("attn.v.bias") + r * dl, dl);
  put(at("attn.out.weight") + r * dl * d, dl * d);  // its rows
  put(at("attn.out.bias"), d);
  put(at("ln2.weight"), d);
  put(at("ln2.bias"), d);
  for (size_t i = 0; i < d; ++i) put(at("mlp.fc1.weight") + i * f + r * fl, fl);
  put(at("mlp.fc1.bias") + r * fl, fl);
  put(at("mlp.fc2.weight") + r * fl * d, fl * d);
  put(at("mlp.fc2.bias"), d);
}

}  // namespace conflux::train::ref
