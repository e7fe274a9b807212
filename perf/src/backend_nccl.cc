// The NCCL backend: the same measurement loop over NCCL's API (nccl.h), so NCCL and Conflux stand
// in one table. Run it on NCCL itself, or on Conflux's NCCL-ABI library by library path
// (LD_LIBRARY_PATH=<build>/nccl). Ranks come from the launcher as for Conflux's binaries: a Conflux
// communicator from cfxCommInitFromEnv carries NCCL's unique id and the runner's timings (host
// memory), NCCL carries the measured calls, on device buffers (NCCL's own) or, on the shim, host
// buffers too. Non-blocking runs (-z 0) are queued on one CUDA stream, as in nccl-tests.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backend.h"
#include "reference.h"

namespace cfxperf {

namespace {

void check(cfxResult_t r, cfxComm_t comm, const char* what) {
  if (r != cfxSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cfxGetErrorString(r) + ": " + cfxGetLastError(comm));
  }
}

class NcclBackend : public Backend {
 public:
  explicit NcclBackend(int timeoutSeconds) {
    if (timeoutSeconds > 0) setenv("CFX_TIMEOUT", std::to_string(timeoutSeconds).c_str(), 1);
    check(cfxCommInitFromEnv(&oob_), nullptr, "cfxCommInitFromEnv");
    check(cfxCommUserRank(oob_, &rank_), oob_, "cfxCommUserRank");
    check(cfxCommCount(oob_, &size_), oob_, "cfxCommCount");
    int version = 0;
    ncclGetVersion(&version);
    version_ = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
               std::to_string(version % 100);
  }
  ~NcclBackend() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    cfxCommDestroy(oob_);
  }
  std::string name() const override { return "nccl"; }
  std::string device() const override { return "NCCL " + version_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool supports(Coll, cfxDataType_t, cfxRedOp_t) const override { return true; }
  bool acceptsDevice() const override { return true; }
  void useDevice(int device) override {
    if (cudaSetDevice(device) != cudaSuccess || cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) {
      throw std::runtime_error("cannot create a CUDA stream on device " + std::to_string(device));
    }
  }

  void run(const OpArgs& a, bool blocking) override {
    ncclComm_t c = comm();
    const auto t = static_cast<ncclDataType_t>(a.type);
    const auto op = static_cast<ncclRedOp_t>(a.op);
    switch (a.coll) {
      case Coll::kAllReduce: ok(ncclAllReduce(a.send, a.recv, a.count, t, op, c, stream_), "ncclAllReduce"); break;
      case Coll::kAllGather: ok(ncclAllGather(a.send, a.recv, a.count, t, c, stream_), "ncclAllGather"); break;
      case Coll::kReduceScatter:
        ok(ncclReduceScatter(a.send, a.recv, a.count, t, op, c, stream_), "ncclReduceScatter");
        break;
      case Coll::kAlltoAll: ok(ncclAlltoAll(a.send, a.recv, a.count, t, c, stream_), "ncclAlltoAll"); break;
      case Coll::kBroadcast: ok(ncclBroadcast(a.send, a.recv, a.count, t, a.root, c, stream_), "ncclBroadcast"); break;
      case Coll::kReduce: ok(ncclReduce(a.send, a.recv, a.count, t, op, a.root, c, stream_), "ncclReduce"); break;
      case Coll::kSendRecv: {
        const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
        ok(ncclGroupStart(), "ncclGroupStart");
        ok(ncclSend(a.send, a.count, t, next, c, stream_), "ncclSend");
        ok(ncclRecv(a.recv, a.count, t, prev, c, stream_), "ncclRecv");
        ok(ncclGroupEnd(), "ncclGroupEnd");
        break;
      }
      case Coll::kAlltoAllv: {  // NCCL has none: what its users write, a group of sends and receives
        const size_t es = cfxtest::typeSize(a.type);
        ok(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < size_; ++r) {
          const auto* in = static_cast<const char*>(a.send) + a.sendDispls[r] * es;
          ok(ncclSend(in, a.sendCounts[r], t, r, c, stream_), "ncclSend");
          ok(ncclRecv(static_cast<char*>(a.recv) + a.recvDispls[r] * es, a.recvCounts[r], t, r, c, stream_), "ncclRecv");
        }
        ok(ncclGroupEnd(), "ncclGroupEnd");
        break;
      }
    }
    if (blocking) sync();
  }

  void sync() override {
    if (stream_ != nullptr && cudaStreamSynchronize(stream_) != cudaSuccess) {
      throw std::runtime_error(std::string("cudaStreamSynchronize: ") + cudaGetErrorString(cudaGetLastError()));
    }
    ncclResult_t async = ncclSuccess;
    if (comm_ != nullptr) ok(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
    ok(async, "an NCCL operation");
  }

  void allGatherBytes(const void* in, void* out, size_t bytes) override {
    check(cfxAllGather(in, out, bytes, cfxUint8, oob_, nullptr), oob_, "cfxAllGather");
  }

 private:
  // Made at the first call, after useDevice() chose the device (NCCL binds a communicator to the
  // device current at its creation).
  ncclComm_t comm() {
    if (comm_ != nullptr) return comm_;
    ncclUniqueId id{};
    if (rank_ == 0) ok(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check(cfxBroadcast(&id, &id, sizeof(id), cfxUint8, 0, oob_, nullptr), oob_, "cfxBroadcast of the unique id");
    ok(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
    return comm_;
  }
  void ok(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess) {
      throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r) + ": " + ncclGetLastError(comm_));
    }
  }

  cfxComm_t oob_ = nullptr;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int rank_ = 0, size_ = 1;
  std::string version_;
};

}  // namespace

std::unique_ptr<Backend> makeBackend(int&, char**&, int timeoutSeconds) {
  return std::make_unique<NcclBackend>(timeoutSeconds);
}

}  // namespace cfxperf
