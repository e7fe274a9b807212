#include "stall.h"

#include <algorithm>

namespace conflux {

StallFinding findStall(int me, const std::vector<int>& waited, const std::function<int(int)>& waitingFor, int nranks) {
  StallFinding f;
  auto start = std::find_if(waited.begin(), waited.end(), [&](int r) { return r != me && r >= 0 && r < nranks; });
  if (start == waited.end()) return f;
  f.chain.push_back(*start);
  for (int steps = 0; steps < nranks; ++steps) {
    int next = waitingFor(f.chain.back());
    if (next < 0 || next >= nranks) return f;
    if (next == me || std::find(f.chain.begin(), f.chain.end(), next) != f.chain.end()) {
      f.cycle = true;
      return f;
    }
    f.chain.push_back(next);
  }
  return f;
}

}  // namespace conflux
