// Variable-count collectives: cfxAlltoAllv, cfxAllGatherv and cfxReduceScatterv.
//
// A call becomes a batch of operations that the engine runs as it runs a group:
//  1. a check, a collective: an AllGather of every rank's call (which v-collective, datatype, op,
//     and how many elements it sends to and expects from each rank). Every rank then checks every
//     pair the same way, so ranks whose counts disagree all fail with cfxInvalidUsage naming the
//     same two ranks, before any data moves. It also copies this rank's own block.
//  2. one Send and one Recv per peer with a nonzero count, point-to-point operations held until
//     the check has passed (on one host the shared-memory channels, across hosts the network:
//     Communicator::send/recv);
//  3. for ReduceScatterv, a collective that waits for its receives and reduces them with this
//     rank's own block, in rank order, so the result does not depend on arrival order.
// Counts and displacements are in elements; arrays are indexed by communicator rank.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "conflux/conflux.h"
#include "ops/op.h"

namespace conflux {

class Communicator;

enum class VectorKind { kAlltoAllv = 0, kAllGatherv, kReduceScatterv };

struct VectorArgs {
  VectorKind kind;
  const void* send;
  void* recv;
  // Elements this rank sends to / receives from each rank, and where they lie (elements from the
  // buffer's start). AllGatherv: sendCounts[r] = sendcount for every r, sendDispls all 0.
  // ReduceScatterv: the receive counts are recvcounts[me] from every rank, into temporaries.
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  cfxDataType_t datatype;
  cfxRedOp_t op;  // ReduceScatterv only
};

// The batch for one call (argument checks were done by the caller).
std::vector<std::unique_ptr<Op>> makeVectorCollective(const Communicator& comm, VectorArgs args);

const char* vectorKindName(VectorKind kind);

}  // namespace conflux
