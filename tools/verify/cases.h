// One collective call's buffers and its expected result, laid out by NCCL's conventions (counts,
// in-place positions, root), shared by the test suite and the perf binaries' -c check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pattern.h"

namespace cfxtest {

enum class CollKind { kAllReduce, kReduce, kBroadcast, kAllGather, kReduceScatter, kAlltoAll, kSendRecv, kAlltoAllv };

const char* collName(CollKind c);
bool reduces(CollKind c);

// A call's buffers. sendPtr/recvPtr follow the in-place conventions; guard bytes (0xA5) surround
// the receive buffer to catch out-of-bounds writes.
struct CallBuffers {
  static constexpr size_t kGuard = 64;
  CollKind coll;
  size_t count;     // NCCL's count argument
  int rank, nranks, root;
  bool inPlace;
  std::vector<uint8_t> send, recv;
  const void* sendPtr = nullptr;
  void* recvPtr = nullptr;
  size_t sendElems = 0, recvElems = 0;
  // AlltoAllv: elements to and from each rank (alltoallvBlock), and their displacements (blocks
  // back to back in rank order).
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
};

// AlltoAllv's block from rank `from` to rank `to` for a call of `count` (the per-rank count of the
// AlltoAll it stands beside): count/2, count or 3*count/2 elements by pair, count on average.
inline size_t alltoallvBlock(size_t count, int from, int to) { return count * (1 + (from + 2 * to) % 3) / 2; }

// Allocates the buffers and fills this rank's input from the pattern.
CallBuffers makeCall(CollKind c, const Pattern& p, int rank, int nranks, int root, size_t count, bool inPlace);
// Refills the input (for in-place calls the input is overwritten by the result).
void refill(CallBuffers& b, const Pattern& p);
// Checks the result exactly; returns the number of wrong elements and describes the first in `why`.
size_t verify(const CallBuffers& b, const Pattern& p, std::string& why);

}  // namespace cfxtest
