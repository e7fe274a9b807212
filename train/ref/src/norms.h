// Layer normalisation and the softmax cross-entropy loss, forward and backward, shared by the
// transformer block and the heads.
#pragma once

#include <vector>

#include "conflux/train/ref/model.h"

namespace conflux::train::ref {

struct LayerNormCache {
  std::vector<float> mean, rstd;
  Act xhat;
};

// y = (x - mean) / sqrt(var + 1e-5) * gamma + beta, per row.
void layerNormForward(const Act& x, const float* gamma, const float* beta, Act& y, LayerNormCache& cache);
// dx (+)= LN backward of dy; dgamma, dbeta accumulate (may be null).
void layerNormBackward(const Act& dy, const float* gamma, const LayerNormCache& cache, Act& dx, bool accumulate,
                       float* dgamma, float* dbeta);

// Mean cross-entropy of logits (rows x classes) against targets; keeps the softmax in `probs`.
float softmaxCrossEntropy(const Act& logits, const std::vector<int>& targets, Act& probs);
// dlogits = scale * (probs - onehot) / rows.
void softmaxCrossEntropyBackward(const Act& probs, const std::vector<int>& targets, float scale, Act& dlogits);

}  // namespace conflux::train::ref
