#include "work.h"

#include <ATen/core/jit_type.h>

#include <chrono>
#include <thread>

namespace torch_conflux {

namespace {
// How long wait() polls before it sleeps: enough for a small collective to finish on the worker.
constexpr auto kSpinFor = std::chrono::microseconds(50);
}  // namespace

ConfluxWork::ConfluxWork(int rank, c10d::OpType type, const char* profilingTitle, std::vector<at::Tensor> outputs,
                         bool spinWait)
    : c10d::Work(rank, type, profilingTitle),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))),
      spinWait_(spinWait) {}

bool ConfluxWork::wait(std::chrono::milliseconds timeout) {
  if (spinWait_ && !isCompleted()) {
    const auto until = std::chrono::steady_clock::now() + kSpinFor;
    while (!isCompleted() && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
  }
  return c10d::Work::wait(timeout);
}

c10::intrusive_ptr<c10::ivalue::Future> ConfluxWork::getFuture() { return future_; }

std::vector<at::Tensor> ConfluxWork::result() { return outputs_; }

void ConfluxWork::addOutputs(const std::vector<at::Tensor>& outputs) {
  outputs_.insert(outputs_.end(), outputs.begin(), outputs.end());
}

void ConfluxWork::complete(std::exception_ptr error) {
  // The future first: a waiter woken by finish() may read it at once.
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
  finish(error);
}

}  // namespace torch_conflux
