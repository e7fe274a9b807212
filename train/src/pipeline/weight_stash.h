// PipeDream's weight stashing for one worker of an asynchronous schedule. Versions count the
// worker's updates since the start of the run (0: the weights then). From the worker's action
// list the stash knows, before each update, whether a later forward or backward still uses the
// version being replaced; if so it copies the parameters aside. A compute on an older version
// swaps that copy into the parameter buffers for its duration (the layers stay bound to the same
// memory), and the copy is dropped after its last use.
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include "conflux/train/pipeline/executor.h"

namespace conflux::train::pipeline {

class WeightStash {
 public:
  // `list`: the worker's actions. Throws Error(cfxInvalidArgument) if an older version is used
  // and `params` is empty.
  WeightStash(const std::vector<Action>& list, std::vector<ParameterSpan> params);

  // Start of a run: the parameters are version 0; no copies.
  void reset();
  // Before the kUpdate at `index`: keeps a copy of the current version if still needed.
  void beforeUpdate(size_t index);
  void afterUpdate(int version) { live_ = version; }

  // Swaps version `version` into the parameters while alive (a no-op for the latest), and drops
  // the copy after the action at `index`, its last use.
  class Use {
   public:
    Use(WeightStash& stash, size_t index, int version);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    WeightStash& stash_;
    size_t index_;
    int version_;
    std::vector<std::vector<float>>* copy_ = nullptr;
  };

  size_t peakBytes() const { return peakBytes_; }

 private:
  void swap(std::vector<std::vector<float>>& copy);

  std::vector<ParameterSpan> params_;
  std::map<int, size_t> lastUse_;  // version -> index of the last compute using it
  std::map<int, std::vector<std::vector<float>>> copies_;
  int live_ = 0;
  size_t bytes_ = 0, peakBytes_ = 0;
};

}  // namespace conflux::train::pipeline
