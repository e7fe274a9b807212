// Optimizers on flat fp32 buffers the caller owns: whole parameters under DDP, the local shards
// under FSDP. Each group is (parameters, gradients, count); the optimizer owns its state, one or
// more buffers shaped like each group (so FSDP's gatherFull can assemble them for saving).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "conflux/train/error.h"

namespace conflux::train {

class CFX_TRAIN_API Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Adds a group; returns its index. `params` and `grads` must stay valid.
  int addGroup(float* params, const float* grads, size_t count);
  // One update of every group from its gradients.
  virtual void step() = 0;
  // State buffers per group (SGD with momentum: 1, Adam: 2 (m, v), plain SGD: 0).
  virtual int stateSlots() const = 0;
  float* state(int group, int slot);
  size_t stateBytes() const;
  // Steps taken (Adam's bias correction uses it); settable when loading a checkpoint.
  long steps() const { return steps_; }
  void setSteps(long s) { steps_ = s; }

 protected:
  struct Group {
    float* params;
    const float* grads;
    size_t count;
    std::vector<std::vector<float>> state;
  };
  std::vector<Group> groups_;
  long steps_ = 0;
};

struct SgdOptions {
  float lr = 0.01f;
  float momentum = 0.0f;
  float weightDecay = 0.0f;
};

class CFX_TRAIN_API Sgd : public Optimizer {
 public:
  explicit Sgd(SgdOptions o) : o_(o) {}
  void step() override;
  int stateSlots() const override { return o_.momentum != 0.0f ? 1 : 0; }

 private:
  SgdOptions o_;
};

struct AdamOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weightDecay = 0.0f;  // decoupled (AdamW)
};

class CFX_TRAIN_API Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions o) : o_(o) {}
  void step() override;
  int stateSlots() const override { return 2; }

 private:
  AdamOptions o_;
};

}  // namespace conflux::train
