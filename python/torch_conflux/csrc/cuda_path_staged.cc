// CudaPath over libconflux_cuda (conflux/conflux_cuda.h): each call goes to the cfxCuda* collective
// of the same name on the caller's stream.
#include <c10/util/Exception.h>

#include <string>

#include "conflux/conflux_cuda.h"
#include "cuda_path.h"

namespace torch_conflux {

struct CudaPath::Staged {
  cfxCudaComm_t comm = nullptr;
  int device = -1;
};

namespace {

[[noreturn]] void fail(const Communicator& c, const char* method, cfxResult_t r, cfxCudaComm_t staged) {
  std::string text = cfxGetErrorString(r);
  const char* detail = staged != nullptr ? cfxCudaGetLastError(staged) : cfxGetLastError(nullptr);
  if (detail != nullptr && *detail != '\0') text += std::string(": ") + detail;
  C10_THROW_ERROR(DistBackendError, std::string("conflux ") + method + " on CUDA tensors failed on rank " +
                                        std::to_string(c.rank()) + " of " + std::to_string(c.size()) + ": " + text);
}

cfxResult_t submit(const CudaCall& call, cfxCudaComm_t s, void* st) {
  const cfxDataType_t t = call.type;
  switch (call.coll) {
    case CudaColl::kAllReduce: return cfxCudaAllReduce(call.send, call.recv, call.count, t, call.op, s, st);
    case CudaColl::kReduce: return cfxCudaReduce(call.send, call.recv, call.count, t, call.op, call.root, s, st);
    case CudaColl::kBroadcast: return cfxCudaBroadcast(call.send, call.recv, call.count, t, call.root, s, st);
    case CudaColl::kAllGather: return cfxCudaAllGather(call.send, call.recv, call.count, t, s, st);
    case CudaColl::kReduceScatter: return cfxCudaReduceScatter(call.send, call.recv, call.count, t, call.op, s, st);
    case CudaColl::kAlltoAll: return cfxCudaAlltoAll(call.send, call.recv, call.count, t, s, st);
    case CudaColl::kSend: return cfxCudaSend(call.send, call.count, t, call.root, s, st);
    case CudaColl::kRecv: return cfxCudaRecv(call.recv, call.count, t, call.root, s, st);
  }
  return cfxInternalError;
}

}  // namespace

CudaPath::CudaPath(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)), staged_(new Staged) {}

CudaPath::~CudaPath() { close(); }

bool CudaPath::built() { return true; }

void CudaPath::issue(const char* method, const CudaCall& call, int device, void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (staged_->comm == nullptr) {
    const cfxResult_t r = cfxCudaCommCreate(comm_->get(), device, &staged_->comm);
    if (r != cfxSuccess) {
      staged_->comm = nullptr;
      fail(*comm_, method, r, nullptr);
    }
    staged_->device = device;
    used_.store(true, std::memory_order_release);
  }
  TORCH_CHECK(device == staged_->device, "conflux ", method, ": this process group's CUDA path is on cuda:",
              staged_->device, ", got tensors on cuda:", device, " (one device per rank, as with NCCL)");
  const cfxResult_t r = submit(call, staged_->comm, stream);
  if (r != cfxSuccess) fail(*comm_, method, r, staged_->comm);
}

void CudaPath::synchronize(const char* method) {
  if (!used_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (staged_->comm == nullptr) return;
  const cfxResult_t r = cfxCudaCommSynchronize(staged_->comm);
  if (r != cfxSuccess) fail(*comm_, method, r, staged_->comm);
}

void CudaPath::checkAsync(const char* method) {
  if (!used_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (staged_->comm == nullptr) return;
  cfxResult_t async = cfxSuccess;
  const cfxResult_t r = cfxCudaCommGetAsyncError(staged_->comm, &async);
  if (r != cfxSuccess) fail(*comm_, method, r, staged_->comm);
  if (async != cfxSuccess) fail(*comm_, method, async, staged_->comm);
}

void CudaPath::close() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (staged_->comm == nullptr) return;
  cfxCudaCommDestroy(staged_->comm);  // after an abort its calls fail at once, so this does not wait on peers
  staged_->comm = nullptr;
}

}  // namespace torch_conflux
