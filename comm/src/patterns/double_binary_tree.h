// Double binary tree (NCCL's ncclGetBtree / ncclGetDtree): two binary trees over 0..n-1 in
// which every rank is a leaf in at least one tree, so that the two halves of a message reduced
// and broadcast along them keep every link busy in both directions.
//
// Tree 0 is the in-order binary tree on rank numbers: a rank's level is its lowest set bit.
// Tree 1 is tree 0 mirrored (n-1-r) when n is even, shifted by one when n is odd.
#pragma once

namespace conflux::patterns {

struct TreeNode {
  int parent = -1;  // -1 at the root
  int child0 = -1;
  int child1 = -1;
};

TreeNode binaryTree(int n, int rank);
TreeNode doubleBinaryTree(int n, int rank, int tree);  // tree 0 or 1
// Binomial tree rooted at 0 (for Reduce among hosts): parent, and children in reduction order.
int binomialParent(int n, int v);

}  // namespace conflux::patterns
