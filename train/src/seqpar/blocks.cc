#include "blocks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace conflux::train::seqpar {
namespace detail {
namespace {

size_t at(const AttentionShape& s, int token, int head) {
  return (static_cast<size_t>(token) * static_cast<size_t>(s.heads) + static_cast<size_t>(head)) *
         static_cast<size_t>(s.headDim);
}

double dot(const float* a, const float* b, int n) {
  double acc = 0;
  for (int d = 0; d < n; ++d) acc += static_cast<double>(a[d]) * static_cast<double>(b[d]);
  return acc;
}

bool visible(const AttentionShape& s, int qpos, int kpos) { return !s.causal || kpos <= qpos; }

}  // namespace

bool attendForward(const AttentionShape& s, Rows q, Rows k, const float* v, float* out, float* lse) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.headDim));
  const int D = s.headDim;
  std::vector<double> score(static_cast<size_t>(k.n)), acc(static_cast<size_t>(D));
  bool any = false;
  for (int i = 0; i < q.n; ++i) {
    for (int h = 0; h < s.heads; ++h) {
      const float* qi = q.data + at(s, i, h);
      double mx = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < k.n; ++j) {
        if (!visible(s, q.pos[i], k.pos[j])) continue;
        score[static_cast<size_t>(j)] = scale * dot(qi, k.data + at(s, j, h), D);
        mx = std::max(mx, score[static_cast<size_t>(j)]);
      }
      if (mx == -std::numeric_limits<double>::infinity()) continue;  // every key masked
      any = true;
      std::fill(acc.begin(), acc.end(), 0.0);
      double sum = 0;
      for (int j = 0; j < k.n; ++j) {
        if (!visible(s, q.pos[i], k.pos[j])) continue;
        const double e = std::exp(score[static_cast<size_t>(j)] - mx);
        sum += e;
        const float* vj = v + at(s, j, h);
        for (int d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += e * static_cast<double>(vj[d]);
      }
      const double blockLse = mx + std::log(sum);
      float* o = out + at(s, i, h);
      float& l = lse[static_cast<size_t>(i) * static_cast<size_t>(s.heads) + static_cast<size_t>(h)];
      const double old = l;
      const double top = std::max(old, blockLse);
      const double wOld = old == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(old - top);
      const double wNew = std::exp(blockLse - top);
      const double total = top + std::log(wOld + wNew);
      const double a = wOld / (wOld + wNew), b = wNew / (wOld + wNew);
      for (int d = 0; d < D; ++d) {
        o[d] = static_cast<float>(a * static_cast<double>(o[d]) + b * acc[static_cast<size_t>(d)] / sum);
      }
      l = static_cast<float>(total);
    }
  }
  return any;
}

void attendBackward(const AttentionShape& s, Rows q, Rows k, const float* v, const float* dout, const float* lse,
                    const float* delta, float* dq, float* dk, float* dv) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.headDim));
  const int D = s.headDim;
  for (int i = 0; i < q.n; ++i) {
    for (int h = 0; h < s.heads; ++h) {
      const size_t row = static_cast<size_t>(i) * static_cast<size_t>(s.heads) + static_cast<size_t>(h);
      const float* qi = q.data + at(s, i, h);
      const float* doi = dout + at(s, i, h);
      float* dqi = dq + at(s, i, h);
      for (int j = 0; j < k.n; ++j) {
        if (!visible(s, q.pos[i], k.pos[j])) continue;
        const float* kj = k.data + at(s, j, h);
        const float* vj = v + at(s, j, h);
        const double p = std::exp(scale * dot(qi, kj, D) - static_cast<double>(lse[row]));
        const double dp = dot(doi, vj, D);
        const double ds = p * (dp - static_cast<double>(delta[row])) * scale;
        float* dkj = dk + at(s, j, h);
        float* dvj = dv + at(s, j, h);
        for (int d = 0; d < D; ++d) {
          dvj[d] += static_cast<float>(p * static_cast<double>(doi[d]));
          dqi[d] += static_cast<float>(ds * static_cast<double>(kj[d]));
          dkj[d] += static_cast<float>(ds * static_cast<double>(qi[d]));
        }
      }
    }
  }
}

void rowDot(const AttentionShape& s, int n, const float* dout, const float* out, float* delta) {
  for (int i = 0; i < n; ++i) {
    for (int h = 0; h < s.heads; ++h) {
      delta[static_cast<size_t>(i) * static_cast<size_t>(s.heads) + static_cast<size_t>(h)] =
          static_cast<float>(dot(dout + at(s, i, h), out + at(s, i, h), s.headDim));
    }
  }
}

}  // namespace detail

namespace {

void checkShape(const AttentionShape& s, const char* who) {
  if (s.seqLen < 1 || s.heads < 1 || s.headDim < 1) {
    throw Error(cfxInvalidArgument, std::string(who) + ": seqLen, heads and headDim must be positive (got " +
                                        std::to_string(s.seqLen) + ", " + std::to_string(s.heads) + ", " +
                                        std::to_string(s.headDim) + ")");
  }
}

std::vector<int> iota(int n) {
  std::vector<int> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
  return p;
}

}  // namespace

std::vector<int> shardPositions(int seqLen, int ranks, int rank, Sharding sharding) {
  if (seqLen < 1 || ranks < 1 || rank < 0 || rank >= ranks) {
    throw Error(cfxInvalidArgument, "shardPositions: need seqLen >= 1 and 0 <= rank < ranks (got seqLen " +
                                        std::to_string(seqLen) + ", rank " + std::to_string(rank) + " of " +
                                        std::to_string(ranks) + ")");
  }
  // Chunk c of `chunks` covers [c * S / chunks, (c + 1) * S / chunks): lengths differ by at most one.
  auto chunk = [&](int c, int chunks, std::vector<int>& out) {
    const long lo = static_cast<long>(c) * seqLen / chunks, hi = static_cast<long>(c + 1) * seqLen / chunks;
    for (long t = lo; t < hi; ++t) out.push_back(static_cast<int>(t));
  };
  std::vector<int> out;
  if (sharding == Sharding::kContiguous) {
    chunk(rank, ranks, out);
  } else {
    chunk(rank, 2 * ranks, out);
    chunk(2 * ranks - 1 - rank, 2 * ranks, out);
  }
  return out;
}

void attentionForward(const AttentionShape& s, const float* q, const float* k, const float* v, float* out,
                      float* lse) {
  checkShape(s, "attentionForward");
  const std::vector<int> pos = iota(s.seqLen);
  const size_t rows = static_cast<size_t>(s.seqLen) * static_cast<size_t>(s.heads);
  std::fill(out, out + rows * static_cast<size_t>(s.headDim), 0.0f);
  std::fill(lse, lse + rows, -std::numeric_limits<float>::infinity());
  detail::attendForward(s, {q, pos.data(), s.seqLen}, {k, pos.data(), s.seqLen}, v, out, lse);
}

void attentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* out,
                       const float* lse, const float* dout, float* dq, float* dk, float* dv) {
  checkShape(s, "attentionBackward");
  const std::vector<int> pos = iota(s.seqLen);
  const size_t rows = static_cast<size_t>(s.seqLen) * static_cast<size_t>(s.heads);
  const size_t n = rows * static_cast<size_t>(s.headDim);
  std::vector<float> delta(rows);
  detail::rowDot(s, s.seqLen, dout, out, delta.data());
  std::fill(dq, dq + n, 0.0f);
  std::fill(dk, dk + n, 0.0f);
  std::fill(dv, dv + n, 0.0f);
  detail::attendBackward(s, {q, pos.data(), s.seqLen}, {k, pos.data(), s.seqLen}, v, dout, lse, delta.data(), dq, dk,
                         dv);
}

}  // namespace conflux::train::seqpar
