// The Conflux backend: the communicator comes from cfxCommInitFromEnv (cfxrun, torchrun, mpirun,
// srun). Non-blocking runs (-z 0, the default) go on a stream, as nccl-tests does on a CUDA stream.
// In CUDA builds, device buffers go through the staged path (conflux/conflux_cuda.h) on a CUDA stream.
#ifdef CFX_PERF_CUDA
#include <cuda_runtime_api.h>

#include "conflux/conflux_cuda.h"
#endif

#include <cstdlib>
#include <stdexcept>
#include <cstring>
#include <string>

#include "backend.h"

namespace cfxperf {

namespace {

void check(cfxResult_t r, cfxComm_t comm, const char* what) {
  if (r != cfxSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cfxGetErrorString(r) + ": " + cfxGetLastError(comm));
  }
}

// -R 1: buffers from cfxMemAlloc, registered with the communicator (collectives run zero-copy).
class Registered : public DeviceMemory {
 public:
  explicit Registered(cfxComm_t comm) : comm_(comm) {}
  std::string name() const override { return "host, cfxMemAlloc"; }
  int device() const override { return -1; }
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    if (cfxMemAlloc(&p, bytes, comm_) != cfxSuccess) throw std::runtime_error(std::string("cfxMemAlloc: ") + cfxGetLastError(comm_));
    return p;
  }
  void release(void* p) override { cfxMemFree(p, comm_); }
  void upload(void* dst, const void* host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void download(void* host, const void* src, size_t bytes) override { std::memcpy(host, src, bytes); }

 private:
  cfxComm_t comm_;
};

class ConfluxBackend : public Backend {
 public:
  explicit ConfluxBackend(int timeoutSeconds) {
    if (timeoutSeconds > 0) setenv("CFX_TIMEOUT", std::to_string(timeoutSeconds).c_str(), 1);
    check(cfxCommInitFromEnv(&comm_), nullptr, "cfxCommInitFromEnv");
    check(cfxCommUserRank(comm_, &rank_), comm_, "cfxCommUserRank");
    check(cfxCommCount(comm_, &size_), comm_, "cfxCommCount");
    check(cfxStreamCreate(&stream_), comm_, "cfxStreamCreate");
  }
  ~ConfluxBackend() override {
#ifdef CFX_PERF_CUDA
    if (cuda_ != nullptr) {
      cfxCudaCommDestroy(cuda_);
      cudaStreamDestroy(cudaStream_);
    }
#endif
    cfxStreamDestroy(stream_);
    cfxCommDestroy(comm_);
  }
  std::string name() const override { return "conflux"; }
  std::string device() const override { return "shm"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool supports(Coll c, cfxDataType_t, cfxRedOp_t) const override {
    if (onDevice() && c == Coll::kAlltoAllv) return false;  // the staged GPU path has no AlltoAllv
    return !(onDevice() && c == Coll::kSendRecv && size_ == 1);  // a staged send to oneself would wait for itself
  }

#ifdef CFX_PERF_CUDA
  bool acceptsDevice() const override { return true; }
  void useDevice(int device) override {
    if (cudaSetDevice(device) != cudaSuccess || cudaStreamCreateWithFlags(&cudaStream_, cudaStreamNonBlocking) != cudaSuccess) {
      throw std::runtime_error("cannot create a CUDA stream on device " + std::to_string(device));
    }
    if (cfxCudaCommCreate(comm_, device, &cuda_) != cfxSuccess) {
      throw std::runtime_error(std::string("cfxCudaCommCreate: ") + cfxCudaGetLastError(nullptr));
    }
  }
#endif

  std::unique_ptr<DeviceMemory> registeredMemory() override { return std::make_unique<Registered>(comm_); }

  void run(const OpArgs& a, bool blocking) override {
#ifdef CFX_PERF_CUDA
    if (cuda_ != nullptr) {
      runDevice(a);
      if (blocking) sync();
      return;
    }
#endif
    cfxStream_t s = blocking ? nullptr : stream_;
    switch (a.coll) {
      case Coll::kAllReduce: check(cfxAllReduce(a.send, a.recv, a.count, a.type, a.op, comm_, s), comm_, "cfxAllReduce"); break;
      case Coll::kAllGather: check(cfxAllGather(a.send, a.recv, a.count, a.type, comm_, s), comm_, "cfxAllGather"); break;
      case Coll::kReduceScatter:
        check(cfxReduceScatter(a.send, a.recv, a.count, a.type, a.op, comm_, s), comm_, "cfxReduceScatter");
        break;
      case Coll::kAlltoAll: check(cfxAlltoAll(a.send, a.recv, a.count, a.type, comm_, s), comm_, "cfxAlltoAll"); break;
      case Coll::kBroadcast: check(cfxBroadcast(a.send, a.recv, a.count, a.type, a.root, comm_, s), comm_, "cfxBroadcast"); break;
      case Coll::kReduce: check(cfxReduce(a.send, a.recv, a.count, a.type, a.op, a.root, comm_, s), comm_, "cfxReduce"); break;
      case Coll::kSendRecv: {
        int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
        check(cfxGroupStart(), comm_, "cfxGroupStart");
        check(cfxSend(a.send, a.count, a.type, next, comm_, s), comm_, "cfxSend");
        check(cfxRecv(a.recv, a.count, a.type, prev, comm_, s), comm_, "cfxRecv");
        check(cfxGroupEnd(), comm_, "cfxGroupEnd");
        break;
      }
      case Coll::kAlltoAllv:
        check(cfxAlltoAllv(a.send, a.sendCounts, a.sendDispls, a.recv, a.recvCounts, a.recvDispls, a.type, comm_, s),
              comm_, "cfxAlltoAllv");
        break;
    }
  }

  void sync() override {
#ifdef CFX_PERF_CUDA
    if (cuda_ != nullptr) {
      if (cudaStreamSynchronize(cudaStream_) != cudaSuccess) throw std::runtime_error("cudaStreamSynchronize failed");
      checkCuda(cfxCudaCommSynchronize(cuda_), "cfxCudaCommSynchronize");
      cfxResult_t async = cfxSuccess;
      checkCuda(cfxCudaCommGetAsyncError(cuda_, &async), "cfxCudaCommGetAsyncError");
      checkCuda(async, "a staged operation");
      return;
    }
#endif
    check(cfxStreamSynchronize(stream_), comm_, "cfxStreamSynchronize");
  }

  void allGatherBytes(const void* in, void* out, size_t bytes) override {
    check(cfxAllGather(in, out, bytes, cfxUint8, comm_, nullptr), comm_, "cfxAllGather");
  }

 private:
#ifdef CFX_PERF_CUDA
  bool onDevice() const { return cuda_ != nullptr; }
  void checkCuda(cfxResult_t r, const char* what) const {
    if (r != cfxSuccess) throw std::runtime_error(std::string(what) + ": " + cfxGetErrorString(r) + ": " + cfxCudaGetLastError(cuda_));
  }
  // The same calls on device buffers; send/recv in an order that pairs up without a group (even
  // ranks send first), as the staged path runs one call after another.
  void runDevice(const OpArgs& a) {
    void* s = cudaStream_;
    switch (a.coll) {
      case Coll::kAllReduce: checkCuda(cfxCudaAllReduce(a.send, a.recv, a.count, a.type, a.op, cuda_, s), "cfxCudaAllReduce"); break;
      case Coll::kAllGather: checkCuda(cfxCudaAllGather(a.send, a.recv, a.count, a.type, cuda_, s), "cfxCudaAllGather"); break;
      case Coll::kReduceScatter:
        checkCuda(cfxCudaReduceScatter(a.send, a.recv, a.count, a.type, a.op, cuda_, s), "cfxCudaReduceScatter");
        break;
      case Coll::kAlltoAll: checkCuda(cfxCudaAlltoAll(a.send, a.recv, a.count, a.type, cuda_, s), "cfxCudaAlltoAll"); break;
      case Coll::kBroadcast:
        checkCuda(cfxCudaBroadcast(a.send, a.recv, a.count, a.type, a.root, cuda_, s), "cfxCudaBroadcast");
        break;
      case Coll::kReduce:
        checkCuda(cfxCudaReduce(a.send, a.recv, a.count, a.type, a.op, a.root, cuda_, s), "cfxCudaReduce");
        break;
      case Coll::kSendRecv: {
        const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
        for (int step = 0; step < 2; ++step) {
          if ((step == 0) == (rank_ % 2 == 0)) {
            checkCuda(cfxCudaSend(a.send, a.count, a.type, next, cuda_, s), "cfxCudaSend");
          } else {
            checkCuda(cfxCudaRecv(a.recv, a.count, a.type, prev, cuda_, s), "cfxCudaRecv");
          }
        }
        break;
      }
      case Coll::kAlltoAllv: break;  // not supported (supports())
    }
  }
  cfxCudaComm_t cuda_ = nullptr;
  cudaStream_t cudaStream_ = nullptr;
#else
  bool onDevice() const { return false; }
#endif
  cfxComm_t comm_ = nullptr;
  cfxStream_t stream_ = nullptr;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Backend> makeBackend(int&, char**&, int timeoutSeconds) {
  return std::make_unique<ConfluxBackend>(timeoutSeconds);
}

}  // namespace cfxperf
