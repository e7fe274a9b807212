// Who stalled: what a timed-out wait reports. While its wait sleeps, each rank publishes in shared
// memory the first local rank it waits for (Context::publishWaitingFor). From the ranks a
// timed-out wait waits for, the chain of those publications leads to the rank that waits for no
// one: that is the rank that stalled (stopped, busy outside Conflux, or not yet at the call), even
// when the rank this one waits for is a healthy neighbour that waits too (a Send/Recv ring).
// Pure, so it is unit-tested (tests/patterns_test.cc).
#pragma once

#include <functional>
#include <vector>

namespace conflux {

struct StallFinding {
  std::vector<int> chain;  // from the first rank waited for to the stalled one (or around a cycle)
  bool cycle = false;      // the chain came back to `me` or to itself: ranks wait for each other
  int stalled() const { return chain.empty() || cycle ? -1 : chain.back(); }
};

// `waited`: the local ranks this rank's wait is blocked on; `waitingFor(r)`: the rank r waits for,
// or -1.
StallFinding findStall(int me, const std::vector<int>& waited, const std::function<int(int)>& waitingFor, int nranks);

}  // namespace conflux
