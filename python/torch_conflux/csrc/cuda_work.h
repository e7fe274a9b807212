// The Work of an operation on CUDA tensors, as NCCL's backend's: when the method returns, the
// operation is queued on the caller's current stream. isCompleted() asks an event recorded after
// it; wait() and synchronize() make the caller's current stream wait for that event (the host does
// not block) and raise a failure of the staged path that is already known. The future is
// CUDA-aware and completed at once: streams that read its value wait for the operation first.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <memory>
#include <vector>

#include "cuda_path.h"

namespace torch_conflux {

class CudaWork : public c10d::Work {
 public:
  // Call with `stream` current on this thread, right after the operation was queued on it.
  CudaWork(int rank, c10d::OpType type, const char* profilingTitle, std::vector<at::Tensor> outputs,
           const c10::Stream& stream, std::shared_ptr<CudaPath> path);

  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void synchronize() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;

 private:
  std::vector<at::Tensor> outputs_;
  c10::Device device_;
  c10::Event event_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::shared_ptr<CudaPath> path_;
  const char* title_;
};

}  // namespace torch_conflux
