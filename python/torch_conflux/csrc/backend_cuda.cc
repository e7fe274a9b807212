// ConfluxBackend's methods on CUDA tensors: the staged forms (cfxCuda* on torch's current stream,
// through CudaPath) and the hand-back of host copies. See backend.h.
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>

#include "backend.h"
#include "cuda_work.h"
#include "types.h"

namespace torch_conflux {

using c10d::OpType;

namespace {

// The current stream of a CUDA device, on this thread.
c10::Stream currentStream(const c10::Device& device) {
  return c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(device);
}

size_t count(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

}  // namespace

bool ConfluxBackend::coalescing() {
  std::lock_guard<std::mutex> lock(coalesceMutex_);
  return coalescing_;
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::onStream(OpType type, const char* title,
                                                        std::vector<at::Tensor> outputs, const char* method,
                                                        const at::Tensor& like,
                                                        const std::function<void(const Submit&)>& issue) {
  TORCH_CHECK(!coalescing(), "conflux ", method, ": CUDA collectives inside a coalescing group are not supported "
              "(send/recv are); issue them one by one");
  worker_.waitIdle();  // the host operations queued before this one use the communicator first
  const c10::Device device = like.device();
  const c10::DeviceGuard guard(device);
  const c10::Stream stream = currentStream(device);
  issue([&](const CudaCall& call) { cuda_->issue(method, call, device.index(), stream.native_handle()); });
  return c10::make_intrusive<CudaWork>(rank_, type, title, std::move(outputs), stream, cuda_);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::copiedBack(
    OpType type, const char* title, const at::Tensor& like, const c10::intrusive_ptr<c10d::Work>& work,
    const std::vector<std::pair<at::Tensor, at::Tensor>>& outputs) {
  work->wait();
  const c10::DeviceGuard guard(like.device());
  std::vector<at::Tensor> results;
  for (const auto& [device, host] : outputs) {
    device.copy_(host);
    results.push_back(device);
  }
  return c10::make_intrusive<CudaWork>(rank_, type, title, std::move(results), currentStream(like.device()), cuda_);
}

// A temporary made here (a premultiplied input, a concatenation) is allocated on the current
// stream and freed after the call is queued: torch's caching allocator hands its memory out again
// only to work ordered after it on that stream, and the stream passes a staged call only once the
// call has read its inputs.

c10::intrusive_ptr<c10d::Work> ConfluxBackend::allreduceOnStream(OpType type, const char* title, const char* method,
                                                                 const std::vector<at::Tensor>& tensors,
                                                                 const c10d::ReduceOp& op) {
  std::vector<ReduceSpec> specs;
  for (const auto& t : tensors) {
    checkDense(method, t);
    specs.push_back(reduceOp(method, op, t.scalar_type()));
  }
  return onStream(type, title, tensors, method, tensors[0], [&](const Submit& submit) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const at::Tensor& t = tensors[i];
      const at::Tensor in = premultiplied(t, specs[i]);
      submit({CudaColl::kAllReduce, ptr(in), ptr(t), count(t), reductionType(method, t.scalar_type()), specs[i].op});
    }
  });
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::reduceOnStream(const at::Tensor& t, const c10d::ReduceOptions& opts) {
  const ReduceSpec spec = reduceOp("reduce", opts.reduceOp, t.scalar_type());
  const cfxDataType_t dt = reductionType("reduce", t.scalar_type());
  const int root = static_cast<int>(opts.rootRank);
  return onStream(OpType::REDUCE, "conflux:reduce", {t}, "reduce", t, [&](const Submit& submit) {
    const at::Tensor in = premultiplied(t, spec);
    submit({CudaColl::kReduce, ptr(in), ptr(t), count(t), dt, spec.op, root});
  });
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::broadcastOnStream(const at::Tensor& t, int root) {
  return onStream(OpType::BROADCAST, "conflux:broadcast", {t}, "broadcast", t, [&](const Submit& submit) {
    submit({CudaColl::kBroadcast, ptr(t), ptr(t), nbytes(t), cfxUint8, cfxSum, root});
  });
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::allgatherOnStream(OpType type, const char* title, const char* method,
                                                                 const std::vector<at::Tensor>& outputs,
                                                                 const std::vector<at::Tensor>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) checkAllgatherBase(method, outputs[i], inputs[i]);
  return onStream(type, title, outputs, method, outputs[0], [&](const Submit& submit) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      submit({CudaColl::kAllGather, ptr(inputs[i]), ptr(outputs[i]), nbytes(inputs[i]), cfxUint8});
    }
  });
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::allgatherListOnStream(const std::vector<at::Tensor>& outputs,
                                                                     const at::Tensor& input) {
  const char* method = "allgather";
  checkDense(method, input);
  checkList(method, outputs, size_, input);
  return onStream(OpType::ALLGATHER, "conflux:all_gather", outputs, method, input, [&](const Submit& submit) {
    const int64_t n = input.numel();
    const at::Tensor flat = adjacent(outputs) ? flatView(outputs, n * size_) : at::empty({n * size_}, input.options());
    submit({CudaColl::kAllGather, ptr(input), ptr(flat), nbytes(input), cfxUint8});
    if (adjacent(outputs)) return;
    for (size_t i = 0; i < outputs.size(); ++i) {
      outputs[i].view(-1).copy_(flat.narrow(0, static_cast<int64_t>(i) * n, n));  // on the stream, after the call
    }
  });
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::reduceScatterOnStream(OpType type, const char* title,
                                                                     const char* method,
                                                                     const std::vector<at::Tensor>& outputs,
                                                                     const std::vector<at::Tensor>& inputs,
                                                                     const c10d::ReduceOp& op) {
  std::vector<ReduceSpec> specs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    checkReduceScatterBase(method, outputs[i], inputs[i]);
    specs.push_back(reduceOp(method, op, inputs[i].scalar_type()));
  }
  return onStream(type, title, outputs, method, outputs[0], [&](const Submit& submit) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      const at::Tensor in = premultiplied(inputs[i], specs[i]);
      submit({CudaColl::kReduceScatter, ptr(in), ptr(outputs[i]), count(outputs[i]),
              reductionType(method, inputs[i].scalar_type()), specs[i].op});
    }
  });
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::reduceScatterListOnStream(const at::Tensor& output,
                                                                         const std::vector<at::Tensor>& inputs,
                                                                         const c10d::ReduceOp& op) {
  const char* method = "reduce_scatter";
  const ReduceSpec spec = reduceOp(method, op, output.scalar_type());
  const cfxDataType_t dt = reductionType(method, output.scalar_type());
  return onStream(OpType::REDUCE_SCATTER, "conflux:reduce_scatter", {output}, method, output,
                  [&](const Submit& submit) {
                    std::vector<at::Tensor> flat;
                    for (const auto& t : inputs) flat.push_back(t.reshape(-1));
                    const at::Tensor in = premultiplied(at::cat(flat), spec);
                    submit({CudaColl::kReduceScatter, ptr(in), ptr(output), count(output), dt, spec.op});
                  });
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::alltoallOnStream(const at::Tensor& output, const at::Tensor& input) {
  return onStream(OpType::ALLTOALL_BASE, "conflux:all_to_all_single", {output}, "alltoall_base", output,
                  [&](const Submit& submit) {
                    submit({CudaColl::kAlltoAll, ptr(input), ptr(output), nbytes(input) / size_, cfxUint8});
                  });
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::p2pOnStream(OpType type, const at::Tensor& t, int peer) {
  const bool send = type == OpType::SEND;
  return onStream(type, send ? "conflux:send" : "conflux:recv", {t}, send ? "send" : "recv", t,
                  [&](const Submit& submit) {
                    if (send) {
                      submit({CudaColl::kSend, ptr(t), nullptr, nbytes(t), cfxUint8, cfxSum, peer});
                    } else {
                      submit({CudaColl::kRecv, nullptr, ptr(t), nbytes(t), cfxUint8, cfxSum, peer});
                    }
                  });
}

}  // namespace torch_conflux
