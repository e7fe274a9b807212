// Dense kernels of the reference model, row-major, in fixed loop orders (so results depend only
// on the inputs, never on threads or timing). Inner loops run over contiguous memory so the
// compiler vectorises them without reassociating any sum.
#pragma once

#include <cstddef>

namespace conflux::train::ref {

// C[m,n] = A[m,k] B[k,n] (+ C if accumulate).
inline void matmul(const float* A, const float* B, float* C, int m, int k, int n, bool accumulate) {
  for (int i = 0; i < m; ++i) {
    float* c = C + static_cast<size_t>(i) * n;
    if (!accumulate) {
      for (int j = 0; j < n; ++j) c[j] = 0.0f;
    }
    const float* a = A + static_cast<size_t>(i) * k;
    for (int p = 0; p < k; ++p) {
      const float s = a[p];
      const float* b = B + static_cast<size_t>(p) * n;
      for (int j = 0; j < n; ++j) c[j] += s * b[j];
    }
  }
}

// C[k,n] += A[m,k]^T B[m,n] (weight gradients: summed over rows in row order).
inline void matmulTnAcc(const float* A, const float* B, float* C, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    const float* a = A + static_cast<size_t>(i) * k;
    const float* b = B + static_cast<size_t>(i) * n;
    for (int p = 0; p < k; ++p) {
      const float s = a[p];
      float* c = C + static_cast<size_t>(p) * n;
      for (int j = 0; j < n; ++j) c[j] += s * b[j];
    }
  }
}

// Dot product with eight fixed partial sums.
inline float dot(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  }
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// C[m,k] = A[m,n] B[k,n]^T (+ C if accumulate): input gradients through a weight.
inline void matmulNt(const float* A, const float* B, float* C, int m, int n, int k, bool accumulate) {
  for (int i = 0; i < m; ++i) {
    const float* a = A + static_cast<size_t>(i) * n;
    float* c = C + static_cast<size_t>(i) * k;
    for (int p = 0; p < k; ++p) {
      float s = dot(a, B + static_cast<size_t>(p) * n, n);
      c[p] = accumulate ? c[p] + s : s;
    }
  }
}

// y[r,:] += bias; and the bias gradient db += column sums of dy.
inline void addBias(float* y, const float* bias, int rows, int n) {
  for (int r = 0; r < rows; ++r) {
    float* row = y + static_cast<size_t>(r) * n;
    for (int j = 0; j < n; ++j) row[j] += bias[j];
  }
}
inline void biasGrad(const float* dy, float* db, int rows, int n) {
  for (int r = 0; r < rows; ++r) {
    const float* row = dy + static_cast<size_t>(r) * n;
    for (int j = 0; j < n; ++j) db[j] += row[j];
  }
}

}  // namespace conflux::train::ref
