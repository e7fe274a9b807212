#include "norms.h"

#include <cmath>

namespace conflux::train::ref {

void layerNormForward(const Act& x, const float* gamma, const float* beta, Act& y, LayerNormCache& c) {
  const int n = x.cols;
  y.resize(x.rows, n);
  c.xhat.resize(x.rows, n);
  c.mean.assign(static_cast<size_t>(x.rows), 0.0f);
  c.rstd.assign(static_cast<size_t>(x.rows), 0.0f);
  for (int r = 0; r < x.rows; ++r) {
    const float* xr = x.row(r);
    float mean = 0;
    for (int j = 0; j < n; ++j) mean += xr[j];
    mean /= static_cast<float>(n);
    float var = 0;
    for (int j = 0; j < n; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= static_cast<float>(n);
    const float rstd = 1.0f / std::sqrt(var + 1e-5f);
    c.mean[static_cast<size_t>(r)] = mean;
    c.rstd[static_cast<size_t>(r)] = rstd;
    float* h = c.xhat.row(r);
    float* yr = y.row(r);
    for (int j = 0; j < n; ++j) {
      h[j] = (xr[j] - mean) * rstd;
      yr[j] = h[j] * gamma[j] + beta[j];
    }
  }
}

void layerNormBackward(const Act& dy, const float* gamma, const LayerNormCache& c, Act& dx, bool accumulate,
                       float* dgamma, float* dbeta) {
  const int n = dy.cols;
  if (!accumulate) dx.resize(dy.rows, n);
  std::vector<float> dh(static_cast<size_t>(n));
  for (int r = 0; r < dy.rows; ++r) {
    const float* g = dy.row(r);
    const float* h = c.xhat.row(r);
    float sumDh = 0, sumDhH = 0;
    for (int j = 0; j < n; ++j) {
      dh[static_cast<size_t>(j)] = g[j] * gamma[j];
      sumDh += dh[static_cast<size_t>(j)];
      sumDhH += dh[static_cast<size_t>(j)] * h[j];
      if (dgamma != nullptr) dgamma[j] += g[j] * h[j];
      if (dbeta != nullptr) dbeta[j] += g[j];
    }
    const float rstd = c.rstd[static_cast<size_t>(r)];
    const float inv = 1.0f / static_cast<float>(n);
    float* out = dx.row(r);
    for (int j = 0; j < n; ++j) {
      float v = rstd * (dh[static_cast<size_t>(j)] - sumDh * inv - h[j] * sumDhH * inv);
      out[j] = accumulate ? out[j] + v : v;
    }
  }
}

float softmaxCrossEntropy(const Act& logits, const std::vector<int>& targets, Act& probs) {
  probs.resize(logits.rows, logits.cols);
  double total = 0;
  for (int r = 0; r < logits.rows; ++r) {
    const float* z = logits.row(r);
    float* p = probs.row(r);
    float mx = z[0];
    for (int j = 1; j < logits.cols; ++j) mx = std::fmax(mx, z[j]);
    float sum = 0;
    for (int j = 0; j < logits.cols; ++j) {
      p[j] = std::exp(z[j] - mx);
      sum += p[j];
    }
    for (int j = 0; j < logits.cols; ++j) p[j] /= sum;
    total += -std::log(static_cast<double>(std::fmax(p[targets[static_cast<size_t>(r)]], 1e-30f)));
  }
  return static_cast<float>(total / logits.rows);
}

void softmaxCrossEntropyBackward(const Act& probs, const std::vector<int>& targets, float scale, Act& dlogits) {
  dlogits.resize(probs.rows, probs.cols);
  const float k = scale / static_cast<float>(probs.rows);
  for (int r = 0; r < probs.rows; ++r) {
    const float* p = probs.row(r);
    float* d = dlogits.row(r);
    for (int j = 0; j < probs.cols; ++j) d[j] = k * p[j];
    d[targets[static_cast<size_t>(r)]] -= k;
  }
}

}  // namespace conflux::train::ref
