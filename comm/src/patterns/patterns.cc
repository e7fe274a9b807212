#include <cstdint>

#include "common/arith.h"
#include "patterns/double_binary_tree.h"
#include "patterns/halving_doubling.h"
#include "patterns/kary_tree.h"

namespace conflux::patterns {

TreeNode binaryTree(int n, int rank) {
  TreeNode t;
  int bit = 1;
  while (bit < n && (bit & rank) == 0) bit <<= 1;
  if (rank == 0) {
    t.child1 = n > 1 ? bit >> 1 : -1;
    return t;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  t.parent = up;
  int low = bit >> 1;
  t.child0 = low == 0 ? -1 : rank - low;
  int c1 = low == 0 ? -1 : rank + low;
  while (c1 >= n) {
    low >>= 1;
    c1 = low == 0 ? -1 : rank + low;
  }
  t.child1 = c1;
  return t;
}

TreeNode doubleBinaryTree(int n, int rank, int tree) {
  if (tree == 0) return binaryTree(n, rank);
  if (n % 2 == 1) {  // shift by one
    auto map = [n](int x) { return x < 0 ? -1 : (x + 1) % n; };
    TreeNode t = binaryTree(n, (rank + n - 1) % n);
    return TreeNode{map(t.parent), map(t.child0), map(t.child1)};
  }
  auto map = [n](int x) { return x < 0 ? -1 : n - 1 - x; };  // mirror
  TreeNode t = binaryTree(n, n - 1 - rank);
  return TreeNode{map(t.parent), map(t.child0), map(t.child1)};
}

int binomialParent(int n, int v) {
  if (v == 0 || v >= n) return -1;
  return v & (v - 1);  // clear the lowest set bit
}

int hdMember(int m, int v) {
  const int e = m - largestPowerOfTwo(m);
  return v < e ? 2 * v + 1 : v + e;
}

HdPlan halvingDoubling(int m, int me) {
  HdPlan plan;
  const int p = largestPowerOfTwo(m);
  plan.p = p;
  const int e = m - p;
  if (me < 2 * e) {
    plan.foldPartner = me % 2 == 0 ? me + 1 : me - 1;
    plan.foldSender = me % 2 == 0;
    if (plan.foldSender) return plan;  // sits out
    plan.vrank = me / 2;
  } else {
    plan.vrank = me - e;
  }
  int lo = 0, hi = p;
  for (int dist = p / 2; dist >= 1; dist /= 2) {
    int partnerV = plan.vrank ^ dist;
    int mid = (lo + hi) / 2;
    HdStep s;
    s.partner = hdMember(m, partnerV);
    if ((plan.vrank & dist) == 0) {
      s.keepLo = lo, s.keepHi = mid, s.sendLo = mid, s.sendHi = hi;
      hi = mid;
    } else {
      s.keepLo = mid, s.keepHi = hi, s.sendLo = lo, s.sendHi = mid;
      lo = mid;
    }
    plan.steps.push_back(s);
  }
  return plan;
}

int karyParent(int rank, int k) { return rank <= 0 ? -1 : (rank - 1) / k; }

std::vector<int> karyChildren(int n, int rank, int k) {
  std::vector<int> c;
  for (int64_t i = static_cast<int64_t>(k) * rank + 1; i <= static_cast<int64_t>(k) * rank + k && i < n; ++i) {
    c.push_back(static_cast<int>(i));
  }
  return c;
}

int karyDepth(int n, int k) {
  int depth = 0;
  for (int r = n - 1; r > 0; r = karyParent(r, k)) ++depth;
  return depth;
}

}  // namespace conflux::patterns
