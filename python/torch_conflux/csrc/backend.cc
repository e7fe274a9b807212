#include "backend.h"
#include "registered_memory.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <numeric>

#include "host_copies.h"
#include "types.h"

namespace torch_conflux {

using c10d::OpType;

namespace {


// Element offsets and counts of the per-rank blocks of an alltoall tensor along dim 0 (`splits`
// in rows; empty: equal blocks).
struct Blocks {
  std::vector<size_t> offset, count;  // in bytes
};
Blocks alltoallBlocks(const char* what, const at::Tensor& t, const std::vector<int64_t>& splits, int size) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const size_t rowBytes = rows == 0 ? 0 : nbytes(t) / rows;
  std::vector<int64_t> split = splits;
  if (split.empty()) {
    TORCH_CHECK(rows % size == 0, "conflux alltoall_base: the ", what, " tensor's first dimension (", rows,
                ") must divide by the group size (", size, ") when no split sizes are given");
    split.assign(size, rows / size);
  }
  TORCH_CHECK(static_cast<int>(split.size()) == size, "conflux alltoall_base: ", what, " split sizes have ",
              split.size(), " entries, the group has ", size, " ranks");
  int64_t sum = 0;
  for (int64_t s : split) {
    TORCH_CHECK(s >= 0, "conflux alltoall_base: negative ", what, " split size ", s);
    sum += s;
  }
  TORCH_CHECK(sum == rows, "conflux alltoall_base: ", what, " split sizes add up to ", sum,
              " rows, the tensor has ", rows);
  Blocks b;
  size_t at = 0;
  for (int64_t s : split) {
    b.offset.push_back(at);
    b.count.push_back(static_cast<size_t>(s) * rowBytes);
    at += static_cast<size_t>(s) * rowBytes;
  }
  return b;
}

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

}  // namespace

ConfluxBackend::ConfluxBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                               std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size),
      comm_(std::make_shared<Communicator>(store, rank, size, timeout)),
      cuda_(std::make_shared<CudaPath>(comm_)),
      // Spin-then-sleep only where Conflux's own waits spin (CFX_SPIN, auto: each rank of this
      // host can have a CPU of its own).
      spin_(comm_->spins()),
      worker_(spin_) {}

ConfluxBackend::ConfluxBackend(std::shared_ptr<Communicator> comm)
    : c10d::Backend(comm->rank(), comm->size()),
      comm_(std::move(comm)),
      cuda_(std::make_shared<CudaPath>(comm_)),
      spin_(comm_->spins()),
      worker_(spin_) {}

ConfluxBackend::~ConfluxBackend() { shutdown(); }

c10::intrusive_ptr<c10d::Backend> ConfluxBackend::shrink(const std::vector<int64_t>& ranksToExclude, int shrinkFlags,
                                                         const c10::intrusive_ptr<Options>& /*optsOverride*/) {
  TORCH_CHECK(shrinkFlags == 0 || shrinkFlags == 1, "conflux shrink: shrink_flags ", shrinkFlags,
              " is neither SHRINK_DEFAULT (0) nor SHRINK_ABORT (1)");
  const bool abortFirst = shrinkFlags == 1;
  // SHRINK_DEFAULT: what this group queued completes first (as Conflux's own queue does).
  if (!abortFirst) {
    worker_.waitIdle();
    cuda_->synchronize("shrink");
  }
  std::vector<int> exclude(ranksToExclude.begin(), ranksToExclude.end());
  return c10::make_intrusive<ConfluxBackend>(comm_->shrink(exclude, abortFirst));
}

c10::intrusive_ptr<c10d::Backend> ConfluxBackend::create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                         int size, const std::chrono::duration<float>& timeout) {
  return c10::make_intrusive<ConfluxBackend>(store, rank, size,
                                             std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}

// torch passes the device's index: -1 for the CPU (a CUDA device has an index; its tensors take the
// staged GPU path, not registered host memory).
bool ConfluxBackend::supportsTensorAlloc(c10::DeviceIndex deviceIdx) { return deviceIdx < 0; }

at::Tensor ConfluxBackend::allocateTensor(long size, at::TensorOptions options) {
  return allocateRegistered(*getMemAllocator(), size, options);
}

std::shared_ptr<c10::Allocator> ConfluxBackend::getMemAllocator() {
  std::lock_guard<std::mutex> lock(allocatorMutex_);
  if (!allocator_) allocator_ = registeredAllocator(comm_->get());
  return allocator_;
}

void ConfluxBackend::shutdown() {
  worker_.stop();
  cuda_->close();
  comm_->destroy();
}

void ConfluxBackend::abort() {
  comm_->abort();  // fails the staged calls too, releasing their streams
  cuda_->close();
  worker_.stop();
}

Worker::Task ConfluxBackend::run(const char* method, std::vector<Op> ops) {
  if (ops.size() == 1) {
    return [cuda = cuda_, method, op = std::move(ops[0])] {
      cuda->synchronize(method);
      op()();
    };
  }
  return [c = comm_, cuda = cuda_, method, ops = std::move(ops)] {
    cuda->synchronize(method);
    std::vector<Finish> finishes;  // alive until cfxGroupEnd has run the queued calls
    cfxGroupStart();
    try {
      for (const auto& op : ops) finishes.push_back(op());
    } catch (...) {
      cfxGroupEnd();
      throw;
    }
    c->check(cfxGroupEnd(), method);
    for (const auto& finish : finishes) finish();
  };
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::enqueue(OpType type, const char* title, std::vector<at::Tensor> outputs,
                                                       std::vector<Op> ops, const char* method, bool asyncOp) {
  {
    std::lock_guard<std::mutex> lock(coalesceMutex_);
    if (coalescing_) {
      coalescedWork_->addOutputs(outputs);
      for (auto& op : ops) coalesced_.push_back(std::move(op));
      return coalescedWork_;
    }
  }
  auto work = c10::make_intrusive<ConfluxWork>(rank_, type, title, std::move(outputs), spin_);
  Worker::Task task = run(method, std::move(ops));
  if (asyncOp || !worker_.runInlineIfIdle(work, task)) worker_.post(work, std::move(task));
  return work;
}

void ConfluxBackend::startCoalescing() {
  std::lock_guard<std::mutex> lock(coalesceMutex_);
  TORCH_CHECK(!coalescing_, "conflux startCoalescing: already coalescing");
  coalescing_ = true;
  coalesced_.clear();
  coalescedCopies_.clear();
  coalescedWork_ = c10::make_intrusive<ConfluxWork>(rank_, OpType::COALESCED, "conflux:coalesced",
                                                    std::vector<at::Tensor>{}, spin_);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::endCoalescing() {
  std::vector<Op> ops;
  c10::intrusive_ptr<ConfluxWork> work;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;
  {
    std::lock_guard<std::mutex> lock(coalesceMutex_);
    TORCH_CHECK(coalescing_, "conflux endCoalescing: not coalescing");
    coalescing_ = false;
    ops.swap(coalesced_);
    copies.swap(coalescedCopies_);
    work = std::move(coalescedWork_);
  }
  // Always a group (even of one): a lone send or recv must not block the other coalesced side.
  ops.push_back([]() -> Finish { return [] {}; });
  worker_.post(work, run("coalesced operations", std::move(ops)));
  if (copies.empty()) return work;
  return copiedBack(OpType::COALESCED, "conflux:coalesced", copies[0].first, work, copies);
}

// ---- reductions ---------------------------------------------------------------------------------

namespace {
Finish keep(at::Tensor t) {
  return [t = std::move(t)] {};
}
}  // namespace

Op ConfluxBackend::allreduceOp(const char* method, const at::Tensor& t, const c10d::ReduceOp& op) {
  checkDense(method, t);
  const ReduceSpec spec = reduceOp(method, op, t.scalar_type());
  const cfxDataType_t dt = reductionType(method, t.scalar_type());
  return [c = comm_, method, t, spec, dt] {
    at::Tensor in = premultiplied(t, spec);
    c->check(cfxAllReduce(ptr(in), ptr(t), t.numel(), dt, spec.op, c->get(), nullptr), method);
    return keep(in);
  };
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::AllreduceOptions& opts) {
  checkSingle("allreduce", tensors);
  if (onCuda("allreduce", tensors)) {
    return allreduceOnStream(OpType::ALLREDUCE, "conflux:all_reduce", "allreduce", tensors, opts.reduceOp);
  }
  return enqueue(OpType::ALLREDUCE, "conflux:all_reduce", tensors,
                 {allreduceOp("allreduce", tensors[0], opts.reduceOp)}, "allreduce", opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                   const c10d::AllreduceCoalescedOptions& opts) {
  if (onCuda("allreduce_coalesced", tensors)) {
    return allreduceOnStream(OpType::ALLREDUCE_COALESCED, "conflux:all_reduce_coalesced", "allreduce_coalesced",
                             tensors, opts.reduceOp);
  }
  std::vector<Op> ops;
  for (const auto& t : tensors) ops.push_back(allreduceOp("allreduce_coalesced", t, opts.reduceOp));
  return enqueue(OpType::ALLREDUCE_COALESCED, "conflux:all_reduce_coalesced", tensors, std::move(ops),
                 "allreduce_coalesced", opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::reduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::ReduceOptions& opts) {
  checkSingle("reduce", tensors);
  checkRank("reduce", "root", opts.rootRank, size_);
  if (onCuda("reduce", tensors)) return reduceOnStream(tensors[0], opts);
  const at::Tensor t = tensors[0];
  const ReduceSpec spec = reduceOp("reduce", opts.reduceOp, t.scalar_type());
  const cfxDataType_t dt = reductionType("reduce", t.scalar_type());
  const int root = static_cast<int>(opts.rootRank);
  Op op = [c = comm_, t, spec, dt, root] {
    at::Tensor in = premultiplied(t, spec);
    c->check(cfxReduce(ptr(in), ptr(t), t.numel(), dt, spec.op, root, c->get(), nullptr), "reduce");
    return keep(in);
  };
  return enqueue(OpType::REDUCE, "conflux:reduce", tensors, {std::move(op)}, "reduce", opts.asyncOp);
}

void ConfluxBackend::checkReduceScatterBase(const char* method, const at::Tensor& output, const at::Tensor& input) {
  checkDense(method, output);
  checkDense(method, input);
  checkSameType(method, output, input);
  TORCH_CHECK(input.numel() == output.numel() * size_, "conflux ", method, ": the input must have group size (",
              size_, ") times the output's elements (", output.numel(), "), got ", input.numel());
}

Op ConfluxBackend::reduceScatterBaseOp(const char* method, const at::Tensor& output, const at::Tensor& input,
                                       const c10d::ReduceOp& op) {
  checkReduceScatterBase(method, output, input);
  const ReduceSpec spec = reduceOp(method, op, input.scalar_type());
  const cfxDataType_t dt = reductionType(method, input.scalar_type());
  return [c = comm_, method, output, input, spec, dt] {
    at::Tensor in = premultiplied(input, spec);
    c->check(cfxReduceScatter(ptr(in), ptr(output), output.numel(), dt, spec.op, c->get(), nullptr), method);
    return keep(in);
  };
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                              std::vector<std::vector<at::Tensor>>& inputs,
                                                              const c10d::ReduceScatterOptions& opts) {
  const char* method = "reduce_scatter";
  checkSingle(method, outputs);
  TORCH_CHECK(inputs.size() == 1, "conflux reduce_scatter: expects one input list, got ", inputs.size());
  const at::Tensor out = outputs[0];
  const std::vector<at::Tensor> list = inputs[0];
  std::vector<at::Tensor> all = list;
  all.push_back(out);
  const bool cuda = onCuda(method, all);
  if (!cuda && !sameSizes(list, out)) {
    return enqueue(OpType::REDUCE_SCATTER, "conflux:reduce_scatter", outputs,
                   {reduceScattervOp(method, out, list, opts.reduceOp)}, method, opts.asyncOp);
  }
  checkList(method, list, size_, out);
  if (cuda) return reduceScatterListOnStream(out, list, opts.reduceOp);
  if (adjacent(list)) {
    return enqueue(OpType::REDUCE_SCATTER, "conflux:reduce_scatter", outputs,
                   {reduceScatterBaseOp(method, out.view(-1), flatView(list, out.numel() * size_), opts.reduceOp)},
                   method, opts.asyncOp);
  }
  const ReduceSpec spec = reduceOp(method, opts.reduceOp, out.scalar_type());
  const cfxDataType_t dt = reductionType(method, out.scalar_type());
  Op op = [c = comm_, out, list, spec, dt] {
    std::vector<at::Tensor> flat;
    for (const auto& t : list) flat.push_back(t.reshape(-1));
    at::Tensor in = premultiplied(at::cat(flat), spec);
    c->check(cfxReduceScatter(ptr(in), ptr(out), out.numel(), dt, spec.op, c->get(), nullptr), "reduce_scatter");
    return keep(in);
  };
  return enqueue(OpType::REDUCE_SCATTER, "conflux:reduce_scatter", outputs, {std::move(op)}, method, opts.asyncOp);
}

// Inputs of different sizes (this rank's output as long as its own block): cfxReduceScatterv.
Op ConfluxBackend::reduceScattervOp(const char* method, const at::Tensor& output, const std::vector<at::Tensor>& list,
                                    const c10d::ReduceOp& op) {
  checkDense(method, output);
  checkUnevenList(method, list, size_, rank_, output);
  const ReduceSpec spec = reduceOp(method, op, output.scalar_type());
  const cfxDataType_t dt = reductionType(method, output.scalar_type());
  std::vector<size_t> counts;
  for (const auto& t : list) counts.push_back(static_cast<size_t>(t.numel()));
  return [c = comm_, method, output, list, spec, dt, counts] {
    std::vector<at::Tensor> flat;
    for (const auto& t : list) flat.push_back(t.reshape(-1));
    at::Tensor in = premultiplied(at::cat(flat), spec);
    c->check(cfxReduceScatterv(ptr(in), ptr(output), counts.data(), dt, spec.op, c->get(), nullptr), method);
    return keep(in);
  };
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                    const c10d::ReduceScatterOptions& opts) {
  const char* method = "reduce_scatter_tensor";
  if (onCuda(method, {output, input})) {
    return reduceScatterOnStream(OpType::_REDUCE_SCATTER_BASE, "conflux:reduce_scatter_tensor", method, {output},
                                 {input}, opts.reduceOp);
  }
  return enqueue(OpType::_REDUCE_SCATTER_BASE, "conflux:reduce_scatter_tensor", {output},
                 {reduceScatterBaseOp(method, output, input, opts.reduceOp)}, method, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                               std::vector<at::Tensor>& inputs,
                                                                               const c10d::ReduceScatterOptions& opts) {
  const char* method = "reduce_scatter_tensor_coalesced";
  TORCH_CHECK(outputs.size() == inputs.size(), "conflux ", method, ": ", outputs.size(), " outputs for ",
              inputs.size(), " inputs");
  std::vector<at::Tensor> all = outputs;
  all.insert(all.end(), inputs.begin(), inputs.end());
  if (onCuda(method, all)) {
    return reduceScatterOnStream(OpType::COALESCED, "conflux:reduce_scatter_tensor_coalesced", method, outputs, inputs,
                                 opts.reduceOp);
  }
  std::vector<Op> ops;
  for (size_t i = 0; i < outputs.size(); ++i) {
    ops.push_back(reduceScatterBaseOp(method, outputs[i], inputs[i], opts.reduceOp));
  }
  return enqueue(OpType::COALESCED, "conflux:reduce_scatter_tensor_coalesced", outputs, std::move(ops), method, opts.asyncOp);
}

// ---- data movement (any dtype, as bytes) --------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ConfluxBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                         const c10d::BroadcastOptions& opts) {
  checkSingle("broadcast", tensors);
  checkRank("broadcast", "root", opts.rootRank, size_);
  TORCH_CHECK(opts.rootTensor == 0, "conflux broadcast: rootTensor must be 0 (one tensor per rank)");
  const at::Tensor t = tensors[0];
  const int root = static_cast<int>(opts.rootRank);
  if (onCuda("broadcast", tensors)) return broadcastOnStream(t, root);
  Op op = [c = comm_, t, root]() -> Finish {
    c->check(cfxBroadcast(ptr(t), ptr(t), nbytes(t), cfxUint8, root, c->get(), nullptr), "broadcast");
    return [] {};
  };
  return enqueue(OpType::BROADCAST, "conflux:broadcast", tensors, {std::move(op)}, "broadcast", opts.asyncOp);
}

void ConfluxBackend::checkAllgatherBase(const char* method, const at::Tensor& output, const at::Tensor& input) {
  checkDense(method, output);
  checkDense(method, input);
  checkSameType(method, output, input);
  TORCH_CHECK(output.numel() == input.numel() * size_, "conflux ", method, ": the output must have group size (",
              size_, ") times the input's elements (", input.numel(), "), got ", output.numel());
}

Op ConfluxBackend::allgatherBaseOp(const char* method, const at::Tensor& output, const at::Tensor& input) {
  checkAllgatherBase(method, output, input);
  return [c = comm_, method, output, input]() -> Finish {
    c->check(cfxAllGather(ptr(input), ptr(output), nbytes(input), cfxUint8, c->get(), nullptr), method);
    return [] {};
  };
}

Op ConfluxBackend::allgatherOp(const char* method, const std::vector<at::Tensor>& outputs, const at::Tensor& input) {
  checkDense(method, input);
  if (!sameSizes(outputs, input)) return allgathervOp(method, outputs, input);
  checkList(method, outputs, size_, input);
  if (adjacent(outputs)) return allgatherBaseOp(method, flatView(outputs, input.numel() * size_), input.view(-1));
  return [c = comm_, method, outputs, input]() -> Finish {
    at::Tensor flat = at::empty({input.numel() * static_cast<int64_t>(outputs.size())}, input.options());
    c->check(cfxAllGather(ptr(input), ptr(flat), nbytes(input), cfxUint8, c->get(), nullptr), method);
    return [outputs, input, flat] {
      for (size_t i = 0; i < outputs.size(); ++i) {
        outputs[i].view(-1).copy_(flat.narrow(0, static_cast<int64_t>(i) * input.numel(), input.numel()));
      }
    };
  };
}

// Outputs of different sizes (each rank's block as long as its input): cfxAllGatherv into one
// buffer, then copied out.
Op ConfluxBackend::allgathervOp(const char* method, const std::vector<at::Tensor>& outputs, const at::Tensor& input) {
  checkUnevenList(method, outputs, size_, rank_, input);
  std::vector<size_t> counts, displs;
  size_t total = 0;
  for (const auto& t : outputs) {
    displs.push_back(total);
    counts.push_back(nbytes(t));
    total += nbytes(t);
  }
  return [c = comm_, method, outputs, input, counts, displs, total]() -> Finish {
    at::Tensor flat = at::empty({static_cast<int64_t>(total)}, input.options().dtype(at::kByte));
    c->check(cfxAllGatherv(ptr(input), nbytes(input), ptr(flat), counts.data(), displs.data(), cfxUint8, c->get(),
                           nullptr),
             method);
    return [outputs, flat, counts, displs] {
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (counts[i] > 0) std::memcpy(ptr(outputs[i]), static_cast<char*>(ptr(flat)) + displs[i], counts[i]);
      }
    };
  };
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::AllgatherOptions& opts) {
  checkSingle("allgather", inputs);
  TORCH_CHECK(outputs.size() == 1, "conflux allgather: expects one output list, got ", outputs.size());
  std::vector<at::Tensor> all = outputs[0];
  all.push_back(inputs[0]);
  if (onCuda("allgather", all)) return allgatherListOnStream(outputs[0], inputs[0]);
  return enqueue(OpType::ALLGATHER, "conflux:all_gather", outputs[0], {allgatherOp("allgather", outputs[0], inputs[0])},
                 "allgather", opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                               const c10d::AllgatherOptions& opts) {
  const char* method = "all_gather_into_tensor";
  if (onCuda(method, {output, input})) {
    return allgatherOnStream(OpType::_ALLGATHER_BASE, "conflux:all_gather_into_tensor", method, {output}, {input});
  }
  return enqueue(OpType::_ALLGATHER_BASE, "conflux:all_gather_into_tensor", {output},
                 {allgatherBaseOp(method, output, input)}, method, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                                   std::vector<at::Tensor>& inputs,
                                                                   const c10d::AllgatherOptions& opts) {
  // outputLists[r][i] receives rank r's inputs[i] (one list per rank, as Gloo's).
  const char* method = "allgather_coalesced";
  TORCH_CHECK(static_cast<int>(outputLists.size()) == size_, "conflux ", method, ": expected one output list per "
              "rank (", size_, "), got ", outputLists.size());
  std::vector<at::Tensor> every = flatten(outputLists);
  every.insert(every.end(), inputs.begin(), inputs.end());
  if (onCuda(method, every)) {
    HostCopies h;
    std::vector<std::vector<at::Tensor>> outs;
    for (const auto& list : outputLists) outs.push_back(h.out(list));
    std::vector<at::Tensor> ins = HostCopies::in(inputs);
    return copiedBack(OpType::ALLGATHER_COALESCED, "conflux:all_gather_coalesced", every[0],
                      allgather_coalesced(outs, ins, opts), h.outputs);
  }
  std::vector<Op> ops;
  std::vector<at::Tensor> all;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<at::Tensor> outputs;
    for (const auto& list : outputLists) {
      TORCH_CHECK(list.size() == inputs.size(), "conflux ", method, ": every output list must hold ",
                  inputs.size(), " tensors (one per input), got ", list.size());
      outputs.push_back(list[i]);
    }
    ops.push_back(allgatherOp(method, outputs, inputs[i]));
  }
  for (const auto& list : outputLists) all.insert(all.end(), list.begin(), list.end());
  return enqueue(OpType::ALLGATHER_COALESCED, "conflux:all_gather_coalesced", all, std::move(ops), method, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                               std::vector<at::Tensor>& inputs,
                                                                               const c10d::AllgatherOptions& opts) {
  const char* method = "allgather_into_tensor_coalesced";
  TORCH_CHECK(outputs.size() == inputs.size(), "conflux ", method, ": ", outputs.size(), " outputs for ",
              inputs.size(), " inputs");
  std::vector<at::Tensor> all = outputs;
  all.insert(all.end(), inputs.begin(), inputs.end());
  if (onCuda(method, all)) {
    return allgatherOnStream(OpType::COALESCED, "conflux:all_gather_into_tensor_coalesced", method, outputs, inputs);
  }
  std::vector<Op> ops;
  for (size_t i = 0; i < outputs.size(); ++i) ops.push_back(allgatherBaseOp(method, outputs[i], inputs[i]));
  return enqueue(OpType::COALESCED, "conflux:all_gather_into_tensor_coalesced", outputs, std::move(ops), method, opts.asyncOp);
}

// ---- grouped send/recv forms --------------------------------------------------------------------

namespace {
Op sendOp(const std::shared_ptr<Communicator>& c, const char* method, const at::Tensor& t, size_t off, size_t bytes,
          int peer) {
  return [c, method, t, off, bytes, peer]() -> Finish {
    c->check(cfxSend(static_cast<char*>(ptr(t)) + off, bytes, cfxUint8, peer, c->get(), nullptr), method);
    return [] {};
  };
}
Op recvOp(const std::shared_ptr<Communicator>& c, const char* method, const at::Tensor& t, size_t off, size_t bytes,
          int peer) {
  return [c, method, t, off, bytes, peer]() -> Finish {
    c->check(cfxRecv(static_cast<char*>(ptr(t)) + off, bytes, cfxUint8, peer, c->get(), nullptr), method);
    return [] {};
  };
}
// This rank's own block, copied after the group has run (so a failed group changes nothing).
Op copyOp(const at::Tensor& dst, size_t dstOff, const at::Tensor& src, size_t srcOff, size_t bytes) {
  return [dst, dstOff, src, srcOff, bytes]() -> Finish {
    return [dst, dstOff, src, srcOff, bytes] {
      if (bytes > 0) {
        std::memmove(static_cast<char*>(ptr(dst)) + dstOff, static_cast<char*>(ptr(src)) + srcOff, bytes);
      }
    };
  };
}
}  // namespace

c10::intrusive_ptr<c10d::Work> ConfluxBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::GatherOptions& opts) {
  const char* method = "gather";
  checkSingle(method, inputs);
  checkRank(method, "root", opts.rootRank, size_);
  std::vector<at::Tensor> every = flatten(outputs);
  every.push_back(inputs[0]);
  if (onCuda(method, every)) {
    HostCopies h;
    std::vector<std::vector<at::Tensor>> outs;
    for (const auto& list : outputs) outs.push_back(h.out(list));
    std::vector<at::Tensor> ins = HostCopies::in(inputs);
    return copiedBack(OpType::GATHER, "conflux:gather", inputs[0], gather(outs, ins, opts), h.outputs);
  }
  const int root = static_cast<int>(opts.rootRank);
  const at::Tensor in = inputs[0];
  std::vector<Op> ops;
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1, "conflux gather: the root expects one output list, got ", outputs.size());
    checkList(method, outputs[0], size_, in);
    outs = outputs[0];
    for (int p = 0; p < size_; ++p) {
      if (p != root) ops.push_back(recvOp(comm_, method, outs[p], 0, nbytes(in), p));
    }
    ops.push_back(copyOp(outs[root], 0, in, 0, nbytes(in)));
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "conflux gather: only the root passes an output list");
    ops.push_back(sendOp(comm_, method, in, 0, nbytes(in), root));
  }
  return enqueue(OpType::GATHER, "conflux:gather", outs, std::move(ops), method, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::scatter(std::vector<at::Tensor>& outputs,
                                                       std::vector<std::vector<at::Tensor>>& inputs,
                                                       const c10d::ScatterOptions& opts) {
  const char* method = "scatter";
  checkSingle(method, outputs);
  checkRank(method, "root", opts.rootRank, size_);
  std::vector<at::Tensor> every = flatten(inputs);
  every.push_back(outputs[0]);
  if (onCuda(method, every)) {
    HostCopies h;
    std::vector<at::Tensor> outs = h.out(outputs);
    std::vector<std::vector<at::Tensor>> ins;
    for (const auto& list : inputs) ins.push_back(HostCopies::in(list));
    return copiedBack(OpType::SCATTER, "conflux:scatter", outputs[0], scatter(outs, ins, opts), h.outputs);
  }
  const int root = static_cast<int>(opts.rootRank);
  const at::Tensor out = outputs[0];
  std::vector<Op> ops;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1, "conflux scatter: the root expects one input list, got ", inputs.size());
    checkList(method, inputs[0], size_, out);
    const std::vector<at::Tensor> ins = inputs[0];
    for (int p = 0; p < size_; ++p) {
      if (p != root) ops.push_back(sendOp(comm_, method, ins[p], 0, nbytes(out), p));
    }
    ops.push_back(copyOp(out, 0, ins[root], 0, nbytes(out)));
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                "conflux scatter: only the root passes an input list");
    ops.push_back(recvOp(comm_, method, out, 0, nbytes(out), root));
  }
  return enqueue(OpType::SCATTER, "conflux:scatter", outputs, std::move(ops), method, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                             std::vector<int64_t>& outputSplits,
                                                             std::vector<int64_t>& inputSplits,
                                                             const c10d::AllToAllOptions& opts) {
  const char* method = "alltoall_base";
  checkDense(method, output);
  checkDense(method, input);
  checkSameType(method, output, input);
  const bool cuda = onCuda(method, {output, input});
  if (outputSplits.empty() && inputSplits.empty()) {
    TORCH_CHECK(output.numel() == input.numel() && input.numel() % size_ == 0, "conflux alltoall_base: with equal "
                "splits input and output must have the same number of elements, divisible by the group size (",
                size_, "), got ", input.numel(), " and ", output.numel());
    if (cuda) return alltoallOnStream(output, input);
    Op op = [c = comm_, output, input]() -> Finish {
      const size_t block = nbytes(input) / c->size();
      c->check(cfxAlltoAll(ptr(input), ptr(output), block, cfxUint8, c->get(), nullptr), "alltoall_base");
      return [] {};
    };
    return enqueue(OpType::ALLTOALL_BASE, "conflux:all_to_all_single", {output}, {std::move(op)}, method, opts.asyncOp);
  }
  if (cuda) {
    HostCopies h;
    at::Tensor out = h.out(output);
    at::Tensor in = input.cpu();
    return copiedBack(OpType::ALLTOALL_BASE, "conflux:all_to_all_single", output,
                      alltoall_base(out, in, outputSplits, inputSplits, opts), h.outputs);
  }
  const Blocks in = alltoallBlocks("input", input, inputSplits, size_);
  const Blocks out = alltoallBlocks("output", output, outputSplits, size_);
  TORCH_CHECK(in.count[rank_] == out.count[rank_], "conflux alltoall_base: this rank sends itself ",
              in.count[rank_], " bytes but receives ", out.count[rank_]);
  Op op = [c = comm_, output, input, in, out]() -> Finish {
    c->check(cfxAlltoAllv(ptr(input), in.count.data(), in.offset.data(), ptr(output), out.count.data(),
                          out.offset.data(), cfxUint8, c->get(), nullptr),
             "alltoall_base");
    return [] {};
  };
  return enqueue(OpType::ALLTOALL_BASE, "conflux:all_to_all_single", {output}, {std::move(op)}, method, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::AllToAllOptions& opts) {
  const char* method = "alltoall";
  TORCH_CHECK(static_cast<int>(outputs.size()) == size_ && static_cast<int>(inputs.size()) == size_,
              "conflux alltoall: expects group size (", size_, ") inputs and outputs, got ", inputs.size(), " and ",
              outputs.size());
  std::vector<at::Tensor> every = outputs;
  every.insert(every.end(), inputs.begin(), inputs.end());
  if (onCuda(method, every)) {
    HostCopies h;
    std::vector<at::Tensor> outs = h.out(outputs);
    std::vector<at::Tensor> ins = HostCopies::in(inputs);
    return copiedBack(OpType::ALLTOALL, "conflux:all_to_all", outputs[0], alltoall(outs, ins, opts), h.outputs);
  }
  for (int p = 0; p < size_; ++p) {
    checkDense(method, outputs[p]);
    checkDense(method, inputs[p]);
    checkSameType(method, outputs[p], inputs[0]);
    checkSameType(method, inputs[p], inputs[0]);
  }
  TORCH_CHECK(nbytes(outputs[rank_]) == nbytes(inputs[rank_]), "conflux alltoall: this rank's own input and output "
              "differ in size (", inputs[rank_].numel(), " and ", outputs[rank_].numel(), " elements)");
  std::vector<Op> ops;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    if (nbytes(inputs[p]) > 0) ops.push_back(sendOp(comm_, method, inputs[p], 0, nbytes(inputs[p]), p));
    if (nbytes(outputs[p]) > 0) ops.push_back(recvOp(comm_, method, outputs[p], 0, nbytes(outputs[p]), p));
  }
  ops.push_back(copyOp(outputs[rank_], 0, inputs[rank_], 0, nbytes(inputs[rank_])));
  return enqueue(OpType::ALLTOALL, "conflux:all_to_all", outputs, std::move(ops), method, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  checkSingle("send", tensors);
  checkRank("send", "destination", dstRank, size_);
  at::Tensor t = tensors[0];
  if (onCuda("send", tensors)) {
    if (!coalescing()) return p2pOnStream(OpType::SEND, t, dstRank);
    t = t.cpu();  // inside a group: the send runs from a host copy
  }
  return enqueue(OpType::SEND, "conflux:send", {t}, {sendOp(comm_, "send", t, 0, nbytes(t), dstRank)}, "send");
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  checkSingle("recv", tensors);
  checkRank("recv", "source", srcRank, size_);
  at::Tensor t = tensors[0];
  if (onCuda("recv", tensors)) {
    if (!coalescing()) return p2pOnStream(OpType::RECV, t, srcRank);
    at::Tensor host = t.cpu();  // inside a group: received on the host, copied back at endCoalescing
    std::lock_guard<std::mutex> lock(coalesceMutex_);
    coalescedCopies_.emplace_back(t, host);
    t = host;
  }
  return enqueue(OpType::RECV, "conflux:recv", {t}, {recvOp(comm_, "recv", t, 0, nbytes(t), srcRank)}, "recv");
}

c10::intrusive_ptr<c10d::Work> ConfluxBackend::barrier(const c10d::BarrierOptions& opts) {
  // As NCCL's backend: an AllReduce of one element, in issue order after everything before it.
  at::Tensor token = at::zeros({1}, at::kByte);
  Op op = [c = comm_, token]() -> Finish {
    c->check(cfxAllReduce(ptr(token), ptr(token), 1, cfxUint8, cfxMax, c->get(), nullptr), "barrier");
    return [] {};
  };
  return enqueue(OpType::BARRIER, "conflux:barrier", {}, {std::move(op)}, "barrier", opts.asyncOp);
}

}  // namespace torch_conflux
