// The Gloo backend: Gloo's collectives over its TCP transport, ranks rendezvousing through a
// FileStore. Rank and size come from the launcher (cfxrun, torchrun, Open MPI, Slurm). Gloo has
// no bf16/fp8 types, no average and no reduce-scatter in its options API; those rows are skipped,
// as are in-place forms it does not have.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "backend.h"

namespace cfxperf {

namespace {

int envInt(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (const char* v = std::getenv(n)) return std::atoi(v);
  }
  return -1;
}

std::string jobKey() {
  for (const char* n : {"CFX_UNIQUE_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "MASTER_PORT"}) {
    if (const char* v = std::getenv(n)) return std::to_string(std::hash<std::string>{}(v));
  }
  throw std::runtime_error("gloo backend: no job id in the environment (run under cfxrun, torchrun, mpirun or srun)");
}

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <class T>
ReduceFn reduceFn(cfxRedOp_t op) {
  switch (op) {
    case cfxSum: return static_cast<ReduceFn>(&gloo::sum<T>);
    case cfxProd: return static_cast<ReduceFn>(&gloo::product<T>);
    case cfxMax: return static_cast<ReduceFn>(&gloo::max<T>);
    case cfxMin: return static_cast<ReduceFn>(&gloo::min<T>);
    default: return nullptr;
  }
}

class GlooBackend : public Backend {
 public:
  GlooBackend() {
    rank_ = envInt({"CFX_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"});
    size_ = envInt({"CFX_NRANKS", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"});
    if (rank_ < 0 || size_ < 1) throw std::runtime_error("gloo backend: rank and size not found in the environment");
    dir_ = "/tmp/cfx-gloo-" + jobKey();
    mkdir(dir_.c_str(), 0700);
    gloo::rendezvous::FileStore store(dir_);
    gloo::transport::tcp::attr attr;
    attr.hostname = std::getenv("GLOO_HOSTNAME") ? std::getenv("GLOO_HOSTNAME") : "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
    ctx->connectFullMesh(store, dev);
    ctx_ = ctx;
  }
  ~GlooBackend() override {
    // Everyone is connected by now; the store's files are no longer needed.
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (rank_ == 0 && std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir_.c_str());
  }
  std::string name() const override { return "gloo"; }
  std::string device() const override { return "tcp"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  bool supports(Coll c, cfxDataType_t t, cfxRedOp_t op) const override {
    if (c == Coll::kReduceScatter || c == Coll::kAlltoAllv) return false;
    if (t == cfxBfloat16 || t == cfxFloat8e4m3 || t == cfxFloat8e5m2) return false;
    bool reduces = c == Coll::kAllReduce || c == Coll::kReduce;
    return !reduces || op != cfxAvg;
  }
  bool supportsInPlace(Coll c) const override { return c == Coll::kAllReduce || c == Coll::kBroadcast; }

  void run(const OpArgs& a, bool) override {
    switch (a.type) {
      case cfxInt8: return runTyped<int8_t>(a);
      case cfxUint8: return runTyped<uint8_t>(a);
      case cfxInt32: return runTyped<int32_t>(a);
      case cfxUint32: return runTyped<uint32_t>(a);
      case cfxInt64: return runTyped<int64_t>(a);
      case cfxUint64: return runTyped<uint64_t>(a);
      case cfxFloat16: return runTyped<gloo::float16>(a);
      case cfxFloat32: return runTyped<float>(a);
      case cfxFloat64: return runTyped<double>(a);
      default: throw std::runtime_error("gloo backend: unsupported datatype");
    }
  }

  void sync() override {}

  void allGatherBytes(const void* in, void* out, size_t bytes) override {
    gloo::AllgatherOptions o(ctx_);
    o.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytes);
    o.setOutput(static_cast<uint8_t*>(out), bytes * size_);
    gloo::allgather(o);
  }

 private:
  template <class T>
  void runTyped(const OpArgs& a) {
    T* send = static_cast<T*>(const_cast<void*>(a.send));
    T* recv = static_cast<T*>(a.recv);
    const size_t n = a.count;
    switch (a.coll) {
      case Coll::kAllReduce: {
        gloo::AllreduceOptions o(ctx_);
        if (!a.inPlace) o.setInput(send, n);
        o.setOutput(recv, n);  // output only: in place
        o.setReduceFunction(reduceFn<T>(a.op));
        gloo::allreduce(o);
        break;
      }
      case Coll::kReduce: {
        gloo::ReduceOptions o(ctx_);
        o.setInput(send, n);
        o.setOutput(recv, n);
        o.setRoot(a.root);
        o.setReduceFunction(reduceFn<T>(a.op));
        gloo::reduce(o);
        break;
      }
      case Coll::kBroadcast: {
        gloo::BroadcastOptions o(ctx_);
        if (rank_ == a.root && !a.inPlace) o.setInput(send, n);
        o.setOutput(recv, n);
        o.setRoot(a.root);
        gloo::broadcast(o);
        break;
      }
      case Coll::kAllGather: {
        gloo::AllgatherOptions o(ctx_);
        o.setInput(send, n);
        o.setOutput(recv, n * size_);
        gloo::allgather(o);
        break;
      }
      case Coll::kAlltoAll: {
        gloo::AlltoallOptions o(ctx_);
        o.setInput(send, n * size_);
        o.setOutput(recv, n * size_);
        gloo::alltoall(o);
        break;
      }
      case Coll::kSendRecv: {
        const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
        auto out = ctx_->createUnboundBuffer(send, n * sizeof(T));
        auto in = ctx_->createUnboundBuffer(recv, n * sizeof(T));
        out->send(next, kSlot);
        in->recv(prev, kSlot);
        out->waitSend();
        in->waitRecv();
        break;
      }
      case Coll::kReduceScatter: throw std::runtime_error("gloo backend: no reduce-scatter");
      case Coll::kAlltoAllv: throw std::runtime_error("gloo backend: no alltoallv");
    }
  }

  static constexpr uint64_t kSlot = 0xcf0;
  std::shared_ptr<gloo::Context> ctx_;
  std::string dir_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Backend> makeBackend(int&, char**&, int) { return std::make_unique<GlooBackend>(); }

}  // namespace cfxperf
