// The MPI backend (Open MPI or MPICH): the same measurement loop over MPI's collectives. MPI has
// no fp16/bf16/fp8 types and no average, so those rows are skipped. Calls are blocking.
#include <mpi.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend.h"

namespace cfxperf {

namespace {

MPI_Datatype mpiType(cfxDataType_t t) {
  switch (t) {
    case cfxInt8: return MPI_INT8_T;
    case cfxUint8: return MPI_UINT8_T;
    case cfxInt32: return MPI_INT32_T;
    case cfxUint32: return MPI_UINT32_T;
    case cfxInt64: return MPI_INT64_T;
    case cfxUint64: return MPI_UINT64_T;
    case cfxFloat32: return MPI_FLOAT;
    case cfxFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpiOp(cfxRedOp_t op) {
  switch (op) {
    case cfxSum: return MPI_SUM;
    case cfxProd: return MPI_PROD;
    case cfxMax: return MPI_MAX;
    case cfxMin: return MPI_MIN;
    default: return MPI_OP_NULL;
  }
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
}

class MpiBackend : public Backend {
 public:
  MpiBackend(int& argc, char**& argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiBackend() override { MPI_Finalize(); }
  std::string name() const override { return "mpi"; }
  std::string device() const override {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    std::string s(v, len);
    return s.substr(0, s.find_first_of(",\n"));
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool supports(Coll c, cfxDataType_t t, cfxRedOp_t op) const override {
    if (mpiType(t) == MPI_DATATYPE_NULL) return false;
    bool reduces = c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter;
    return !reduces || mpiOp(op) != MPI_OP_NULL;
  }

  void run(const OpArgs& a, bool) override {
    MPI_Datatype dt = mpiType(a.type);
    MPI_Op op = mpiOp(a.op);
    const int n = static_cast<int>(a.count);
    const void* in = a.inPlace ? MPI_IN_PLACE : a.send;
    MPI_Comm w = MPI_COMM_WORLD;
    switch (a.coll) {
      case Coll::kAllReduce: check(MPI_Allreduce(in, a.recv, n, dt, op, w), "MPI_Allreduce"); break;
      case Coll::kReduce: {
        const void* s = (a.inPlace && rank_ == a.root) ? MPI_IN_PLACE : a.send;
        check(MPI_Reduce(s, a.recv, n, dt, op, a.root, w), "MPI_Reduce");
        break;
      }
      case Coll::kBroadcast:
        // Out of place: the root's data must be in recvbuff first (MPI_Bcast is in place).
        if (!a.inPlace && rank_ == a.root) std::memcpy(a.recv, a.send, a.count * typeBytes(dt));
        check(MPI_Bcast(a.recv, n, dt, a.root, w), "MPI_Bcast");
        break;
      case Coll::kAllGather: check(MPI_Allgather(in, n, dt, a.recv, n, dt, w), "MPI_Allgather"); break;
      case Coll::kReduceScatter:
        if (a.inPlace) {
          // MPI's in-place result lands at the start of the buffer; NCCL's at rank * count.
          void* whole = const_cast<void*>(a.send);
          check(MPI_Reduce_scatter_block(MPI_IN_PLACE, whole, n, dt, op, w), "MPI_Reduce_scatter_block");
          std::memmove(a.recv, whole, a.count * typeBytes(dt));
        } else {
          check(MPI_Reduce_scatter_block(a.send, a.recv, n, dt, op, w), "MPI_Reduce_scatter_block");
        }
        break;
      case Coll::kAlltoAll: check(MPI_Alltoall(in, n, dt, a.recv, n, dt, w), "MPI_Alltoall"); break;
      case Coll::kAlltoAllv: {
        std::vector<int> sc(size_), sd(size_), rc(size_), rd(size_);
        for (int r = 0; r < size_; ++r) {
          sc[r] = static_cast<int>(a.sendCounts[r]);
          sd[r] = static_cast<int>(a.sendDispls[r]);
          rc[r] = static_cast<int>(a.recvCounts[r]);
          rd[r] = static_cast<int>(a.recvDispls[r]);
        }
        check(MPI_Alltoallv(a.send, sc.data(), sd.data(), dt, a.recv, rc.data(), rd.data(), dt, w), "MPI_Alltoallv");
        break;
      }
      case Coll::kSendRecv: {
        int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
        check(MPI_Sendrecv(a.send, n, dt, next, 0, a.recv, n, dt, prev, 0, w, MPI_STATUS_IGNORE), "MPI_Sendrecv");
        break;
      }
    }
  }

  void sync() override {}

  void allGatherBytes(const void* in, void* out, size_t bytes) override {
    check(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD),
          "MPI_Allgather");
  }

 private:
  static size_t typeBytes(MPI_Datatype dt) {
    int s = 0;
    MPI_Type_size(dt, &s);
    return static_cast<size_t>(s);
  }
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Backend> makeBackend(int& argc, char**& argv, int) { return std::make_unique<MpiBackend>(argc, argv); }

}  // namespace cfxperf
