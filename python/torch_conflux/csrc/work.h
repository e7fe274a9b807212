// The Work a method returns, as Gloo's AsyncWork behaves: wait() blocks until the operation is done
// and rethrows its error; isCompleted() and isSuccess() are c10d::Work's own, which finish() sets
// under one lock, so a waiter that wait() has released always sees them set; getFuture() completes with the output tensors (or
// the error) when the worker finishes the operation, running callbacks on the worker's thread.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <exception>
#include <vector>

namespace torch_conflux {

class ConfluxWork : public c10d::Work {
 public:
  // `outputs` are what the future carries; they and every tensor the operation's closure captured
  // stay alive until the operation is done.
  ConfluxWork(int rank, c10d::OpType type, const char* profilingTitle, std::vector<at::Tensor> outputs,
              bool spinWait);

  // Spins briefly (the small-message path) and then sleeps in Work::wait.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;

  // Coalescing: one Work carries every grouped operation's outputs.
  void addOutputs(const std::vector<at::Tensor>& outputs);
  // Called once, by the worker, when the operation ends; nullptr means success.
  void complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  bool spinWait_;
};

}  // namespace torch_conflux
