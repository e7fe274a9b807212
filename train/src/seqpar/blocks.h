// Attention on one (query block, key block) pair: the arithmetic every sequence-parallel scheme
// shares. Rows are [tokens, heads, headDim]; positions give each token's place in the sequence
// for the causal mask. Sums run in double and results are stored in fp32.
#pragma once

#include "conflux/train/seqpar/attention.h"

namespace conflux::train::seqpar::detail {

struct Rows {
  const float* data;
  const int* pos;
  int n;
};

// Merges the attention of queries q to keys/values (k, v) into the running output `out`
// (normalised) and log-sum-exp `lse` (-inf where nothing was seen yet). Returns true if any
// (query, key) pair was unmasked.
bool attendForward(const AttentionShape& s, Rows q, Rows k, const float* v, float* out, float* lse);

// Adds this key block's share of the gradients: dq (queries) and dk, dv (this block's keys),
// given the final lse and delta = rowsum(dout * out) per (query, head).
void attendBackward(const AttentionShape& s, Rows q, Rows k, const float* v, const float* dout, const float* lse,
                    const float* delta, float* dq, float* dk, float* dv);

// delta[i, h] = sum over d of dout * out.
void rowDot(const AttentionShape& s, int n, const float* dout, const float* out, float* delta);

}  // namespace conflux::train::seqpar::detail
