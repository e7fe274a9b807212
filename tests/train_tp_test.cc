// Tensor parallelism (Megatron) over real ranks: a transformer block split over 1, 2 and 4 ranks,
// with and without sequence parallelism, against the one-process block: the output, the input
// gradient and every parameter gradient (each rank's slice) within 1e-5 relative (worstRelative: with a
// floor of 1/16 of each tensor's largest magnitude), after two
// forward/backward passes so that gradients accumulate. The split layers' own pairing of
// communication is checked directly, and a layout the group cannot split is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conflux/train/ref/model.h"
#include "conflux/train/ref/tensor_parallel.h"
#include "conflux/train/tp.h"
#include "harness.h"

namespace cfxtest {
namespace {

namespace ref = conflux::train::ref;
namespace tp = conflux::train::tp;
using conflux::train::Error;

// The worst |got - want| / max(|want|, floor) over a tensor, floor = 1/16 of the tensor's largest
// magnitude: relative error for every element from a sixteenth of the largest up, and absolute at
// that scale below. Why: the tensor-parallel block differs from the one-process block only in the
// order of fp32 additions (each matmul's inner dimension, at most 4 * dim = 128 here, is cut into n
// partial sums that are added after). Rounding then differs by a few units in the last place of the
// dot products' terms, whose scale is the tensor's largest magnitude, wherever an element sits: an
// element far below that scale (a cancellation) carries the same absolute error, which no relative
// bound holds. With 1e-5 the bound is 1e-5 / 16 ~ 10 ulps of the largest element below the floor,
// and 1e-5 relative above it. Measured worst here: 2.8e-6. (Before: absolute 1e-5 below magnitude
// 1, about 40 ulps of these tensors' scale; a floor of 1/1000 reads 6e-5 from one-ulp noise.)
double worstRelative(const float* got, const float* want, size_t n) {
  double largest = 0;
  for (size_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(static_cast<double>(want[i])));
  const double floor = std::max(largest / 16, 1e-30);
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double scale = std::max(std::fabs(static_cast<double>(want[i])), floor);
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]) / scale);
  }
  return worst;
}

ref::Act randomAct(int rows, int cols, uint64_t seed) {
  ref::Act a;
  a.resize(rows, cols);
  ref::Rng rng(seed);
  for (float& x : a.v) x = rng.uniform(1.0f);
  return a;
}

ref::Act rowsOf(const ref::Act& a, int begin, int count) {
  ref::Act out;
  out.resize(count, a.cols);
  std::copy(a.row(begin), a.row(begin) + static_cast<size_t>(count) * a.cols, out.v.begin());
  return out;
}

// The tensor-parallel block of config `c` on `n` ranks against the one-process block, over
// `passes` forward/backward passes (gradients accumulate): this rank's rows of the output and of
// the input gradient, and its slice of every parameter gradient, within 1e-5.
void blockMatchesOneProcess(int n, bool sp, ref::TransformerConfig c, int sequences, int passes) {
  runRanks(n, [sp, c, sequences, passes](Rank& rk) {
    const ref::Batch batch = ref::makeTokenBatch(c, sequences, 7);
    ref::Model whole = ref::makeTransformer(c);
    whole.allocate(11);
    ref::Layer& block = whole.layer(1);
    tp::Group group(rk.comm, sp);
    auto tpBlock = ref::makeTensorParallelBlock("tp", c, group);
    std::vector<float> w(tpBlock->numParams()), g(tpBlock->numParams(), 0.0f);
    ref::shardTransformerBlock(c, group.size(), group.rank(), whole.params(1), w.data());
    tpBlock->bind(w.data(), g.data());
    whole.zeroGrad();

    const int rows = batch.rows, begin = group.rowBegin(rows), local = group.localRows(rows);
    for (int pass = 0; pass < passes; ++pass) {
      const ref::Act x = randomAct(rows, c.dim, 100 + pass), dout = randomAct(rows, c.dim, 200 + pass);
      ref::Act y, din, yLocal, dinLocal;
      block.forward(batch, x, y);
      block.backward(batch, dout, din);
      tpBlock->forward(batch, rowsOf(x, begin, local), yLocal);
      tpBlock->backward(batch, rowsOf(dout, begin, local), dinLocal);
      ASSERT_EQ(yLocal.rows, local);
      EXPECT_LT(worstRelative(yLocal.v.data(), rowsOf(y, begin, local).v.data(), yLocal.v.size()), 1e-5) << "pass " << pass;
      EXPECT_LT(worstRelative(dinLocal.v.data(), rowsOf(din, begin, local).v.data(), dinLocal.v.size()), 1e-5)
          << "pass " << pass;
    }
    std::vector<float> expected(g.size());
    ref::shardTransformerBlock(c, group.size(), group.rank(), whole.grads(1), expected.data());
    for (const auto& t : tpBlock->tensors()) {
      EXPECT_LT(worstRelative(g.data() + t.offset, expected.data() + t.offset, t.count), 1e-5) << t.name;
    }
  });
}

// 4 heads, ffn 32; 3 sequences of 8 tokens; two passes.
const ref::TransformerConfig kBlock{32, 8, 16, 4, 32, 1};
TEST(TensorParallel, BlockOneRank) { blockMatchesOneProcess(1, false, kBlock, 3, 2); }
TEST(TensorParallel, BlockTwoRanks) { blockMatchesOneProcess(2, false, kBlock, 3, 2); }
TEST(TensorParallel, BlockFourRanks) { blockMatchesOneProcess(4, false, kBlock, 3, 2); }
TEST(TensorParallel, SequenceParallelBlockOneRank) { blockMatchesOneProcess(1, true, kBlock, 3, 2); }
TEST(TensorParallel, SequenceParallelBlockTwoRanks) { blockMatchesOneProcess(2, true, kBlock, 3, 2); }
TEST(TensorParallel, SequenceParallelBlockFourRanks) { blockMatchesOneProcess(4, true, kBlock, 3, 2); }

// Sequence parallelism with rows that do not divide: 3 sequences of 5 tokens on 2 and 4 ranks.
const ref::TransformerConfig kOddRows{32, 5, 16, 4, 32, 1};
TEST(TensorParallel, SequenceParallelUnevenRowsTwoRanks) { blockMatchesOneProcess(2, true, kOddRows, 3, 1); }
TEST(TensorParallel, SequenceParallelUnevenRowsFourRanks) { blockMatchesOneProcess(4, true, kOddRows, 3, 1); }

// The block's initial values are the one-process block's draws, sliced.
TEST(TensorParallel, InitIsTheSliceOfTheOneProcessInit) {
  runRanks(2, [](Rank& rk) {
    const ref::TransformerConfig c{32, 8, 16, 4, 32, 1};
    tp::Group group(rk.comm, false);
    auto tpBlock = ref::makeTensorParallelBlock("tp", c, group);
    ref::Model whole = ref::makeTransformer(c);
    std::vector<float> full(whole.layer(1).numParams()), mine(tpBlock->numParams()), expected(mine.size());
    ref::Rng a(42), b(42);
    whole.layer(1).init(full.data(), a);
    tpBlock->init(mine.data(), b);
    ref::shardTransformerBlock(c, 2, group.rank(), full.data(), expected.data());
    EXPECT_EQ(mine, expected);
  });
}

// Megatron's pairing, element by element: a column-parallel layer's backward sums the input
// gradient over the group (every rank gets the whole); a row-parallel layer's forward sums the
// output, and its backward hands each rank the whole output gradient.
TEST(TensorParallel, ColumnAndRowLayersPairTheirCommunication) {
  runRanks(2, [](Rank& rk) {
    tp::Group group(rk.comm, false);
    ref::ColumnParallelLinear col(group, 2, 4);
    ref::RowParallelLinear row(group, 4, 2);
    ASSERT_EQ(col.localOut(), 2);
    ASSERT_EQ(row.localIn(), 2);
    const float r = static_cast<float>(group.rank());
    // Column: W_local = [[1, 0], [0, 1]] * (r + 1); x = [1, 2].
    std::vector<float> Wc = {r + 1, 0, 0, r + 1}, dWc(4, 0), dbc(2, 0);
    ref::Act x, y, dy, dx;
    x.resize(1, 2);
    x.v = {1, 2};
    col.forward(x, 1, Wc.data(), nullptr, y);
    EXPECT_EQ(y.v, std::vector<float>({r + 1, 2 * (r + 1)}));
    dy.resize(1, 2);
    dy.v = {1, 1};
    col.backward(dy, Wc.data(), dWc.data(), dbc.data(), dx);
    EXPECT_EQ(dx.v, std::vector<float>({3, 3}));  // (1 + 2) on each input, summed over both ranks
    // Row: x_local = [1, 1]; W_local = [[1, 0], [0, 1]] * (r + 1): y = sum over ranks = [3, 3], + b.
    std::vector<float> Wr = {r + 1, 0, 0, r + 1}, br = {10, 20}, dWr(4, 0), dbr(2, 0);
    ref::Act xr, yr, dyr, dxr;
    xr.resize(1, 2);
    xr.v = {1, 1};
    row.forward(xr, Wr.data(), br.data(), yr);
    EXPECT_EQ(yr.v, std::vector<float>({13, 23}));
    dyr.resize(1, 2);
    dyr.v = {1, 2};
    row.backward(dyr, Wr.data(), dWr.data(), dbr.data(), dxr);
    EXPECT_EQ(dxr.v, std::vector<float>({r + 1, 2 * (r + 1)}));
    EXPECT_EQ(dbr, std::vector<float>({1, 2}));  // replicated: every rank's whole, not summed
  });
}

TEST(TensorParallel, RefusesWhatTheGroupCannotSplit) {
  runRanks(2, [](Rank& rk) {
    tp::Group group(rk.comm, false);
    const ref::TransformerConfig oddHeads{32, 8, 15, 3, 32, 1};
    try {
      ref::makeTensorParallelBlock("tp", oddHeads, group);
      ADD_FAILURE() << "3 heads on 2 ranks accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), cfxInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("heads"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace cfxtest
