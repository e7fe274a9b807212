#include "stall.h"

#include <algorithm>

namespace conflux {

StallFinding findStall(int me, const std::vector<int>& waited, int acrossMe,
                       const std::function<WaitTarget(int)>& waitOf, int nranks) {
  StallFinding f;
  auto start = std::find_if(waited.begin(), waited.end(), [&](int r) { return r != me && r >= 0 && r < nranks; });
  if (start == waited.end()) {
    f.across = acrossMe;
    return f;
  }
  f.chain.push_back(*start);
  for (int steps = 0; steps < nranks; ++steps) {
    const WaitTarget t = waitOf(f.chain.back());
    const int next = t.local;
    if (next < 0 || next >= nranks) {
      f.across = t.across;
      return f;
    }
    if (next == me || std::find(f.chain.begin(), f.chain.end(), next) != f.chain.end()) {
      f.cycle = true;
      return f;
    }
    f.chain.push_back(next);
  }
  return f;
}

}  // namespace conflux
