// Ring attention. Every rank starts holding its own K/V block; at step t it holds the block of
// rank (r - t) mod N, and it passes that block on to r + 1 while it receives the next from r - 1.
//
// Forward, step t of N: post the exchange of the block in hand (unless t = N - 1) on the stream,
// attend this rank's queries to the block in hand, merging into the running output through the
// log-sum-exp, then wait for the exchange. With overlap off, the exchange is waited for before the
// attention instead: the same work, serialised, to measure what overlap hides.
//
// Backward, step t: the block in hand comes with the dK/dV accumulated for it by the ranks it has
// visited. Post the K/V exchange for the next step, add this rank's share to dQ and to the block's
// dK/dV, wait, then pass the dK/dV on. After N steps each block's dK/dV are back at their owner.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "blocks.h"
#include "conflux/train/seqpar/attention.h"

namespace conflux::train::seqpar {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

struct RingAttention::Impl {
  cfxComm_t comm = nullptr;
  cfxStream_t stream = nullptr;
  AttentionShape shape;
  RingOptions opts;
  int rank = 0, n = 1;
  std::vector<std::vector<int>> positions;  // per rank
  size_t rowElems = 0;                      // heads x headDim
  std::vector<float> lse;                   // this rank's rows, from the last forward
  SeqParStats stats;

  size_t tokens(int r) const { return positions[static_cast<size_t>(r)].size(); }
  size_t blockElems(int r) const { return tokens(r) * rowElems; }
  size_t largestBlock() const {
    size_t m = 0;
    for (int r = 0; r < n; ++r) m = std::max(m, blockElems(r));
    return m;
  }
  int prev() const { return (rank + n - 1) % n; }
  int next() const { return (rank + 1) % n; }
  int holder(int step) const { return ((rank - step) % n + n) % n; }  // whose block is in hand at `step`

  // Posts "send `send` (count) to next, receive `recv` (count) from prev" on the stream.
  void post(const float* send, size_t sendCount, float* recv, size_t recvCount, cfxStream_t on) {
    check(cfxGroupStart(), "cfxGroupStart", comm);
    cfxResult_t a = cfxSend(send, sendCount, cfxFloat32, next(), comm, on);
    cfxResult_t b = a == cfxSuccess ? cfxRecv(recv, recvCount, cfxFloat32, prev(), comm, on) : a;
    cfxResult_t e = cfxGroupEnd();
    check(a, "ring attention send", comm);
    check(b, "ring attention recv", comm);
    check(e, "ring attention exchange", comm);
  }

  void wait() {
    const auto t0 = Clock::now();
    check(cfxStreamSynchronize(stream), "ring attention exchange", comm);
    stats.exposedCommSeconds += since(t0);
  }
};

RingAttention::RingAttention(cfxComm_t comm, AttentionShape shape, RingOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (comm == nullptr) throw Error(cfxInvalidArgument, "RingAttention: comm is NULL");
  Impl& d = *impl_;
  check(cfxCommCount(comm, &d.n), "cfxCommCount", comm);
  check(cfxCommUserRank(comm, &d.rank), "cfxCommUserRank", comm);
  const int chunks = options.sharding == Sharding::kZigzag ? 2 * d.n : d.n;
  if (shape.heads < 1 || shape.headDim < 1 || shape.seqLen < chunks) {
    throw Error(cfxInvalidArgument, "RingAttention: need heads, headDim >= 1 and seqLen >= " + std::to_string(chunks) +
                                        " (one token per chunk) on " + std::to_string(d.n) + " ranks; got seqLen " +
                                        std::to_string(shape.seqLen) + ", heads " + std::to_string(shape.heads) +
                                        ", headDim " + std::to_string(shape.headDim));
  }
  d.comm = comm;
  d.shape = shape;
  d.opts = options;
  d.rowElems = static_cast<size_t>(shape.heads) * static_cast<size_t>(shape.headDim);
  for (int r = 0; r < d.n; ++r) d.positions.push_back(shardPositions(shape.seqLen, d.n, r, options.sharding));
  check(cfxStreamCreate(&d.stream), "cfxStreamCreate", comm);
}

RingAttention::~RingAttention() {
  if (impl_->stream != nullptr) {
    (void)cfxStreamSynchronize(impl_->stream);
    (void)cfxStreamDestroy(impl_->stream);
  }
}

const std::vector<int>& RingAttention::positions() const { return impl_->positions[static_cast<size_t>(impl_->rank)]; }
int RingAttention::localTokens() const { return static_cast<int>(impl_->tokens(impl_->rank)); }
const SeqParStats& RingAttention::lastStats() const { return impl_->stats; }

void RingAttention::forward(const float* q, const float* k, const float* v, float* out) {
  Impl& d = *impl_;
  const auto t0 = Clock::now();
  d.stats = SeqParStats{};
  const size_t mine = d.tokens(d.rank), maxBlock = 2 * d.largestBlock();
  std::fill(out, out + mine * d.rowElems, 0.0f);
  d.lse.assign(mine * static_cast<size_t>(d.shape.heads), -std::numeric_limits<float>::infinity());
  // Two K/V buffers, [K | V] each: the block in hand and the one arriving.
  std::vector<float> bufs[2] = {std::vector<float>(maxBlock), std::vector<float>(maxBlock)};
  std::memcpy(bufs[0].data(), k, d.blockElems(d.rank) * sizeof(float));
  std::memcpy(bufs[0].data() + d.blockElems(d.rank), v, d.blockElems(d.rank) * sizeof(float));
  const detail::Rows qs{q, d.positions[static_cast<size_t>(d.rank)].data(), static_cast<int>(mine)};
  for (int t = 0; t < d.n; ++t) {
    const int src = d.holder(t);
    const std::vector<float>& cur = bufs[t % 2];
    const bool exchange = t + 1 < d.n;
    if (exchange) {
      const int incoming = d.holder(t + 1);
      d.post(cur.data(), 2 * d.blockElems(src), bufs[(t + 1) % 2].data(), 2 * d.blockElems(incoming), d.stream);
      if (!d.opts.overlap) d.wait();
    }
    const auto c0 = Clock::now();
    const detail::Rows ks{cur.data(), d.positions[static_cast<size_t>(src)].data(), static_cast<int>(d.tokens(src))};
    detail::attendForward(d.shape, qs, ks, cur.data() + d.blockElems(src), out, d.lse.data());
    d.stats.computeSeconds += since(c0);
    if (exchange && d.opts.overlap) d.wait();
  }
  d.stats.seconds = since(t0);
}

void RingAttention::backward(const float* q, const float* k, const float* v, const float* out, const float* dout,
                             float* dq, float* dk, float* dv) {
  Impl& d = *impl_;
  const size_t mine = d.tokens(d.rank);
  if (d.lse.size() != mine * static_cast<size_t>(d.shape.heads)) {
    throw Error(cfxInvalidUsage, "RingAttention::backward: no forward to go back through");
  }
  const auto t0 = Clock::now();
  d.stats = SeqParStats{};
  const size_t maxBlock = d.largestBlock();
  std::vector<float> delta(mine * static_cast<size_t>(d.shape.heads));
  detail::rowDot(d.shape, static_cast<int>(mine), dout, out, delta.data());
  std::fill(dq, dq + mine * d.rowElems, 0.0f);
  std::vector<float> kv[2] = {std::vector<float>(2 * maxBlock), std::vector<float>(2 * maxBlock)};
  std::vector<float> grad[2] = {std::vector<float>(2 * maxBlock, 0.0f), std::vector<float>(2 * maxBlock)};
  std::memcpy(kv[0].data(), k, d.blockElems(d.rank) * sizeof(float));
  std::memcpy(kv[0].data() + d.blockElems(d.rank), v, d.blockElems(d.rank) * sizeof(float));
  const detail::Rows qs{q, d.positions[static_cast<size_t>(d.rank)].data(), static_cast<int>(mine)};
  for (int t = 0; t < d.n; ++t) {
    const int src = d.holder(t), incoming = d.holder(t + 1);
    const size_t e = d.blockElems(src);
    std::vector<float>& cur = kv[t % 2];
    std::vector<float>& g = grad[t % 2];
    const bool prefetch = t + 1 < d.n;
    if (prefetch) {
      d.post(cur.data(), 2 * e, kv[(t + 1) % 2].data(), 2 * d.blockElems(incoming), d.stream);
      if (!d.opts.overlap) d.wait();
    }
    const auto c0 = Clock::now();
    const detail::Rows ks{cur.data(), d.positions[static_cast<size_t>(src)].data(), static_cast<int>(d.tokens(src))};
    detail::attendBackward(d.shape, qs, ks, cur.data() + e, dout, d.lse.data(), delta.data(), dq, g.data(),
                           g.data() + e);
    d.stats.computeSeconds += since(c0);
    if (prefetch && d.opts.overlap) d.wait();
    if (d.n == 1) break;
    // The block's dK/dV move on with it (after the last step: home to its owner, rank r + 1).
    const auto w0 = Clock::now();
    d.post(g.data(), 2 * e, grad[(t + 1) % 2].data(), 2 * d.blockElems(incoming), nullptr);
    d.stats.exposedCommSeconds += since(w0);
  }
  // After N steps the gradients in hand are this rank's own block's.
  const std::vector<float>& own = grad[d.n == 1 ? 0 : d.n % 2];
  std::memcpy(dk, own.data(), d.blockElems(d.rank) * sizeof(float));
  std::memcpy(dv, own.data() + d.blockElems(d.rank), d.blockElems(d.rank) * sizeof(float));
  d.stats.seconds = since(t0);
}

}  // namespace conflux::train::seqpar
