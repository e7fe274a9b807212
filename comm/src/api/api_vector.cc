// Entry points for the variable-count collectives (vector_coll.h): check every argument, then hand
// the call's operations to the communicator's engine (or to the open group).
#include <algorithm>
#include <string>
#include <vector>

#include "api/entry.h"
#include "reduce/kernels.h"
#include "vector_coll.h"

using conflux::Error;
using conflux::Status;
using conflux::VectorArgs;
using conflux::VectorKind;
using namespace conflux::api;

namespace {

[[noreturn]] void invalid(const std::string& what) { throw Error(Status::kInvalidArgument, what); }

// The array of one count or displacement per rank, copied; NULL is an error.
std::vector<size_t> perRank(const size_t* values, int nranks, const char* name) {
  if (values == nullptr) invalid(std::string(name) + " is NULL");
  return std::vector<size_t>(values, values + nranks);
}

// Bytes from a buffer's start to the end of its furthest block: max(displs[r] + counts[r]) elements
// (blocks with no elements do not count).
size_t extentBytes(const std::vector<size_t>& counts, const std::vector<size_t>& displs, cfxDataType_t type,
                   const char* countsName, const char* displsName) {
  size_t elements = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] == 0) continue;
    size_t end = 0;
    if (__builtin_add_overflow(displs[r], counts[r], &end)) {
      invalid(std::string(displsName) + "[" + std::to_string(r) + "] + " + countsName + "[" + std::to_string(r) +
              "] overflows");
    }
    elements = std::max(elements, end);
  }
  return checkedBytes(elements, type, 1);
}

// Prefix sums of `counts` (ReduceScatterv's blocks lie one after another); the total in `total`.
std::vector<size_t> offsetsOf(const std::vector<size_t>& counts, size_t& total) {
  std::vector<size_t> offsets(counts.size());
  total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    if (__builtin_add_overflow(total, counts[r], &total)) invalid("the sum of recvcounts overflows");
  }
  return offsets;
}

}  // namespace

extern "C" {

cfxResult_t cfxAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[], void* recvbuff,
                         const size_t recvcounts[], const size_t rdispls[], cfxDataType_t datatype, cfxComm_t comm,
                         cfxStream_t stream) {
  return entry("cfxAlltoAllv", comm, stream, [&](conflux::Communicator& c) {
    const int n = c.size();
    checkDatatype(datatype);
    VectorArgs a{VectorKind::kAlltoAllv, sendbuff, recvbuff, perRank(sendcounts, n, "sendcounts"),
                 perRank(sdispls, n, "sdispls"), perRank(recvcounts, n, "recvcounts"), perRank(rdispls, n, "rdispls"),
                 datatype, cfxSum};
    const size_t sendBytes = extentBytes(a.sendCounts, a.sendDispls, datatype, "sendcounts", "sdispls");
    const size_t recvBytes = extentBytes(a.recvCounts, a.recvDispls, datatype, "recvcounts", "rdispls");
    checkBuffer(sendbuff, sendBytes, "sendbuff");
    checkBuffer(recvbuff, recvBytes, "recvbuff");
    const auto s = reinterpret_cast<uintptr_t>(sendbuff), r = reinterpret_cast<uintptr_t>(recvbuff);
    if (sendBytes > 0 && recvBytes > 0 && s < r + recvBytes && r < s + sendBytes) {
      invalid("sendbuff and recvbuff overlap (AlltoAllv has no in-place form)");
    }
    submitAll(comm, c, stream, makeVectorCollective(c, std::move(a)));
  });
}

cfxResult_t cfxAllGatherv(const void* sendbuff, size_t sendcount, void* recvbuff, const size_t recvcounts[],
                          const size_t displs[], cfxDataType_t datatype, cfxComm_t comm, cfxStream_t stream) {
  return entry("cfxAllGatherv", comm, stream, [&](conflux::Communicator& c) {
    const int n = c.size(), me = c.rank();
    checkDatatype(datatype);
    VectorArgs a{VectorKind::kAllGatherv, sendbuff, recvbuff, std::vector<size_t>(n, sendcount),
                 std::vector<size_t>(n, 0), perRank(recvcounts, n, "recvcounts"), perRank(displs, n, "displs"),
                 datatype, cfxSum};
    if (a.recvCounts[me] != sendcount) {
      invalid("sendcount " + std::to_string(sendcount) + " differs from recvcounts[" + std::to_string(me) +
              "] = " + std::to_string(a.recvCounts[me]) + " (this rank's own block)");
    }
    const size_t sendBytes = checkedBytes(sendcount, datatype, 1);
    const size_t recvBytes = extentBytes(a.recvCounts, a.recvDispls, datatype, "recvcounts", "displs");
    checkBuffer(sendbuff, sendBytes, "sendbuff");
    checkBuffer(recvbuff, recvBytes, "recvbuff");
    const void* inPlace =
        recvbuff ? static_cast<const char*>(recvbuff) + a.recvDispls[me] * conflux::reduce::dataTypeSize(datatype)
                 : nullptr;
    checkOverlap(sendbuff, sendBytes, recvbuff, recvBytes, inPlace, "sendbuff == recvbuff + displs[rank]");
    submitAll(comm, c, stream, makeVectorCollective(c, std::move(a)));
  });
}

cfxResult_t cfxReduceScatterv(const void* sendbuff, void* recvbuff, const size_t recvcounts[], cfxDataType_t datatype,
                              cfxRedOp_t op, cfxComm_t comm, cfxStream_t stream) {
  return entry("cfxReduceScatterv", comm, stream, [&](conflux::Communicator& c) {
    const int n = c.size(), me = c.rank();
    checkDatatype(datatype);
    checkOp(op);
    std::vector<size_t> counts = perRank(recvcounts, n, "recvcounts");
    size_t total = 0;
    std::vector<size_t> offsets = offsetsOf(counts, total);
    const size_t sendBytes = checkedBytes(total, datatype, 1);
    const size_t recvBytes = checkedBytes(counts[me], datatype, 1);
    checkBuffer(sendbuff, sendBytes, "sendbuff");
    checkBuffer(recvbuff, recvBytes, "recvbuff");
    const void* inPlace =
        sendbuff ? static_cast<const char*>(sendbuff) + offsets[me] * conflux::reduce::dataTypeSize(datatype) : nullptr;
    checkOverlap(recvbuff, recvBytes, sendbuff, sendBytes, inPlace,
                 "recvbuff == sendbuff + (recvcounts[0] + ... + recvcounts[rank - 1])");
    // Every rank receives its own count from each rank.
    VectorArgs a{VectorKind::kReduceScatterv, sendbuff, recvbuff, counts, std::move(offsets),
                 std::vector<size_t>(n, counts[me]), std::vector<size_t>(n, 0), datatype, c.effectiveOp(op, datatype)};
    submitAll(comm, c, stream, makeVectorCollective(c, std::move(a)));
  });
}

}  // extern "C"
