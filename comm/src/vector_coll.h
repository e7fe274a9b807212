// Variable-count collectives: cfxAlltoAllv, cfxAllGatherv and cfxReduceScatterv.
//
// A call becomes a batch of operations that the engine runs as it runs a group:
//  1. a check, a collective: an AllGather of every rank's call (which v-collective, datatype, op,
//     and how many elements it sends to and expects from each rank). Every rank then checks every
//     pair the same way, so ranks whose counts disagree all fail with cfxInvalidUsage naming the
//     same two ranks, before any data moves. It also copies this rank's own block, and the blocks
//     small enough to travel with the counts (on one host: VectorLine; across hosts: every rank's
//     whole input, when each fits the check's line);
//  2. one Send and one Recv per peer with a nonzero count that did not travel in the check,
//     point-to-point operations held until the check has passed (on one host the shared-memory
//     channels, across hosts the network: Communicator::send/recv);
//  3. for ReduceScatterv, a collective that waits for its receives and reduces them with this
//     rank's own block, in rank order, so the result does not depend on arrival order.
// Across hosts, an AllGatherv or ReduceScatterv whose counts are close to even takes instead of 2-3
// the hierarchical AllGather or ReduceScatter (hier/) on blocks padded to the largest count
// (paddedBlock), held until the check has passed: its blocks then cross each link once per host
// pair rather than once per rank pair. ReduceScatterv's result is then ReduceScatter's, bit for bit.
// Counts and displacements are in elements; arrays are indexed by communicator rank.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "conflux/conflux.h"
#include "ops/op.h"
#include "outcome.h"
#include "scratch_pool.h"

namespace conflux {

class Communicator;
class Stream;

enum class VectorKind { kAlltoAllv = 0, kAllGatherv, kReduceScatterv };

struct VectorArgs {
  VectorKind kind;
  const void* send;
  void* recv;
  cfxDataType_t datatype;
  cfxRedOp_t op;  // ReduceScatterv only; an exact op never takes the padded path (it reduces partial sums)
  // Elements this rank sends to / receives from each rank, and where they lie (elements from the
  // buffer's start). AllGatherv: sendCounts[r] = sendcount for every r, sendDispls all 0.
  // ReduceScatterv: the receive counts are recvcounts[me] from every rank, into temporaries.
  // The four arrays lie in this object (up to kInlineRanks ranks) or in one allocation; filled by
  // the caller.
  std::span<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  // A temporary that `send` or `recv` points into, kept while the call's operations live.
  std::shared_ptr<ScratchPool::Buffer> keep = nullptr;

  VectorArgs(VectorKind k, const void* s, void* r, int nranks, cfxDataType_t type, cfxRedOp_t redOp);
  // Moves point the spans into this object's arrays.
  VectorArgs(VectorArgs&& o) noexcept;
  VectorArgs& operator=(VectorArgs&& o) noexcept;
  VectorArgs(const VectorArgs&) = delete;
  VectorArgs& operator=(const VectorArgs&) = delete;

  static constexpr size_t kInlineRanks = 16;

 private:
  // Points the four spans into the arrays of `ranks` entries each (inline_ or heap_).
  void bind(size_t ranks);
  std::vector<size_t> heap_;
  size_t inline_[4 * kInlineRanks];
};

// The padded block (elements) an AllGatherv or ReduceScatterv of `counts` (one per rank, every
// rank's the same) takes across `nhosts` hosts, or 0 for rank to rank: when it spans hosts, moves
// more than `lineBytes` (below, the data travels in the check), and padding every block to the
// largest count adds at most `maxPadding` (a fraction) to the data. Pure, unit-tested.
size_t paddedBlock(std::span<const size_t> counts, size_t esize, int nhosts, double maxPadding, size_t lineBytes);

// On one host, with at most kMaxLineRanks ranks, the check runs on the latency path's mailboxes
// (vector_mailbox_op.cc): each rank publishes a line, its call's header, its sendcounts and
// recvcounts (2n + 1 words), then the blocks it sends that the line carries; blocks too large for
// the line, up to a share of the sender's box (shm_layout.h, VectorBox), travel in that box,
// written before the line is published; the other blocks go by Send/Recv. Which blocks travel
// where is known to sender and receiver alike from the counts they both hold (and the check proves
// equal), so a rank creates only the Send/Recv it needs. Pure, unit-tested.
struct VectorLine {
  // A line is the first 1 KiB of a mailbox (shm_layout.h). 2 KiB lines were slower at 2 ranks for
  // 64-128 B (median us 0.38-0.42 against 0.44-0.49) and faster only at 4 ranks from 1 KiB
  // (perf/RESULTS.md, 2026-11-29 (ninth)).
  static constexpr size_t kLineBytes = 1024;
  static constexpr int kMaxLineRanks = 63;  // (2n + 1) words fit a line
  int n;
  VectorKind kind;

  size_t countBytes() const { return (2 * static_cast<size_t>(n) + 1) * 8; }
  size_t room() const;
  // AlltoAllv and ReduceScatterv: the bytes each peer's block has (every peer a slot of its own).
  size_t slot() const;
  // Whether a block of `bytes` between two different ranks travels in the sender's line
  // (AllGatherv: the one block every peer reads, up to the whole room).
  bool carries(size_t bytes) const;
  // Where the block from rank `from` to rank `to` lies in `from`'s line (bytes from its start).
  size_t offset(int from, int to) const;
  // AlltoAllv and ReduceScatterv: the bytes each peer's block has in a box, whole cache lines, at
  // most kVectorBoxBlockBytes (shm_layout.h).
  size_t boxSlot() const;
  // Whether a block of `bytes` between two different ranks travels in the sender's box: the line
  // has no room for it and the box has (AllGatherv: the one block, up to kVectorBoxBlockBytes).
  bool inBox(size_t bytes) const;
  // Where the block from rank `from` to rank `to` lies in `from`'s box.
  size_t boxOffset(int from, int to) const;
  // Whether a block travels with the check (in the line or the box), not by Send/Recv.
  bool withCheck(size_t bytes) const { return carries(bytes) || inBox(bytes); }
};

// The batch for one call (argument checks were done by the caller).
std::vector<std::unique_ptr<Op>> makeVectorCollective(const Communicator& comm, VectorArgs args);
// The call run on this thread without building operations, as the latency path's collectives are
// (Engine::runQuick), where its batch would be the check on the mailboxes alone: one host, every
// block between two ranks in the lines. Returns false, `args` as they were and nothing run, when
// it cannot be (then submit makeVectorCollective's batch); else true, the outcome in `out`.
// It saves the heap blocks (VectorArgs' arrays up to kInlineRanks ranks, the shared call, the
// check, the batch) and the batch machinery: 1-rank AlltoAllv of 8 B 2,513 -> 1,693 instructions
// per call (callgrind); median us, 2 ranks 8 B 0.43 -> 0.40, 4 ranks on 2 CPUs 64 B 2.58 -> 2.30
// (perf/RESULTS.md, 2026-12-01).
bool runQuickVector(Communicator& comm, VectorArgs& args, Stream* stream, Outcome& out);

const char* vectorKindName(VectorKind kind);

}  // namespace conflux
