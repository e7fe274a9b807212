// c10d::Backend over Conflux's public C API: each method checks its arguments on the caller's
// thread (a bad argument raises RuntimeError there and nothing is queued), then posts a closure of
// blocking cfx* calls to the worker, which runs them in issue order. Methods Conflux has no
// collective for (gather, scatter, uneven alltoall, alltoall of lists) are grouped Send/Recv, as
// NCCL's users build them. Coalescing (batch_isend_irecv, _coalescing_manager) runs the
// collected operations as one cfxGroupStart/End.
//
// CUDA tensors (registered for device "cuda" too): the collectives with a staged form go through
// CudaPath on torch's current stream, issued on the caller's thread once the worker is idle, and
// return a CudaWork (NCCL's stream semantics). What the staged path lacks (gather, scatter, uneven
// or list alltoall, allgather_coalesced, send/recv inside a coalescing group) runs on host copies:
// the calling thread waits, and the results are copied back on the current stream.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "comm.h"
#include "cuda_path.h"
#include "work.h"
#include "worker.h"

namespace torch_conflux {

// One operation as the worker runs it: it makes its temporaries (a premultiplied or concatenated
// input, a flat output) and issues its Conflux calls, and returns the Finish that copies results
// out and releases the temporaries. Inside a group the calls are only queued, so every Finish runs
// after cfxGroupEnd.
using Finish = std::function<void()>;
using Op = std::function<Finish()>;

class ConfluxBackend : public c10d::Backend {
 public:
  ConfluxBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout);
  // Over a communicator made by a shrink.
  explicit ConfluxBackend(std::shared_ptr<Communicator> comm);
  ~ConfluxBackend() override;

  // The creator torch.distributed.Backend.register_backend calls: (store, rank, size, timeout).
  static c10::intrusive_ptr<c10d::Backend> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                  const std::chrono::duration<float>& timeout);

  const std::string getBackendName() const override { return "conflux"; }
  bool supportsCoalescing() const override { return true; }

  // torch.distributed.shrink_group: cfxCommShrink (SHRINK_ABORT: this group's work in progress
  // fails first; SHRINK_DEFAULT: it completes first). The new backend has the survivors, in order.
  bool supportsShrinking() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t>& ranksToExclude, int shrinkFlags,
                                           const c10::intrusive_ptr<Options>& optsOverride) override;
  // cfxCommGetFailedRanks (torch_conflux.failed_ranks).
  std::vector<int> failedRanks() const { return comm_->failedRanks(); }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // CPU tensors in registered memory (registered_memory.h): collectives on them run zero-copy.
  bool supportsTensorAlloc(c10::DeviceIndex deviceIdx) override;
  at::Tensor allocateTensor(long size, at::TensorOptions options = {}) override;
  std::shared_ptr<c10::Allocator> getMemAllocator() override;

  // Normal close (destroy_process_group): runs what is queued, destroys the communicator.
  void shutdown() override;
  // Fails what is in progress and queued at once, then closes.
  void abort() override;

 private:
  // Posts `ops` (one cfxGroupStart/End around several) or adds them to the open coalescing group,
  // and returns their Work. A synchronous call (asyncOp false: torch waits at once) runs on the
  // caller's thread when the worker is idle.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
                                         std::vector<Op> ops, const char* method, bool asyncOp = true);
  // The operations, shared by the plain and the coalesced forms of a method.
  Op allreduceOp(const char* method, const at::Tensor& t, const c10d::ReduceOp& op);
  Op allgatherOp(const char* method, const std::vector<at::Tensor>& outputs, const at::Tensor& input);
  Op allgathervOp(const char* method, const std::vector<at::Tensor>& outputs, const at::Tensor& input);
  Op reduceScattervOp(const char* method, const at::Tensor& output, const std::vector<at::Tensor>& list,
                      const c10d::ReduceOp& op);
  Op allgatherBaseOp(const char* method, const at::Tensor& output, const at::Tensor& input);
  Op reduceScatterBaseOp(const char* method, const at::Tensor& output, const at::Tensor& input,
                         const c10d::ReduceOp& op);
  // A worker task that runs `ops`, inside cfxGroupStart/End when there are several, after the
  // host part of the CUDA calls issued before it.
  Worker::Task run(const char* method, std::vector<Op> ops);

  void checkAllgatherBase(const char* method, const at::Tensor& output, const at::Tensor& input);
  void checkReduceScatterBase(const char* method, const at::Tensor& output, const at::Tensor& input);

  // ---- CUDA tensors (backend_cuda.cc) ----
  // The staged forms. The base and coalesced forms take outputs[i] and inputs[i] pairwise.
  c10::intrusive_ptr<c10d::Work> allreduceOnStream(c10d::OpType type, const char* title, const char* method,
                                                   const std::vector<at::Tensor>& tensors, const c10d::ReduceOp& op);
  c10::intrusive_ptr<c10d::Work> reduceOnStream(const at::Tensor& t, const c10d::ReduceOptions& opts);
  c10::intrusive_ptr<c10d::Work> broadcastOnStream(const at::Tensor& t, int root);
  c10::intrusive_ptr<c10d::Work> allgatherOnStream(c10d::OpType type, const char* title, const char* method,
                                                   const std::vector<at::Tensor>& outputs,
                                                   const std::vector<at::Tensor>& inputs);
  c10::intrusive_ptr<c10d::Work> allgatherListOnStream(const std::vector<at::Tensor>& outputs, const at::Tensor& input);
  c10::intrusive_ptr<c10d::Work> reduceScatterOnStream(c10d::OpType type, const char* title, const char* method,
                                                       const std::vector<at::Tensor>& outputs,
                                                       const std::vector<at::Tensor>& inputs,
                                                       const c10d::ReduceOp& op);
  c10::intrusive_ptr<c10d::Work> reduceScatterListOnStream(const at::Tensor& output,
                                                           const std::vector<at::Tensor>& inputs,
                                                           const c10d::ReduceOp& op);
  c10::intrusive_ptr<c10d::Work> alltoallOnStream(const at::Tensor& output, const at::Tensor& input);
  c10::intrusive_ptr<c10d::Work> p2pOnStream(c10d::OpType type, const at::Tensor& t, int peer);

  // `issue` submits the operation's calls (and may run torch ops on the current
  // stream around them); onStream runs it on the caller's thread after the worker's queue, with the
  // device of `like` current, and returns a CudaWork over `outputs`.
  using Submit = std::function<void(const CudaCall&)>;
  c10::intrusive_ptr<c10d::Work> onStream(c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
                                          const char* method, const at::Tensor& like,
                                          const std::function<void(const Submit&)>& issue);
  // After a host method ran on host copies of CUDA tensors: waits for `work`, copies each host
  // output back into its CUDA tensor on the current stream, and returns a CudaWork over them.
  c10::intrusive_ptr<c10d::Work> copiedBack(c10d::OpType type, const char* title, const at::Tensor& like,
                                            const c10::intrusive_ptr<c10d::Work>& work,
                                            const std::vector<std::pair<at::Tensor, at::Tensor>>& outputs);
  bool coalescing();

  std::shared_ptr<Communicator> comm_;
  std::mutex allocatorMutex_;
  std::shared_ptr<c10::Allocator> allocator_;  // registered memory, made at first use
  std::shared_ptr<CudaPath> cuda_;
  bool spin_;
  Worker worker_;
  std::mutex coalesceMutex_;
  bool coalescing_ = false;
  std::vector<Op> coalesced_;
  c10::intrusive_ptr<ConfluxWork> coalescedWork_;
  std::vector<std::pair<at::Tensor, at::Tensor>> coalescedCopies_;  // (CUDA recv tensor, its host copy)
};

}  // namespace torch_conflux
