#include "conflux/train/optim.h"

#include <cmath>
#include <string>

namespace conflux::train {

int Optimizer::addGroup(float* params, const float* grads, size_t count) {
  if (count > 0 && (params == nullptr || grads == nullptr)) {
    throw Error(cfxInvalidArgument, "Optimizer::addGroup: NULL parameters or gradients");
  }
  Group g{params, grads, count, {}};
  g.state.assign(static_cast<size_t>(stateSlots()), std::vector<float>(count, 0.0f));
  groups_.push_back(std::move(g));
  return static_cast<int>(groups_.size()) - 1;
}

float* Optimizer::state(int group, int slot) {
  if (group < 0 || group >= static_cast<int>(groups_.size()) || slot < 0 || slot >= stateSlots()) {
    throw Error(cfxInvalidArgument, "Optimizer::state: no group " + std::to_string(group) + " slot " +
                                        std::to_string(slot));
  }
  return groups_[static_cast<size_t>(group)].state[static_cast<size_t>(slot)].data();
}

size_t Optimizer::stateBytes() const {
  size_t n = 0;
  for (const Group& g : groups_) n += g.count * sizeof(float) * g.state.size();
  return n;
}

void Sgd::step() {
  for (Group& g : groups_) {
    float* p = g.params;
    const float* d = g.grads;
    float* buf = g.state.empty() ? nullptr : g.state[0].data();
    for (size_t i = 0; i < g.count; ++i) {
      float grad = d[i] + o_.weightDecay * p[i];
      if (buf != nullptr) {
        buf[i] = steps_ == 0 ? grad : o_.momentum * buf[i] + grad;
        grad = buf[i];
      }
      p[i] -= o_.lr * grad;
    }
  }
  ++steps_;
}

void Adam::step() {
  ++steps_;
  const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(o_.beta1), static_cast<double>(steps_)));
  const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(o_.beta2), static_cast<double>(steps_)));
  const float c2root = std::sqrt(c2);
  for (Group& g : groups_) {
    float* p = g.params;
    const float* d = g.grads;
    float* m = g.state[0].data();
    float* v = g.state[1].data();
    for (size_t i = 0; i < g.count; ++i) {
      m[i] = o_.beta1 * m[i] + (1.0f - o_.beta1) * d[i];
      v[i] = o_.beta2 * v[i] + (1.0f - o_.beta2) * d[i] * d[i];
      float denom = std::sqrt(v[i]) / c2root + o_.eps;
      p[i] -= o_.lr * (m[i] / c1) / denom + o_.lr * o_.weightDecay * p[i];
    }
  }
}

}  // namespace conflux::train
