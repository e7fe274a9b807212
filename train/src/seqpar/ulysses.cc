// Ulysses sequence parallelism. Rank r holds tokens [r L, min((r + 1) L, S)) of every head,
// L = ceil(S / N). One AlltoAll sends rank j the heads [j H/N, (j + 1) H/N) of this rank's tokens
// (Q, K and V together, each shard padded to L tokens so every block has the same size); rank j
// then holds its heads for the whole sequence, drops the padding, and runs ordinary attention.
// A second AlltoAll returns each token's output to the rank that holds the token. Backward runs
// the same two exchanges in the opposite direction around the attention's backward.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "conflux/train/seqpar/attention.h"

namespace conflux::train::seqpar {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

struct Ulysses::Impl {
  cfxComm_t comm = nullptr;
  AttentionShape shape, local;  // local: the whole sequence, this rank's heads
  int rank = 0, n = 1, L = 0, Hn = 0;
  std::vector<int> positions;
  // Head-sharded tensors of the last forward, [S, Hn, D], for backward.
  std::vector<float> q, k, v, out, lse;
  SeqParStats stats;

  int tokens(int r) const { return std::max(0, std::min((r + 1) * L, shape.seqLen) - r * L); }
  size_t headBlock() const { return static_cast<size_t>(Hn) * static_cast<size_t>(shape.headDim); }
  size_t slot() const { return static_cast<size_t>(L) * headBlock(); }  // one tensor's block per peer

  // Sequence-sharded [tokens, H, D] tensors -> the AlltoAll's send buffer [peer][tensor][L][Hn][D].
  void pack(const std::vector<const float*>& src, std::vector<float>& send) const {
    const size_t T = src.size(), D = static_cast<size_t>(shape.headDim), H = static_cast<size_t>(shape.heads);
    send.assign(static_cast<size_t>(n) * T * slot(), 0.0f);
    for (int j = 0; j < n; ++j) {
      for (size_t x = 0; x < T; ++x) {
        float* dst = send.data() + (static_cast<size_t>(j) * T + x) * slot();
        for (int t = 0; t < tokens(rank); ++t) {
          std::memcpy(dst + static_cast<size_t>(t) * headBlock(),
                      src[x] + (static_cast<size_t>(t) * H + static_cast<size_t>(j) * static_cast<size_t>(Hn)) * D,
                      headBlock() * sizeof(float));
        }
      }
    }
  }
  // The AlltoAll's receive buffer [peer][tensor][L][Hn][D] -> head-sharded [S, Hn, D] tensors.
  void gatherSequence(const std::vector<float>& recv, const std::vector<std::vector<float>*>& dst) const {
    const size_t T = dst.size();
    for (size_t x = 0; x < T; ++x) dst[x]->assign(static_cast<size_t>(shape.seqLen) * headBlock(), 0.0f);
    for (int i = 0; i < n; ++i) {
      for (size_t x = 0; x < T; ++x) {
        const float* src = recv.data() + (static_cast<size_t>(i) * T + x) * slot();
        std::memcpy(dst[x]->data() + static_cast<size_t>(i) * slot(), src,
                    static_cast<size_t>(tokens(i)) * headBlock() * sizeof(float));
      }
    }
  }
  // Head-sharded [S, Hn, D] tensors -> send buffer [peer][tensor][L][Hn][D] of each peer's tokens.
  void scatterSequence(const std::vector<const float*>& src, std::vector<float>& send) const {
    const size_t T = src.size();
    send.assign(static_cast<size_t>(n) * T * slot(), 0.0f);
    for (int i = 0; i < n; ++i) {
      for (size_t x = 0; x < T; ++x) {
        std::memcpy(send.data() + (static_cast<size_t>(i) * T + x) * slot(), src[x] + static_cast<size_t>(i) * slot(),
                    static_cast<size_t>(tokens(i)) * headBlock() * sizeof(float));
      }
    }
  }
  // Receive buffer [peer j][tensor][L][Hn][D] (this rank's tokens, heads of j) -> [tokens, H, D].
  void unpack(const std::vector<float>& recv, const std::vector<float*>& dst) const {
    const size_t T = dst.size(), D = static_cast<size_t>(shape.headDim), H = static_cast<size_t>(shape.heads);
    for (int j = 0; j < n; ++j) {
      for (size_t x = 0; x < T; ++x) {
        const float* src = recv.data() + (static_cast<size_t>(j) * T + x) * slot();
        for (int t = 0; t < tokens(rank); ++t) {
          std::memcpy(dst[x] + (static_cast<size_t>(t) * H + static_cast<size_t>(j) * static_cast<size_t>(Hn)) * D,
                      src + static_cast<size_t>(t) * headBlock(), headBlock() * sizeof(float));
        }
      }
    }
  }
  void alltoall(const std::vector<float>& send, std::vector<float>& recv, size_t tensors) {
    const auto t0 = Clock::now();
    recv.assign(send.size(), 0.0f);
    check(cfxAlltoAll(send.data(), recv.data(), tensors * slot(), cfxFloat32, comm, nullptr), "Ulysses AlltoAll", comm);
    stats.exposedCommSeconds += since(t0);
  }
};

Ulysses::Ulysses(cfxComm_t comm, AttentionShape shape) : impl_(std::make_unique<Impl>()) {
  if (comm == nullptr) throw Error(cfxInvalidArgument, "Ulysses: comm is NULL");
  Impl& d = *impl_;
  check(cfxCommCount(comm, &d.n), "cfxCommCount", comm);
  check(cfxCommUserRank(comm, &d.rank), "cfxCommUserRank", comm);
  if (shape.seqLen < 1 || shape.heads < 1 || shape.headDim < 1) {
    throw Error(cfxInvalidArgument, "Ulysses: seqLen, heads and headDim must be positive");
  }
  if (shape.heads % d.n != 0) {
    throw Error(cfxInvalidArgument, "Ulysses: " + std::to_string(shape.heads) + " heads do not divide over " +
                                        std::to_string(d.n) + " ranks (each rank takes heads / ranks whole heads; "
                                        "use RingAttention, or a head count that is a multiple of the rank count)");
  }
  d.comm = comm;
  d.shape = shape;
  d.Hn = shape.heads / d.n;
  d.L = (shape.seqLen + d.n - 1) / d.n;
  d.local = AttentionShape{shape.seqLen, d.Hn, shape.headDim, shape.causal};
  for (int t = 0; t < d.tokens(d.rank); ++t) d.positions.push_back(d.rank * d.L + t);
}

Ulysses::~Ulysses() = default;

const std::vector<int>& Ulysses::positions() const { return impl_->positions; }
int Ulysses::localTokens() const { return static_cast<int>(impl_->positions.size()); }
const SeqParStats& Ulysses::lastStats() const { return impl_->stats; }

void Ulysses::forward(const float* q, const float* k, const float* v, float* out) {
  Impl& d = *impl_;
  const auto t0 = Clock::now();
  d.stats = SeqParStats{};
  std::vector<float> send, recv;
  d.pack({q, k, v}, send);
  d.alltoall(send, recv, 3);
  d.gatherSequence(recv, {&d.q, &d.k, &d.v});
  const auto c0 = Clock::now();
  d.out.assign(d.q.size(), 0.0f);
  d.lse.assign(static_cast<size_t>(d.shape.seqLen) * static_cast<size_t>(d.Hn), 0.0f);
  attentionForward(d.local, d.q.data(), d.k.data(), d.v.data(), d.out.data(), d.lse.data());
  d.stats.computeSeconds += since(c0);
  d.scatterSequence({d.out.data()}, send);
  d.alltoall(send, recv, 1);
  d.unpack(recv, {out});
  d.stats.seconds = since(t0);
}

void Ulysses::backward(const float*, const float*, const float*, const float*, const float* dout, float* dq, float* dk,
                       float* dv) {
  Impl& d = *impl_;
  if (d.out.empty()) throw Error(cfxInvalidUsage, "Ulysses::backward: no forward to go back through");
  const auto t0 = Clock::now();
  d.stats = SeqParStats{};
  std::vector<float> send, recv, doutH;
  d.pack({dout}, send);
  d.alltoall(send, recv, 1);
  d.gatherSequence(recv, {&doutH});
  const auto c0 = Clock::now();
  std::vector<float> dqH(d.q.size()), dkH(d.q.size()), dvH(d.q.size());
  attentionBackward(d.local, d.q.data(), d.k.data(), d.v.data(), d.out.data(), d.lse.data(), doutH.data(), dqH.data(),
                    dkH.data(), dvH.data());
  d.stats.computeSeconds += since(c0);
  d.scatterSequence({dqH.data(), dkH.data(), dvH.data()}, send);
  d.alltoall(send, recv, 3);
  d.unpack(recv, {dq, dk, dv});
  d.stats.seconds = since(t0);
}

}  // namespace conflux::train::seqpar
