// The bootstrap's tree: a complete k-ary tree over ranks 0..n-1 in heap order, rooted at rank 0.
// Rank r's parent is (r-1)/k and its children are k*r+1 .. k*r+k (those below n). Every rank is at
// most ceil(log_k(n)) hops from rank 0, so gathering and broadcasting the rank table takes that
// many rounds and no rank handles more than k+1 connections.
#pragma once

#include <vector>

namespace conflux::patterns {

inline constexpr int kBootstrapFanout = 8;

int karyParent(int rank, int k);                     // -1 for rank 0
std::vector<int> karyChildren(int n, int rank, int k);  // in rank order
int karyDepth(int n, int k);                         // hops from the deepest rank to rank 0

}  // namespace conflux::patterns
