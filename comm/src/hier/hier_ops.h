// Collectives across hosts, composed as in hfreduce and UCC's cl/hier: shared-memory phases
// inside each host (the single-host algorithms of comm/src/ops) around network phases between
// hosts (net_algos.h).
#pragma once

#include <memory>

#include "hier/schedule.h"
#include "ops/op.h"
#include "ops/tuning.h"

namespace conflux::hier {

struct HierEnv {
  NetEnv net;
  const HostMap* hosts = nullptr;
  const Tuning* tuning = nullptr;
  int rank = 0;
  int nranks = 0;
};

// `callSeq`: the call's number among the communicator's collective calls (the same on every
// rank); its messages and shared-memory steps carry it, so ranks in different calls find out.
std::unique_ptr<Op> makeHierCollective(const CollArgs& a, const HierEnv& env, uint32_t callSeq);
// Send/Recv to any rank: shared memory on this host, the network otherwise.
std::unique_ptr<Op> makeHierSend(const HierEnv& env, const void* buf, size_t bytes, int peer);
std::unique_ptr<Op> makeHierRecv(const HierEnv& env, void* buf, size_t bytes, int peer);

// The inter-host AllReduce algorithm for `bytes` over `members` groups members (a cost model of
// latency and bandwidth; CFX_ALGO=ring|tree|rhd forces one). Documented in docs/scaling.md.
NetAlgo chooseNetAlgo(size_t bytes, int members, const Tuning& t);

}  // namespace conflux::hier
