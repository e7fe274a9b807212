// Kernels of the transformer block, shared by the one-process block and its tensor-parallel form.
#include "block_ops.h"

#include <cmath>

#include "linalg.h"

namespace conflux::train::ref {

namespace {
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
}  // namespace

float gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kGeluC * (x + 0.044715f * x * x * x))); }
float geluGrad(float x) {
  float t = std::tanh(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * x * x);
}

// out = x W (+ b unless null), W stored [in, out].
void linear(const Act& x, const float* W, const float* b, int out, Act& y) {
  y.resize(x.rows, out);
  matmul(x.v.data(), W, y.v.data(), x.rows, x.cols, out, false);
  if (b != nullptr) addBias(y.v.data(), b, x.rows, out);
}

// Accumulates dW, db from (x, dy); writes or adds dx = dy W^T.
void linearBackward(const Act& x, const Act& dy, const float* W, float* dW, float* db, Act& dx, bool accumulate) {
  linearWeightGrad(x, dy, dW, db);
  linearInputGrad(dy, W, x.cols, dx, accumulate);
}

void linearInputGrad(const Act& dy, const float* W, int in, Act& dx, bool accumulate) {
  if (!accumulate) dx.resize(dy.rows, in);
  matmulNt(dy.v.data(), W, dx.v.data(), dy.rows, dy.cols, in, accumulate);
}

void linearWeightGrad(const Act& x, const Act& dy, float* dW, float* db) {
  matmulTnAcc(x.v.data(), dy.v.data(), dW, dy.rows, x.cols, dy.cols);
  if (db != nullptr) biasGrad(dy.v.data(), db, dy.rows, dy.cols);
}


void causalAttentionForward(const Act& q, const Act& k, const Act& v, int T, int heads, Act& o,
                            std::vector<float>& probs) {
  const int rows = q.rows, d = q.cols / heads, nseq = rows / T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  o.resize(rows, q.cols);
  probs.assign(static_cast<size_t>(nseq) * heads * T * T, 0.0f);
  std::vector<float> s(static_cast<size_t>(T));
  for (int sq = 0; sq < nseq; ++sq) {
    for (int h = 0; h < heads; ++h) {
      float* P = probs.data() + (static_cast<size_t>(sq) * heads + h) * T * T;
      for (int i = 0; i < T; ++i) {
        const float* qi = q.row(sq * T + i) + h * d;
        float mx = -INFINITY;
        for (int j = 0; j <= i; ++j) {
          s[static_cast<size_t>(j)] = dot(qi, k.row(sq * T + j) + h * d, d) * scale;
          mx = std::fmax(mx, s[static_cast<size_t>(j)]);
        }
        float sum = 0;
        for (int j = 0; j <= i; ++j) {
          s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - mx);
          sum += s[static_cast<size_t>(j)];
        }
        float* oi = o.row(sq * T + i) + h * d;
        for (int j = 0; j <= i; ++j) {
          const float p = s[static_cast<size_t>(j)] / sum;
          P[static_cast<size_t>(i) * T + j] = p;
          const float* vj = v.row(sq * T + j) + h * d;
          for (int c = 0; c < d; ++c) oi[c] += p * vj[c];
        }
      }
    }
  }
}

void causalAttentionBackward(const Act& q, const Act& k, const Act& v, const std::vector<float>& probs, int T,
                             int heads, const Act& dO, Act& dQ, Act& dK, Act& dV) {
  const int rows = q.rows, d = q.cols / heads, nseq = rows / T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  dQ.resize(rows, q.cols);
  dK.resize(rows, q.cols);
  dV.resize(rows, q.cols);
  std::vector<float> dP(static_cast<size_t>(T));
  for (int sq = 0; sq < nseq; ++sq) {
    for (int h = 0; h < heads; ++h) {
      const float* P = probs.data() + (static_cast<size_t>(sq) * heads + h) * T * T;
      for (int i = 0; i < T; ++i) {
        const float* doi = dO.row(sq * T + i) + h * d;
        const float* pi = P + static_cast<size_t>(i) * T;
        float weighted = 0;
        for (int j = 0; j <= i; ++j) {
          dP[static_cast<size_t>(j)] = dot(doi, v.row(sq * T + j) + h * d, d);
          weighted += pi[j] * dP[static_cast<size_t>(j)];
          float* dvj = dV.row(sq * T + j) + h * d;
          for (int c = 0; c < d; ++c) dvj[c] += pi[j] * doi[c];
        }
        float* dqi = dQ.row(sq * T + i) + h * d;
        const float* qi = q.row(sq * T + i) + h * d;
        for (int j = 0; j <= i; ++j) {
          const float ds = pi[j] * (dP[static_cast<size_t>(j)] - weighted) * scale;
          const float* kj = k.row(sq * T + j) + h * d;
          float* dkj = dK.row(sq * T + j) + h * d;
          for (int c = 0; c < d; ++c) {
            dqi[c] += ds * kj[c];
            dkj[c] += ds * qi[c];
          }
        }
      }
    }
  }
}

}  // namespace conflux::train::ref
