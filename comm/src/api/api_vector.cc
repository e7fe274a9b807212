// Entry points for the variable-count collectives (vector_coll.h): check every argument, then hand
// the call's operations to the communicator's engine (or to the open group).
#include <algorithm>
#include <span>
#include <string>

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

// The array of one count or displacement per rank, copied into `to`; NULL is an error.
void perRank(const size_t* values, std::span<size_t> to, const char* name) {
  if (values == nullptr) invalid(std::string(name) + " is NULL");
  std::copy(values, values + to.size(), to.begin());
}

// Bytes from a buffer's start to the end of its furthest block: max(displs[r] + counts[r]) elements
// (blocks with no elements do not count).
size_t extentBytes(std::span<const size_t> counts, std::span<const size_t> displs, cfxDataType_t type,
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

// Prefix sums of `counts` into `offsets` (ReduceScatterv's blocks lie one after another); the
// total in `total`.
void offsetsOf(std::span<const size_t> counts, std::span<size_t> offsets, size_t& total) {
  total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    if (__builtin_add_overflow(total, counts[r], &total)) invalid("the sum of recvcounts overflows");
  }
}

}  // namespace

extern "C" {

cfxResult_t cfxAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[], void* recvbuff,
                         const size_t recvcounts[], const size_t rdispls[], cfxDataType_t datatype, cfxComm_t comm,
                         cfxStream_t stream) {
  return entry("cfxAlltoAllv", comm, stream, [&](conflux::Communicator& c) {
    const int n = c.size();
    checkDatatype(datatype);
    VectorArgs a(VectorKind::kAlltoAllv, sendbuff, recvbuff, n, datatype, cfxSum);
    perRank(sendcounts, a.sendCounts, "sendcounts");
    perRank(sdispls, a.sendDispls, "sdispls");
    perRank(recvcounts, a.recvCounts, "recvcounts");
    perRank(rdispls, a.recvDispls, "rdispls");
    const size_t sendBytes = extentBytes(a.sendCounts, a.sendDispls, datatype, "sendcounts", "sdispls");
    const size_t recvBytes = extentBytes(a.recvCounts, a.recvDispls, datatype, "recvcounts", "rdispls");
    checkBuffer(sendbuff, sendBytes, "sendbuff");
    checkBuffer(recvbuff, recvBytes, "recvbuff");
    const auto s = reinterpret_cast<uintptr_t>(sendbuff), r = reinterpret_cast<uintptr_t>(recvbuff);
    if (sendBytes > 0 && recvBytes > 0 && s < r + recvBytes && r < s + sendBytes) {
      invalid("sendbuff and recvbuff overlap (AlltoAllv has no in-place form)");
    }
    submitVector(comm, c, stream, std::move(a));
  });
}

cfxResult_t cfxAllGatherv(const void* sendbuff, size_t sendcount, void* recvbuff, const size_t recvcounts[],
                          const size_t displs[], cfxDataType_t datatype, cfxComm_t comm, cfxStream_t stream) {
  return entry("cfxAllGatherv", comm, stream, [&](conflux::Communicator& c) {
    const int n = c.size(), me = c.rank();
    checkDatatype(datatype);
    VectorArgs a(VectorKind::kAllGatherv, sendbuff, recvbuff, n, datatype, cfxSum);
    std::fill(a.sendCounts.begin(), a.sendCounts.end(), sendcount);
    perRank(recvcounts, a.recvCounts, "recvcounts");
    perRank(displs, a.recvDispls, "displs");
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
    submitVector(comm, c, stream, std::move(a));
  });
}

cfxResult_t cfxReduceScatterv(const void* sendbuff, void* recvbuff, const size_t recvcounts[], cfxDataType_t datatype,
                              cfxRedOp_t op, cfxComm_t comm, cfxStream_t stream) {
  return entry("cfxReduceScatterv", comm, stream, [&](conflux::Communicator& c) {
    const int n = c.size(), me = c.rank();
    checkDatatype(datatype);
    checkOp(op);
    // Every rank receives its own count from each rank.
    VectorArgs a(VectorKind::kReduceScatterv, sendbuff, recvbuff, n, datatype, c.effectiveOp(op, datatype));
    perRank(recvcounts, a.sendCounts, "recvcounts");
    size_t total = 0;
    offsetsOf(a.sendCounts, a.sendDispls, total);
    std::fill(a.recvCounts.begin(), a.recvCounts.end(), a.sendCounts[me]);
    const size_t sendBytes = checkedBytes(total, datatype, 1);
    const size_t recvBytes = checkedBytes(a.sendCounts[me], datatype, 1);
    checkBuffer(sendbuff, sendBytes, "sendbuff");
    checkBuffer(recvbuff, recvBytes, "recvbuff");
    const void* inPlace =
        sendbuff ? static_cast<const char*>(sendbuff) + a.sendDispls[me] * conflux::reduce::dataTypeSize(datatype)
                 : nullptr;
    checkOverlap(recvbuff, recvBytes, sendbuff, sendBytes, inPlace,
                 "recvbuff == sendbuff + (recvcounts[0] + ... + recvcounts[rank - 1])");
    submitVector(comm, c, stream, std::move(a));
  });
}

}  // extern "C"
