// The reference model: a small fp32 model in plain C++ with hand-written backward, to test and
// demonstrate the training layer without a deep-learning framework.
//
// A Model is a sequence of layers; each layer is one unit of parameters (one flat buffer, made of
// named tensors) and is what DDP buckets and FSDP shards. Parameters and gradients live wherever
// the caller binds them (the model's own storage, or FSDP's gathered buffers); backward
// *accumulates* into the bound gradients, as frameworks do. Hooks run around every layer's
// forward and backward: that is where DDP marks gradients ready and FSDP gathers and frees.
//
// Models: makeMlp (dense + ReLU layers and a softmax classifier) and makeTransformer (token and
// position embedding, pre-norm blocks of causal multi-head attention and a GELU MLP, final layer
// norm and a language-model head). The loss is the mean cross-entropy over the batch's rows.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace conflux::train::ref {

// A batch: `rows` examples (MLP) or sequences x seqLen tokens (transformer).
struct Batch {
  int rows = 0;
  int seqLen = 1;
  int inputs = 0;               // MLP: features per row
  std::vector<float> features;  // MLP: rows x inputs
  std::vector<int> tokens;      // transformer: rows
  std::vector<int> targets;     // rows: class or next token
  // Part `part` of `parts` equal, contiguous slices (whole sequences). Throws if they are unequal.
  Batch slice(int part, int parts) const;
};

// Activations: rows x cols, row-major.
struct Act {
  int rows = 0, cols = 0;
  std::vector<float> v;
  void resize(int r, int c) {
    rows = r;
    cols = c;
    v.assign(static_cast<size_t>(r) * static_cast<size_t>(c), 0.0f);
  }
  float* row(int r) { return v.data() + static_cast<size_t>(r) * static_cast<size_t>(cols); }
  const float* row(int r) const { return v.data() + static_cast<size_t>(r) * static_cast<size_t>(cols); }
};

// splitmix64; uniform floats in [-a, a).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  float uniform(float a);
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t s_;
};

struct TensorSpec {
  std::string name;
  size_t offset, count;
};

class Layer {
 public:
  virtual ~Layer() = default;
  const std::string& name() const { return name_; }
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  size_t numParams() const { return numParams_; }
  // Writes initial parameters (numParams floats).
  virtual void init(float* w, Rng& rng) const = 0;
  // Where parameters are read and gradients accumulated (grads may be null for forward only).
  void bind(const float* w, float* g) {
    w_ = w;
    g_ = g;
  }
  virtual void forward(const Batch& batch, const Act& in, Act& out) = 0;
  virtual void backward(const Batch& batch, const Act& dout, Act& din) = 0;

  // Zero-bubble backward (pipeline's kBackwardInput / kBackwardWeight): while deferring, backward
  // computes the input gradient and queues the weight-gradient products, which
  // runWeightGradients() does later, into the gradients bound then. Layers that do not split
  // compute everything in backward (norm and bias gradients may also stay there).
  void deferWeightGradients(bool on) { defer_ = on; }
  void runWeightGradients();

 protected:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  size_t addTensor(const std::string& name, size_t count);
  // Runs `work` now, or queues it while deferring; it must capture what it reads by value or from
  // the layer's forward caches (which stay until the next forward).
  void weightGradient(std::function<void()> work);
  const float* w(size_t offset) const { return w_ + offset; }
  float* g(size_t offset) const { return g_ + offset; }

 private:
  std::string name_;
  std::vector<TensorSpec> tensors_;
  size_t numParams_ = 0;
  const float* w_ = nullptr;
  float* g_ = nullptr;
  bool defer_ = false;
  std::vector<std::function<void()>> pending_;
};

struct Hooks {
  virtual ~Hooks() = default;
  virtual void beforeForward(int layer) {}
  virtual void afterForward(int layer) {}
  virtual void beforeBackward(int layer) {}
  virtual void afterBackward(int layer) {}
};

class Model {
 public:
  explicit Model(std::vector<std::unique_ptr<Layer>> layers);
  int layerCount() const { return static_cast<int>(layers_.size()); }
  Layer& layer(int i) { return *layers_[static_cast<size_t>(i)]; }
  size_t numParams() const;

  // Deterministic initial parameters of layer i (the same on every rank for the same seed).
  void initLayer(int i, float* w, uint64_t seed) const;
  // Model-owned storage: one parameter and one gradient buffer per layer, bound and initialised.
  void allocate(uint64_t seed);
  float* params(int i) { return params_[static_cast<size_t>(i)].data(); }
  float* grads(int i) { return grads_[static_cast<size_t>(i)].data(); }
  void zeroGrad();

  // Mean loss over the batch's rows.
  float forward(const Batch& batch, Hooks* hooks = nullptr);
  // Gradients of scale x loss, accumulated into the bound gradient buffers.
  void backward(const Batch& batch, float scale = 1.0f, Hooks* hooks = nullptr);

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::vector<float>> params_, grads_;
};

struct MlpConfig {
  int inputs = 16, hidden = 32, layers = 2, classes = 8;
};
struct TransformerConfig {
  int vocab = 32, seqLen = 8, dim = 16, heads = 2, ffn = 32, blocks = 2;
};

Model makeMlp(const MlpConfig& c);
Model makeTransformer(const TransformerConfig& c);

// Synthetic data. Classification: labels are the argmax of a fixed random projection of the
// features. Language model: each sequence follows t' = (a t + b) mod vocab with per-sequence
// a, b from a small set; targets are the next tokens.
Batch makeClassBatch(const MlpConfig& c, int rows, uint64_t seed);
Batch makeTokenBatch(const TransformerConfig& c, int sequences, uint64_t seed);

}  // namespace conflux::train::ref
