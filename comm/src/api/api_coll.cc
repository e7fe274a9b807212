// Entry points for collectives and point-to-point operations: check every argument, then hand
// the operation to the communicator's engine (or to the open group).
#include "api/entry.h"
#include "exact_coll.h"
#include "reduce/kernels.h"

using conflux::Coll;
using conflux::CollArgs;
using conflux::Error;
using conflux::Status;
using namespace conflux::api;

namespace {

// A reducing collective, with the op the communicator makes of it: an exact one across hosts is a
// batch of its own (exact_coll.h).
void submitReducing(cfxComm_t comm, conflux::Communicator& c, cfxStream_t stream, CollArgs a) {
  a.op = c.effectiveOp(a.op, a.datatype);
  if (conflux::reduce::isExactOp(a.op) && c.hosts().nhosts() > 1 && a.count > 0) {
    for (auto& batch : conflux::makeExactAcrossHosts(c, a)) submitAll(comm, c, stream, std::move(batch));
    return;
  }
  submitCollective(comm, c, stream, a);
}

}  // namespace

extern "C" {

cfxResult_t cfxAllReduce(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype, cfxRedOp_t op,
                         cfxComm_t comm, cfxStream_t stream) {
  return entry("cfxAllReduce", comm, stream, [&](conflux::Communicator& c) {
    checkDatatype(datatype);
    checkOp(op);
    size_t bytes = checkedBytes(count, datatype, 1);
    checkBuffer(sendbuff, bytes, "sendbuff");
    checkBuffer(recvbuff, bytes, "recvbuff");
    checkOverlap(sendbuff, bytes, recvbuff, bytes, recvbuff, "sendbuff == recvbuff");
    submitReducing(comm, c, stream, CollArgs{Coll::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1});
  });
}

cfxResult_t cfxReduce(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype, cfxRedOp_t op,
                      int root, cfxComm_t comm, cfxStream_t stream) {
  return entry("cfxReduce", comm, stream, [&](conflux::Communicator& c) {
    const int nranks = c.size();
    checkDatatype(datatype);
    checkOp(op);
    checkRank(root, nranks, "root");
    size_t bytes = checkedBytes(count, datatype, 1);
    checkBuffer(sendbuff, bytes, "sendbuff");
    bool isRoot = c.rank() == root;
    if (isRoot) {
      checkBuffer(recvbuff, bytes, "recvbuff");
      checkOverlap(sendbuff, bytes, recvbuff, bytes, recvbuff, "sendbuff == recvbuff");
    }
    submitReducing(comm, c, stream, CollArgs{Coll::kReduce, sendbuff, recvbuff, count, datatype, op, root});
  });
}

cfxResult_t cfxBroadcast(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype, int root,
                         cfxComm_t comm, cfxStream_t stream) {
  return entry("cfxBroadcast", comm, stream, [&](conflux::Communicator& c) {
    const int nranks = c.size();
    checkDatatype(datatype);
    checkRank(root, nranks, "root");
    size_t bytes = checkedBytes(count, datatype, 1);
    checkBuffer(recvbuff, bytes, "recvbuff");
    if (c.rank() == root) {
      checkBuffer(sendbuff, bytes, "sendbuff");
      checkOverlap(sendbuff, bytes, recvbuff, bytes, recvbuff, "sendbuff == recvbuff");
    }
    submitCollective(comm, c, stream, CollArgs{Coll::kBroadcast, sendbuff, recvbuff, count, datatype, cfxSum, root});
  });
}

cfxResult_t cfxAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, cfxDataType_t datatype,
                         cfxComm_t comm, cfxStream_t stream) {
  return entry("cfxAllGather", comm, stream, [&](conflux::Communicator& c) {
    const int nranks = c.size();
    checkDatatype(datatype);
    size_t sendBytes = checkedBytes(sendcount, datatype, 1);
    size_t recvBytes = checkedBytes(sendcount, datatype, nranks);
    checkBuffer(sendbuff, sendBytes, "sendbuff");
    checkBuffer(recvbuff, recvBytes, "recvbuff");
    const void* inPlace = recvbuff ? static_cast<const char*>(recvbuff) + sendBytes * c.rank() : nullptr;
    checkOverlap(sendbuff, sendBytes, recvbuff, recvBytes, inPlace, "sendbuff == recvbuff + rank * sendcount");
    submitCollective(comm, c, stream, CollArgs{Coll::kAllGather, sendbuff, recvbuff, sendcount, datatype, cfxSum, -1});
  });
}

cfxResult_t cfxReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, cfxDataType_t datatype,
                             cfxRedOp_t op, cfxComm_t comm, cfxStream_t stream) {
  return entry("cfxReduceScatter", comm, stream, [&](conflux::Communicator& c) {
    const int nranks = c.size();
    checkDatatype(datatype);
    checkOp(op);
    size_t recvBytes = checkedBytes(recvcount, datatype, 1);
    size_t sendBytes = checkedBytes(recvcount, datatype, nranks);
    checkBuffer(sendbuff, sendBytes, "sendbuff");
    checkBuffer(recvbuff, recvBytes, "recvbuff");
    // In place: recvbuff == sendbuff + rank * recvcount; expressed as "recvbuff is at that spot".
    const void* inPlaceRecv = sendbuff ? static_cast<const char*>(sendbuff) + recvBytes * c.rank() : nullptr;
    checkOverlap(recvbuff, recvBytes, sendbuff, sendBytes, inPlaceRecv, "recvbuff == sendbuff + rank * recvcount");
    submitReducing(comm, c, stream, CollArgs{Coll::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1});
  });
}

cfxResult_t cfxAlltoAll(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype, cfxComm_t comm,
                        cfxStream_t stream) {
  return entry("cfxAlltoAll", comm, stream, [&](conflux::Communicator& c) {
    const int nranks = c.size();
    checkDatatype(datatype);
    size_t bytes = checkedBytes(count, datatype, nranks);
    checkBuffer(sendbuff, bytes, "sendbuff");
    checkBuffer(recvbuff, bytes, "recvbuff");
    checkOverlap(sendbuff, bytes, recvbuff, bytes, recvbuff, "sendbuff == recvbuff");
    submitCollective(comm, c, stream, CollArgs{Coll::kAlltoAll, sendbuff, recvbuff, count, datatype, cfxSum, -1});
  });
}

cfxResult_t cfxSend(const void* sendbuff, size_t count, cfxDataType_t datatype, int peer, cfxComm_t comm,
                    cfxStream_t stream) {
  return entry("cfxSend", comm, stream, [&](conflux::Communicator& c) {
    const int nranks = c.size();
    checkDatatype(datatype);
    checkRank(peer, nranks, "peer");
    size_t bytes = checkedBytes(count, datatype, 1);
    checkBuffer(sendbuff, bytes, "sendbuff");
    if (bytes == 0) return;
    if (std::optional<conflux::P2pOp> q = c.quickSend(sendbuff, bytes, peer); q && submitQuick(comm, c, stream, *q)) return;
    submit(comm, c, stream, c.send(sendbuff, bytes, peer));
  });
}

cfxResult_t cfxRecv(void* recvbuff, size_t count, cfxDataType_t datatype, int peer, cfxComm_t comm,
                    cfxStream_t stream) {
  return entry("cfxRecv", comm, stream, [&](conflux::Communicator& c) {
    const int nranks = c.size();
    checkDatatype(datatype);
    checkRank(peer, nranks, "peer");
    size_t bytes = checkedBytes(count, datatype, 1);
    checkBuffer(recvbuff, bytes, "recvbuff");
    if (bytes == 0) return;
    if (std::optional<conflux::P2pOp> q = c.quickRecv(recvbuff, bytes, peer); q && submitQuick(comm, c, stream, *q)) return;
    submit(comm, c, stream, c.recv(recvbuff, bytes, peer));
  });
}

}  // extern "C"
