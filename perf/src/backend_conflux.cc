// The Conflux backend: the communicator comes from cfxCommInitFromEnv (cfxrun, torchrun, mpirun,
// srun). Non-blocking runs (-z 0, the default) go on a stream, as nccl-tests does on a CUDA stream.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backend.h"

namespace cfxperf {

namespace {

void check(cfxResult_t r, cfxComm_t comm, const char* what) {
  if (r != cfxSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cfxGetErrorString(r) + ": " + cfxGetLastError(comm));
  }
}

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
    cfxStreamDestroy(stream_);
    cfxCommDestroy(comm_);
  }
  std::string name() const override { return "conflux"; }
  std::string device() const override { return "shm"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool supports(Coll, cfxDataType_t, cfxRedOp_t) const override { return true; }

  void run(const OpArgs& a, bool blocking) override {
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
    }
  }

  void sync() override { check(cfxStreamSynchronize(stream_), comm_, "cfxStreamSynchronize"); }

  void allGatherBytes(const void* in, void* out, size_t bytes) override {
    check(cfxAllGather(in, out, bytes, cfxUint8, comm_, nullptr), comm_, "cfxAllGather");
  }

 private:
  cfxComm_t comm_ = nullptr;
  cfxStream_t stream_ = nullptr;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Backend> makeBackend(int&, char**&, int timeoutSeconds) {
  return std::make_unique<ConfluxBackend>(timeoutSeconds);
}

}  // namespace cfxperf
