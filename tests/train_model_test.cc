// The reference model itself: backward against central differences, tensor by tensor; data
// slicing; the optimizers' update rules on exact inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "conflux/train/optim.h"
#include "conflux/train/ref/model.h"
#include "train_support.h"

namespace cfxtest {
namespace {

// For a few entries of every tensor: d(loss)/dw by central differences (in double over fp32
// losses) against backward's gradient. The check is per tensor: ||num - ana|| <= 5% ||ana||.
void gradientCheck(ref::Model& m, const ref::Batch& b) {
  m.allocate(3);
  m.zeroGrad();
  m.forward(b);
  m.backward(b);
  ref::Rng pick(99);
  for (int l = 0; l < m.layerCount(); ++l) {
    for (const ref::TensorSpec& t : m.layer(l).tensors()) {
      double err2 = 0, ana2 = 0;
      for (int k = 0; k < 6; ++k) {
        size_t i = t.offset + static_cast<size_t>(pick.below(static_cast<int>(t.count)));
        float* w = m.params(l) + i;
        const float saved = *w, eps = 3e-3f;
        *w = saved + eps;
        double up = m.forward(b);
        *w = saved - eps;
        double down = m.forward(b);
        *w = saved;
        double num = (up - down) / (2.0 * eps), ana = m.grads(l)[i];
        err2 += (num - ana) * (num - ana);
        ana2 += ana * ana;
      }
      EXPECT_LE(std::sqrt(err2), 0.05 * std::sqrt(ana2) + 1e-4)
          << m.layer(l).name() << "." << t.name << ": backward disagrees with finite differences";
      EXPECT_GT(ana2, 0.0) << m.layer(l).name() << "." << t.name << ": no gradient reached it";
    }
  }
}

TEST(RefModel, TransformerGradientsMatchFiniteDifferences) {
  ref::TransformerConfig c = testTransformer();
  ref::Model m = ref::makeTransformer(c);
  gradientCheck(m, ref::makeTokenBatch(c, 3, 5));
}

TEST(RefModel, MlpGradientsMatchFiniteDifferences) {
  ref::MlpConfig c;
  ref::Model m = ref::makeMlp(c);
  gradientCheck(m, ref::makeClassBatch(c, 10, 5));
}

TEST(RefModel, SlicesAreEqualAndContiguous) {
  ref::Batch b = stepBatch(0);
  ref::Batch s = b.slice(2, 3);
  EXPECT_EQ(s.rows, b.rows / 3);
  EXPECT_EQ(s.tokens[0], b.tokens[static_cast<size_t>(2 * b.rows / 3)]);
  EXPECT_EQ(s.targets.back(), b.targets.back());
  EXPECT_THROW(b.slice(0, 5), std::invalid_argument);  // 12 sequences do not split into 5
}

TEST(RefModel, TrainingLowersTheLoss) {
  ref::TransformerConfig c = testTransformer();
  ref::Model m = ref::makeTransformer(c);
  m.allocate(1);
  auto opt = std::make_unique<conflux::train::Adam>(conflux::train::AdamOptions{1e-2f});
  for (int i = 0; i < m.layerCount(); ++i) opt->addGroup(m.params(i), m.grads(i), m.layer(i).numParams());
  float first = 0, last = 0;
  for (int s = 0; s < 100; ++s) {
    ref::Batch b = stepBatch(s);
    m.zeroGrad();
    float loss = m.forward(b);
    m.backward(b);
    opt->step();
    if (s == 0) first = loss;
    last = loss;
  }
  EXPECT_LT(last, 0.5f * first) << "first " << first << " last " << last;
}

// Exact values: powers of two and small integers, so every product is exact in fp32.
TEST(Optimizers, SgdMomentumUpdateIsExact) {
  float p[2] = {1.0f, -2.0f}, g[2] = {0.5f, 0.25f};
  conflux::train::Sgd sgd({0.5f, 0.5f, 0.0f});
  sgd.addGroup(p, g, 2);
  sgd.step();  // buf = g; p -= 0.5 g
  EXPECT_EQ(p[0], 0.75f);
  EXPECT_EQ(p[1], -2.125f);
  sgd.step();  // buf = 0.5 buf + g = 1.5 g; p -= 0.75 g
  EXPECT_EQ(p[0], 0.375f);
  EXPECT_EQ(p[1], -2.3125f);
  EXPECT_EQ(sgd.stateBytes(), 2 * sizeof(float));
}

TEST(Optimizers, AdamFirstStepMovesByLearningRate) {
  float p[2] = {1.0f, 1.0f}, g[2] = {4.0f, -0.25f};
  conflux::train::Adam adam({0.125f, 0.9f, 0.999f, 0.0f, 0.0f});
  adam.addGroup(p, g, 2);
  adam.step();  // m_hat = g, v_hat = g^2: the step is lr * sign(g)
  EXPECT_NEAR(p[0], 0.875f, 1e-6f);
  EXPECT_NEAR(p[1], 1.125f, 1e-6f);
  EXPECT_EQ(adam.steps(), 1);
  EXPECT_EQ(adam.stateBytes(), 2 * 2 * sizeof(float));
  EXPECT_THROW(adam.state(0, 2), conflux::train::Error);
}

}  // namespace
}  // namespace cfxtest
