// Sequence parallelism over real ranks: ring attention (zigzag and contiguous shards, causal or
// not, overlapped or serialised) and Ulysses give the outputs and the Q/K/V gradients of one-
// process attention on the whole sequence within 1e-5, on 2, 3 and 4 ranks, including sequence
// lengths that do not divide evenly. The one-process attention is itself checked against closed
// forms and finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "conflux/train/ref/model.h"
#include "conflux/train/seqpar/attention.h"
#include "harness.h"

namespace cfxtest {
namespace {

namespace sp = conflux::train::seqpar;
using conflux::train::Error;

std::vector<float> randomTensor(size_t n, uint64_t seed) {
  conflux::train::ref::Rng rng(seed);
  std::vector<float> t(n);
  for (float& x : t) x = rng.uniform(1.0f);
  return t;
}

struct Full {
  sp::AttentionShape s;
  std::vector<float> q, k, v, dout, out, lse, dq, dk, dv;
  explicit Full(sp::AttentionShape shape) : s(shape) {
    const size_t n = static_cast<size_t>(s.seqLen) * static_cast<size_t>(s.heads) * static_cast<size_t>(s.headDim);
    q = randomTensor(n, 1);
    k = randomTensor(n, 2);
    v = randomTensor(n, 3);
    dout = randomTensor(n, 4);
    out.resize(n);
    lse.resize(static_cast<size_t>(s.seqLen) * static_cast<size_t>(s.heads));
    dq.resize(n);
    dk.resize(n);
    dv.resize(n);
    sp::attentionForward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
    sp::attentionBackward(s, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(), dq.data(), dk.data(),
                          dv.data());
  }
  size_t row() const { return static_cast<size_t>(s.heads) * static_cast<size_t>(s.headDim); }
  std::vector<float> rows(const std::vector<float>& t, const std::vector<int>& pos) const {
    std::vector<float> out;
    for (int p : pos) out.insert(out.end(), t.begin() + static_cast<std::ptrdiff_t>(p * row()),
                                 t.begin() + static_cast<std::ptrdiff_t>((p + 1) * row()));
    return out;
  }
};

// Largest |got - want| / max(1, |want|).
double worst(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double w = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    w = std::max(w, std::fabs(static_cast<double>(got[i]) - want[i]) / std::max(1.0, std::fabs(static_cast<double>(want[i]))));
  }
  return w;
}

template <typename Attention>
void matchesFull(Attention& att, const Full& f, const std::string& what) {
  const std::vector<int>& pos = att.positions();
  const std::vector<float> q = f.rows(f.q, pos), k = f.rows(f.k, pos), v = f.rows(f.v, pos), dout = f.rows(f.dout, pos);
  std::vector<float> out(q.size()), dq(q.size()), dk(q.size()), dv(q.size());
  att.forward(q.data(), k.data(), v.data(), out.data());
  att.backward(q.data(), k.data(), v.data(), out.data(), dout.data(), dq.data(), dk.data(), dv.data());
  EXPECT_LE(worst(out, f.rows(f.out, pos)), 1e-5) << what << ": output";
  EXPECT_LE(worst(dq, f.rows(f.dq, pos)), 1e-5) << what << ": dQ";
  EXPECT_LE(worst(dk, f.rows(f.dk, pos)), 1e-5) << what << ": dK";
  EXPECT_LE(worst(dv, f.rows(f.dv, pos)), 1e-5) << what << ": dV";
}

class SequenceParallel : public ::testing::TestWithParam<int> {};

TEST_P(SequenceParallel, RingAndUlyssesMatchFullAttention) {
  runRanks(GetParam(), [](Rank& rk) {
    const int n = rk.nranks;
    struct RingCase {
      int seqLen;
      bool causal;
      sp::Sharding sharding;
      bool overlap;
    };
    // 24 divides into 2N chunks for N = 2, 3, 4; 23 and 19 do not.
    for (RingCase c : {RingCase{24, true, sp::Sharding::kZigzag, true}, RingCase{23, true, sp::Sharding::kZigzag, true},
                       RingCase{24, false, sp::Sharding::kZigzag, true}, RingCase{19, false, sp::Sharding::kContiguous, true},
                       RingCase{19, true, sp::Sharding::kContiguous, false}, RingCase{23, true, sp::Sharding::kZigzag, false}}) {
      sp::AttentionShape shape{c.seqLen, 3, 8, c.causal};
      Full f(shape);
      sp::RingAttention ring(rk.comm, shape, sp::RingOptions{c.sharding, c.overlap});
      const std::string what = "ring N=" + std::to_string(n) + " S=" + std::to_string(c.seqLen) +
                               (c.causal ? " causal" : "") +
                               (c.sharding == sp::Sharding::kZigzag ? " zigzag" : " contiguous") +
                               (c.overlap ? "" : " serialised");
      matchesFull(ring, f, what);
      // Twice: buffers and state carry nothing from one call to the next.
      matchesFull(ring, f, what + " (again)");
    }
    for (auto [seqLen, causal] : {std::pair{24, true}, std::pair{21, true}, std::pair{22, false}}) {
      sp::AttentionShape shape{seqLen, 12, 4, causal};
      Full f(shape);
      sp::Ulysses u(rk.comm, shape);
      matchesFull(u, f, "Ulysses N=" + std::to_string(n) + " S=" + std::to_string(seqLen) + (causal ? " causal" : ""));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, SequenceParallel, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return "n" + std::to_string(i.param); });

TEST(SequenceParallelErrors, UlyssesHeadsMustDivideAndRingNeedsTokens) {
  runRanks(3, [](Rank& rk) {
    try {
      sp::Ulysses u(rk.comm, sp::AttentionShape{12, 4, 8, true});
      ADD_FAILURE() << "Ulysses accepted 4 heads on 3 ranks";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("4 heads do not divide over 3 ranks"), std::string::npos) << e.what();
    }
    try {
      sp::RingAttention r(rk.comm, sp::AttentionShape{5, 2, 8, true});  // zigzag needs 6 chunks
      ADD_FAILURE() << "ring attention accepted 5 tokens in 6 zigzag chunks";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("seqLen >= 6"), std::string::npos) << e.what();
    }
    sp::RingAttention r(rk.comm, sp::AttentionShape{12, 2, 8, true});
    std::vector<float> x(static_cast<size_t>(r.localTokens()) * 16);
    try {
      r.backward(x.data(), x.data(), x.data(), x.data(), x.data(), x.data(), x.data(), x.data());
      ADD_FAILURE() << "backward without forward";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidUsage);
    }
  });
}

// Zigzag sharding balances causal work: every rank's queries see the same number of keys.
TEST(SequenceParallelShards, ZigzagBalancesCausalWork) {
  for (int n = 1; n <= 8; ++n) {
    const int S = 2 * n * 5;
    long first = -1;
    std::vector<int> seen(static_cast<size_t>(S), 0);
    for (int r = 0; r < n; ++r) {
      long work = 0;
      for (int p : sp::shardPositions(S, n, r, sp::Sharding::kZigzag)) {
        work += p + 1;
        seen[static_cast<size_t>(p)]++;
      }
      if (first < 0) first = work;
      EXPECT_EQ(work, first) << "n=" << n << " rank " << r;
    }
    for (int c : seen) EXPECT_EQ(c, 1) << "n=" << n;  // a partition of the sequence
  }
  EXPECT_EQ(sp::shardPositions(7, 2, 0, sp::Sharding::kZigzag), (std::vector<int>{0, 5, 6}));
  EXPECT_EQ(sp::shardPositions(7, 2, 1, sp::Sharding::kZigzag), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(sp::shardPositions(7, 2, 1, sp::Sharding::kContiguous), (std::vector<int>{3, 4, 5, 6}));
}

// The reference itself: causal attention of two tokens with one head of size 1.
TEST(FullAttention, ClosedFormTwoTokens) {
  const float q[2] = {0.5f, 1.0f}, k[2] = {2.0f, -1.0f}, v[2] = {3.0f, 5.0f};
  float out[2], lse[2];
  sp::attentionForward(sp::AttentionShape{2, 1, 1, true}, q, k, v, out, lse);
  EXPECT_FLOAT_EQ(out[0], 3.0f);
  EXPECT_FLOAT_EQ(lse[0], 1.0f);  // score q0 k0 = 1
  const double w0 = std::exp(2.0), w1 = std::exp(-1.0);  // q1 k0, q1 k1
  EXPECT_NEAR(out[1], (3.0 * w0 + 5.0 * w1) / (w0 + w1), 1e-6);
  EXPECT_NEAR(lse[1], std::log(w0 + w1), 1e-6);
}

// Backward against central differences of sum(dout * out).
TEST(FullAttention, BackwardMatchesFiniteDifferences) {
  for (bool causal : {false, true}) {
    sp::AttentionShape s{5, 2, 3, causal};
    Full f(s);
    auto objective = [&](const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v) {
      std::vector<float> out(q.size()), lse(f.lse.size());
      sp::attentionForward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
      double o = 0;
      for (size_t i = 0; i < out.size(); ++i) o += static_cast<double>(out[i]) * f.dout[i];
      return o;
    };
    const float h = 1e-2f;
    for (int which = 0; which < 3; ++which) {
      const std::vector<float>& grad = which == 0 ? f.dq : which == 1 ? f.dk : f.dv;
      for (size_t i = 0; i < f.q.size(); i += 3) {
        std::vector<float> q = f.q, k = f.k, v = f.v;
        std::vector<float>& x = which == 0 ? q : which == 1 ? k : v;
        x[i] += h;
        const double up = objective(q, k, v);
        x[i] -= 2 * h;
        const double down = objective(q, k, v);
        EXPECT_NEAR(grad[i], (up - down) / (2 * h), 2e-3) << (causal ? "causal " : "") << "tensor " << which << " elem " << i;
      }
    }
  }
}

}  // namespace
}  // namespace cfxtest
