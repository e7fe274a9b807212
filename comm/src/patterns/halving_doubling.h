// Recursive halving-doubling (Rabenseifner's allreduce) with folding for non-powers of two.
//
// With p the largest power of two <= m and e = m - p extra members: among the first 2e members,
// each even one sends its whole buffer to the odd one after it and sits out ("fold"), and gets the
// result back at the end ("unfold"). The p that remain (virtual ranks 0..p-1) run log2(p) halving
// steps of reduce-scatter over p blocks, then the same steps in reverse as all-gather.
#pragma once

#include <vector>

namespace conflux::patterns {

struct HdStep {
  int partner;            // member index
  int keepLo, keepHi;     // block range kept (reduce-scatter) / held before the step (all-gather)
  int sendLo, sendHi;     // block range sent (reduce-scatter) / received (all-gather)
};

struct HdPlan {
  int p = 1;              // power of two taking part in the halving
  int vrank = -1;         // -1: this member folds into `foldPartner` and sits out
  int foldPartner = -1;   // the member this one folds with (-1 if none)
  bool foldSender = false;
  std::vector<HdStep> steps;  // reduce-scatter order; all-gather runs them backwards
};

// The member index of virtual rank v.
int hdMember(int m, int v);
HdPlan halvingDoubling(int m, int me);

}  // namespace conflux::patterns
