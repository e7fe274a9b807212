// Which path runs a collective inside one host: one pure rule over the call, the communicator's
// size and its tuning, and one table that builds what it names (as UCC's score map and NCCL's
// tuning.cc keep the choice in one place). Between hosts the choice is comm/src/hier/net_tuning.cc's.
#pragma once

#include <memory>

#include "ops/mailbox_op.h"
#include "ops/op.h"
#include "ops/tuning.h"

namespace conflux {

enum class HostAlgo {
  kMailbox,          // every rank's input fits a mailbox (ops/mailbox_op.h)
  kSingleCopy,       // large AllGather, AlltoAll, Broadcast: from the peers' buffers (ops/single_copy.h)
  kStagedBroadcast,  // the rest: through the staging slots (ops/staged.h)
  kStagedAllGather,
  kStagedAlltoAll,
  kStagedReduceScatter,
  kDirect,    // AllReduce and Reduce: every rank reduces every chunk
  kRsag,      // AllReduce and Reduce: reduce-scatter, then gather
  kTwoLevel,  // rsag inside each NUMA domain, then across them
};

// Whether selectHostAlgo gives kMailbox: small calls take the mailbox path unless an algorithm is
// forced (tests force each one). Inline, for the latency path's own test (Communicator::quickCollective).
inline bool takesMailbox(const CollArgs& a, const Tuning& tuning, int nranks) {
  return (tuning.forced == Algo::kAuto || tuning.forced == Algo::kMailbox) && fitsMailbox(a, nranks);
}

// The path for `a` on a communicator of `nranks` local ranks. Pure: the same inputs give the same
// path on every rank, which the ranks of a call rely on.
HostAlgo selectHostAlgo(const CollArgs& a, const Tuning& tuning, int nranks);
const char* hostAlgoName(HostAlgo algo);

}  // namespace conflux
