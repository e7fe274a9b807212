// Kernels of the transformer block (block.cc) and of its tensor-parallel form (tp_block.cc):
// GELU (tanh form), linear layers with W stored [in, out], and causal multi-head attention within
// each sequence of seqLen rows. Fixed loop orders, as in linalg.h.
#pragma once

#include <vector>

#include "conflux/train/ref/model.h"

namespace conflux::train::ref {

float gelu(float x);
float geluGrad(float x);

// y = x W (+ b unless null), W stored [in, out].
void linear(const Act& x, const float* W, const float* b, int out, Act& y);
// Accumulates dW, db (db may be null) from (x, dy); writes or adds dx = dy W^T.
void linearBackward(const Act& x, const Act& dy, const float* W, float* dW, float* db, Act& dx, bool accumulate);
// Its two halves: dx = dy W^T (written or added), and dW += x^T dy, db += sum of dy's rows.
void linearInputGrad(const Act& dy, const float* W, int in, Act& dx, bool accumulate);
void linearWeightGrad(const Act& x, const Act& dy, float* dW, float* db);

// o = softmax(q k^T / sqrt(d), causal) v per head (d = q.cols / heads); keeps the probabilities,
// [sequence][head][seqLen][seqLen], for backward.
void causalAttentionForward(const Act& q, const Act& k, const Act& v, int seqLen, int heads, Act& o,
                            std::vector<float>& probs);
void causalAttentionBackward(const Act& q, const Act& k, const Act& v, const std::vector<float>& probs, int seqLen,
                             int heads, const Act& dO, Act& dQ, Act& dK, Act& dV);

}  // namespace conflux::train::ref
