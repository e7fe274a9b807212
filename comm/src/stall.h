// Who stalled: what a timed-out wait reports. While its wait sleeps, each rank publishes in shared
// memory the first local rank it waits for (Health::publishWaitingFor), or, when it waits only
// for ranks on other hosts, the first of those. From the ranks a timed-out wait waits for, the
// chain of those publications leads to the rank that waits for no one: that is the rank that
// stalled (stopped, busy outside Conflux, or not yet at the call), even when the rank this one
// waits for is a healthy neighbour that waits too (a Send/Recv ring). A chain may also end at a
// rank that waits across the network: then the stall is on another host (or the link to it), and
// this host cannot see which rank it is.
// Pure, so it is unit-tested (tests/stall_test.cc).
#pragma once

#include <functional>
#include <vector>

namespace conflux {

struct StallFinding {
  std::vector<int> chain;  // local ranks, from the first one waited for to the stalled one (or around a cycle)
  bool cycle = false;      // the chain came back to `me` or to itself: ranks wait for each other
  int across = -1;         // the chain (or `me` itself) ends waiting for this rank on another host
  int stalled() const { return chain.empty() || cycle || across >= 0 ? -1 : chain.back(); }
};

// What a rank waits for while it sleeps: a local rank first, else a rank on another host.
struct WaitTarget {
  int local = -1;   // local rank
  int across = -1;  // communicator rank on another host
};

// `waited`: the local ranks this rank's wait is blocked on; `acrossMe`: the rank on another host
// it waits for (-1: none); `waitOf(r)`: what local rank r waits for.
StallFinding findStall(int me, const std::vector<int>& waited, int acrossMe,
                       const std::function<WaitTarget(int)>& waitOf, int nranks);

}  // namespace conflux
