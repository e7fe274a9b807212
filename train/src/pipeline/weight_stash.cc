#include "weight_stash.h"

#include <algorithm>
#include <string>
#include <utility>

namespace conflux::train::pipeline {

WeightStash::WeightStash(const std::vector<Action>& list, std::vector<ParameterSpan> params) : params_(std::move(params)) {
  int live = 0;
  bool older = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const Action& a = list[i];
    if (a.op == Op::kUpdate) {
      live = a.version;
    } else if (isCompute(a.op)) {
      lastUse_[a.version] = i;
      older = older || a.version != live;
    }
  }
  if (older && params_.empty()) {
    throw Error(cfxInvalidArgument, "pipeline Executor: the schedule computes with stashed weight versions, so "
                                    "StageFunctions::parameters must list the stage's parameter buffers");
  }
}

void WeightStash::reset() {
  copies_.clear();
  live_ = 0;
  bytes_ = 0;
}

void WeightStash::beforeUpdate(size_t index) {
  auto last = lastUse_.find(live_);
  if (last == lastUse_.end() || last->second < index) return;
  auto& copy = copies_[live_];
  for (const ParameterSpan& p : params_) {
    copy.emplace_back(p.data, p.data + p.count);
    bytes_ += p.count * sizeof(float);
  }
  peakBytes_ = std::max(peakBytes_, bytes_);
}

void WeightStash::swap(std::vector<std::vector<float>>& copy) {
  for (size_t k = 0; k < params_.size(); ++k) {
    std::swap_ranges(params_[k].data, params_[k].data + params_[k].count, copy[k].begin());
  }
}

WeightStash::Use::Use(WeightStash& stash, size_t index, int version) : stash_(stash), index_(index), version_(version) {
  if (version == stash.live_) return;
  auto it = stash.copies_.find(version);
  if (it == stash.copies_.end()) {
    throw Error(cfxInternalError, "pipeline executor: weight version " + std::to_string(version) + " was not stashed");
  }
  copy_ = &it->second;
  stash.swap(*copy_);
}

WeightStash::Use::~Use() {
  if (copy_ == nullptr) return;
  stash_.swap(*copy_);
  auto last = stash_.lastUse_.find(version_);
  if (last != stash_.lastUse_.end() && last->second == index_) {
    for (const auto& c : *copy_) stash_.bytes_ -= c.size() * sizeof(float);
    stash_.copies_.erase(version_);
  }
}

}  // namespace conflux::train::pipeline
