#include "cuda_work.h"

#include <ATen/core/jit_type.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace torch_conflux {

CudaWork::CudaWork(int rank, c10d::OpType type, const char* profilingTitle, std::vector<at::Tensor> outputs,
                   const c10::Stream& stream, std::shared_ptr<CudaPath> path)
    : c10d::Work(rank, type, profilingTitle),
      outputs_(std::move(outputs)),
      device_(stream.device()),
      event_(c10::DeviceType::CUDA),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::vector<c10::Device>{stream.device()})),
      path_(std::move(path)),
      title_(profilingTitle) {
  event_.record(stream);
  future_->markCompleted(c10::IValue(outputs_));  // records its own events on the current stream
  finish();
}

bool CudaWork::isCompleted() { return event_.query(); }

bool CudaWork::wait(std::chrono::milliseconds) {
  synchronize();
  return true;
}

void CudaWork::synchronize() {
  const c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  event_.block(impl.getStream(device_));
  path_->checkAsync(title_);
}

c10::intrusive_ptr<c10::ivalue::Future> CudaWork::getFuture() { return future_; }

std::vector<at::Tensor> CudaWork::result() { return outputs_; }

}  // namespace torch_conflux
