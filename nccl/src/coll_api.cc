// NCCL's collectives, point-to-point calls and groups over Conflux's. Each call checks the
// communicator; device buffers go to the staged path on the caller's stream (device_route.h).
// Host buffers: the call resolves a PreMulSum op into Sum over a scaled copy and calls the cfx
// function blocking, so its result is in place when it returns, which satisfies every NCCL program
// that synchronises its stream before reading. Gather and Scatter are grouped sends and receives.
// On device buffers, what the staged path lacks (PreMulSum, Gather, Scatter, Send/Recv inside a
// group) runs on host copies (HostView): the caller waits for its stream.
#include <cstring>
#include <string>
#include <vector>

#include "device_route.h"
#include "group.h"
#include "shim.h"

using namespace cfx_nccl;

#define NCCL_API extern "C" __attribute__((visibility("default")))

namespace {

// A scratch buffer for a PreMulSum copy: the call's own, or one the open group keeps.
class Scratch {
 public:
  std::vector<char>& get() { return inGroup() ? groupScratch() : own_; }

 private:
  std::vector<char> own_;
};

cfxDataType_t dt(ncclDataType_t t) { return static_cast<cfxDataType_t>(t); }

int rankOf(ncclComm& c) {
  int me = 0;
  check(cfxCommUserRank(c.inner, &me), c.inner);
  return me;
}

// Runs `body` with the live communicator, unless it is suspended.
template <class F>
ncclResult_t call(const char* fn, ncclComm_t comm, F&& body) {
  return guarded(fn, comm, [&] {
    ncclComm* c = live(comm);
    if (c->suspended.load(std::memory_order_acquire)) {
      throw ShimError(ncclInvalidUsage, "the communicator is suspended (ncclCommSuspend): ncclCommResume it first");
    }
    body(*c);
  });
}

}  // namespace

NCCL_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return call("ncclAllReduce", comm, [&](ncclComm& c) {
    if (runOnDevice(c, {DeviceColl::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1, stream})) return;
    const size_t bytes = count * elementSize(datatype);
    HostView v(c, sendbuff, bytes, recvbuff, bytes, static_cast<void*>(stream));
    Scratch s;
    auto r = c.premul.resolve(op, datatype, v.send(), count, s.get());
    check(cfxAllReduce(r.send, v.recv(), count, dt(datatype), r.op, c.inner, nullptr), c.inner);
    v.done();
  });
}

NCCL_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return call("ncclReduce", comm, [&](ncclComm& c) {
    if (runOnDevice(c, {DeviceColl::kReduce, sendbuff, recvbuff, count, datatype, op, root, stream})) return;
    const size_t bytes = count * elementSize(datatype);
    HostView v(c, sendbuff, bytes, recvbuff, rankOf(c) == root ? bytes : 0, static_cast<void*>(stream));
    Scratch s;
    auto r = c.premul.resolve(op, datatype, v.send(), count, s.get());
    check(cfxReduce(r.send, v.recv(), count, dt(datatype), r.op, root, c.inner, nullptr), c.inner);
    v.done();
  });
}

NCCL_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return call("ncclReduceScatter", comm, [&](ncclComm& c) {
    if (runOnDevice(c, {DeviceColl::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, stream})) return;
    int n = 0;
    check(cfxCommCount(c.inner, &n), c.inner);
    const size_t bytes = recvcount * elementSize(datatype);
    HostView v(c, sendbuff, bytes * static_cast<size_t>(n), recvbuff, bytes, static_cast<void*>(stream));
    Scratch s;
    auto r = c.premul.resolve(op, datatype, v.send(), recvcount * static_cast<size_t>(n), s.get());
    check(cfxReduceScatter(r.send, v.recv(), recvcount, dt(datatype), r.op, c.inner, nullptr), c.inner);
    v.done();
  });
}

NCCL_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t stream) {
  return call("ncclBroadcast", comm, [&](ncclComm& c) {
    if (runOnDevice(c, {DeviceColl::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, stream})) return;
    check(cfxBroadcast(sendbuff, recvbuff, count, dt(datatype), root, c.inner, nullptr), c.inner);
  });
}

// The legacy in-place broadcast.
NCCL_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream) {
  return call("ncclBcast", comm, [&](ncclComm& c) {
    if (runOnDevice(c, {DeviceColl::kBroadcast, buff, buff, count, datatype, ncclSum, root, stream})) return;
    check(cfxBroadcast(buff, buff, count, dt(datatype), root, c.inner, nullptr), c.inner);
  });
}

NCCL_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream) {
  return call("ncclAllGather", comm, [&](ncclComm& c) {
    if (runOnDevice(c, {DeviceColl::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, -1, stream})) return;
    check(cfxAllGather(sendbuff, recvbuff, sendcount, dt(datatype), c.inner, nullptr), c.inner);
  });
}

NCCL_API ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                   ncclComm_t comm, cudaStream_t stream) {
  return call("ncclAlltoAll", comm, [&](ncclComm& c) {
    if (runOnDevice(c, {DeviceColl::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, -1, stream})) return;
    check(cfxAlltoAll(sendbuff, recvbuff, count, dt(datatype), c.inner, nullptr), c.inner);
  });
}

NCCL_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                               ncclComm_t comm, cudaStream_t stream) {
  return call("ncclSend", comm, [&](ncclComm& c) {
    if (runOnDevice(c, {DeviceColl::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, stream})) return;
    HostView v(c, sendbuff, count * elementSize(datatype), nullptr, 0, static_cast<void*>(stream));
    check(cfxSend(v.send(), count, dt(datatype), peer, c.inner, nullptr), c.inner);
    v.done();
  });
}

NCCL_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                               cudaStream_t stream) {
  return call("ncclRecv", comm, [&](ncclComm& c) {
    if (runOnDevice(c, {DeviceColl::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, stream})) return;
    HostView v(c, nullptr, 0, recvbuff, count * elementSize(datatype), static_cast<void*>(stream));
    check(cfxRecv(v.recv(), count, dt(datatype), peer, c.inner, nullptr), c.inner);
    v.done();
  });
}

// Gather: every rank's `count` elements land at recvbuff + rank * count on `root`.
NCCL_API ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 int root, ncclComm_t comm, cudaStream_t stream) {
  return call("ncclGather", comm, [&](ncclComm& c) {
    int n = 0, me = 0;
    check(cfxCommCount(c.inner, &n), c.inner);
    check(cfxCommUserRank(c.inner, &me), c.inner);
    if (root < 0 || root >= n) throw ShimError(ncclInvalidArgument, "root " + std::to_string(root) + " is not a rank");
    const size_t bytes = count * elementSize(datatype);
    if (me == root && count > 0 && recvbuff == nullptr) throw ShimError(ncclInvalidArgument, "recvbuff is NULL");
    HostView v(c, sendbuff, bytes, recvbuff, me == root ? bytes * n : 0, static_cast<void*>(stream));
    groupStart();
    try {
      check(cfxSend(v.send(), count, dt(datatype), root, c.inner, nullptr), c.inner);
      if (me == root) {
        for (int p = 0; p < n; ++p) {
          check(cfxRecv(static_cast<char*>(v.recv()) + p * bytes, count, dt(datatype), p, c.inner, nullptr), c.inner);
        }
      }
    } catch (...) {
      try { groupEnd(); } catch (const ShimError&) {}
      throw;
    }
    groupEnd();
    v.done();
  });
}

// Scatter: `root` sends sendbuff + rank * count to each rank.
NCCL_API ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, cudaStream_t stream) {
  return call("ncclScatter", comm, [&](ncclComm& c) {
    int n = 0, me = 0;
    check(cfxCommCount(c.inner, &n), c.inner);
    check(cfxCommUserRank(c.inner, &me), c.inner);
    if (root < 0 || root >= n) throw ShimError(ncclInvalidArgument, "root " + std::to_string(root) + " is not a rank");
    const size_t bytes = count * elementSize(datatype);
    if (me == root && count > 0 && sendbuff == nullptr) throw ShimError(ncclInvalidArgument, "sendbuff is NULL");
    HostView v(c, sendbuff, me == root ? bytes * n : 0, recvbuff, bytes, static_cast<void*>(stream));
    groupStart();
    try {
      if (me == root) {
        for (int p = 0; p < n; ++p) {
          check(cfxSend(static_cast<const char*>(v.send()) + p * bytes, count, dt(datatype), p, c.inner, nullptr),
                c.inner);
        }
      }
      check(cfxRecv(v.recv(), count, dt(datatype), root, c.inner, nullptr), c.inner);
    } catch (...) {
      try { groupEnd(); } catch (const ShimError&) {}
      throw;
    }
    groupEnd();
    v.done();
  });
}

NCCL_API ncclResult_t ncclGroupStart() {
  return guarded("ncclGroupStart", nullptr, [] { groupStart(); });
}

NCCL_API ncclResult_t ncclGroupEnd() {
  return guarded("ncclGroupEnd", nullptr, [] { groupEnd(); });
}

NCCL_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                               ncclScalarResidence_t residence, ncclComm_t comm) {
  return call("ncclRedOpCreatePreMulSum", comm, [&](ncclComm& c) {
    if (op == nullptr) throw ShimError(ncclInvalidArgument, "op is NULL");
    *op = c.premul.create(scalar, datatype, residence);
  });
}

NCCL_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return call("ncclRedOpDestroy", comm, [&](ncclComm& c) { c.premul.destroy(op); });
}
