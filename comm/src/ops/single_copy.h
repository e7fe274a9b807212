// Single-copy data movement over cross-memory attach (ops/single_copy.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "context.h"
#include "ops/op.h"
#include "ops/tuning.h"

namespace conflux {

// Whether a call takes the single-copy path (large AllGather, AlltoAll or Broadcast, CMA allowed).
bool useSingleCopy(const CollArgs& a, const Tuning& tuning, int nranks);
std::unique_ptr<Op> makeSingleCopy(const CollArgs& a);
// AllGather and Broadcast: this rank's part of the single copy of operation `seq`, every rank's
// input address published (Context::publishCmaAddress) before a barrier; a barrier must follow it.
void runSingleCopyGather(Context& ctx, const CollArgs& a, uint64_t seq);
// Whether a large AllGather or Broadcast (beyond Tuning::kCmaMaxGatherBytes of output, CMA allowed,
// no algorithm forced, not a step of a call across hosts) takes the path local rank 0 chooses
// (ops/path_trial.h; CollArgs::gatherTrial).
bool useGatherTrial(const CollArgs& a, const Tuning& tuning, int nranks);
// Bytes of a Broadcast's or AllGather's output on `nranks` ranks.
size_t gatherOutputBytes(const CollArgs& a, int nranks);

// AllReduce and Reduce (ops/single_copy.cc). Whether a call may take the path (from
// CFX_CMA_REDUCE_MIN_BYTES, CMA allowed, no algorithm forced, not a step of a call across hosts):
// it then publishes its buffers and meets its peers at a first barrier (CollArgs::singleCopyReduce).
bool useSingleCopyReduce(const CollArgs& a, const Tuning& tuning);
// After that barrier: whether the call takes it (up to Tuning::kCmaMaxOutOfPlaceReduceBytes, or
// every rank, the root for Reduce, in place). The same answer on every rank.
bool singleCopyReduceReady(const Context& ctx, const CollArgs& a, uint64_t seq);
// This rank's part: its slice, from every rank's buffer into every output.
void runSingleCopyReduce(Context& ctx, const CollArgs& a, uint64_t seq);

}  // namespace conflux
