// Runs a validated pipeline schedule on one stage: the caller's forward and backward callbacks do
// the compute, the executor moves activations and gradients between stages with cfxSend/cfxRecv.
// Each run of consecutive communication actions in the schedule is one cfxGroupStart/cfxGroupEnd,
// which is what keeps neighbouring stages from deadlocking (the validator has proved the order
// safe before the first message moves).
//
// The communicator has one rank per worker: per stage (rank = stage), or for 1F1B-RR per replica of
// each stage, stage 0's first (Schedule::workerOf). For pipeline x data parallelism, split the
// world with cfxCommSplit into pipelines (color = replica) and replicas (color = stage), see
// pipeline/partition.h.
//
// Asynchronous schedules: the executor calls `update` at each kUpdate, and keeps weight versions
// (PipeDream's weight stashing): when a later action still needs the version an update is about to
// replace, it copies the parameters aside first, and swaps that copy in around each forward or
// backward that uses it. Versions count from the weights at the start of each run().
#pragma once

#include <conflux/conflux.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "conflux/train/error.h"
#include "conflux/train/pipeline/schedule.h"

namespace conflux::train::pipeline {

struct ParameterSpan {
  float* data;
  size_t count;
};

struct StageFunctions {
  // Elements (fp32) of the activation virtual stage `vstage` sends to vstage + 1; its gradient
  // travels back with the same size.
  std::function<size_t(int vstage)> activationSize;
  // Forward of micro-batch `mb` on `vstage`. `in` is the received activation (null on virtual
  // stage 0), valid during the call only; `out` has activationSize(vstage) elements (null on the
  // last virtual stage). Returns the micro-batch's loss on the last virtual stage (ignored
  // elsewhere). `keep` false: the executor recomputes this forward before its backward, so the
  // callee need not keep what backward needs.
  std::function<float(int vstage, int mb, const float* in, float* out, bool keep)> forward;
  // Backward of micro-batch `mb` on `vstage`: `dout` is the gradient of its output (null on the
  // last virtual stage, which starts from its loss); `din` receives the gradient of its input
  // (null on virtual stage 0). Parameter gradients accumulate in the callee.
  std::function<void(int vstage, int mb, const float* dout, float* din)> backward;
  // Zero-bubble schedules' halves of backward: the input gradient (as backward, keeping what the
  // weight half needs), then later the parameter gradients. Unset, kBackwardInput runs `backward`
  // and kBackwardWeight does nothing: the schedule's order, with empty weight slots.
  std::function<void(int vstage, int mb, const float* dout, float* din)> backwardInput;
  std::function<void(int vstage, int mb)> backwardWeight;
  // Asynchronous schedules: apply the optimizer to the gradients accumulated since the last call
  // and zero them, making weight version `version` (a replicated stage averages its replicas'
  // gradients first, e.g. DDP over their communicator). Required when the schedule has kUpdate.
  std::function<void(int version)> update;
  // The stage's parameter buffers, which weight stashing copies and swaps in place. Required when
  // an action uses a version older than the latest.
  std::vector<ParameterSpan> parameters;
};

struct ExecutorOptions {
  // GPipe's re-materialisation: forwards run with keep = false, and each backward is preceded by
  // the same forward again with keep = true, on the input the executor kept.
  bool recompute = false;
};

struct StepResult {
  std::vector<float> losses;  // per micro-batch on the stage holding the last virtual stage (a replica
                              // of it: those it ran, 0 for the others); else empty
  double seconds = 0;         // the whole step on this stage
  double computeSeconds = 0;  // inside forward and backward callbacks
  double commSeconds = 0;     // inside the send/receive groups (waiting included)
  size_t peakBufferedBytes = 0;  // activations and gradients the executor held at once
  size_t peakStashedBytes = 0;   // stashed weight versions held at once
  int updates = 0;               // kUpdate actions run
};

class CFX_TRAIN_API Executor {
 public:
  // Validates the schedule (throws Error naming stage and action) and checks that comm has
  // schedule.workers() ranks and that the callbacks the schedule needs are set. The communicator
  // must outlive the executor.
  Executor(cfxComm_t comm, Schedule schedule, StageFunctions functions, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const Schedule& schedule() const;
  const ScheduleReport& report() const;
  int stage() const;
  int worker() const;  // this rank: the stage, or for 1F1B-RR the stage's replica
  // The virtual stages this stage computes, in order.
  std::vector<int> virtualStages() const;

  // One step: every action of this stage's list. A callback that throws aborts the communicator
  // (the other stages fail instead of waiting) and the exception propagates.
  StepResult run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conflux::train::pipeline
