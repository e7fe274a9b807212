#include "train_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "harness.h"

namespace cfxtest {

const char* optName(Opt o) { return o == Opt::kSgd ? "SGD" : "Adam"; }

std::unique_ptr<conflux::train::Optimizer> makeOptimizer(Opt o) {
  if (o == Opt::kSgd) return std::make_unique<conflux::train::Sgd>(conflux::train::SgdOptions{0.1f, 0.9f, 0.0f});
  return std::make_unique<conflux::train::Adam>(conflux::train::AdamOptions{3e-3f, 0.9f, 0.999f, 1e-8f, 0.01f});
}

ref::TransformerConfig testTransformer() {
  ref::TransformerConfig c;
  c.vocab = 32;
  c.seqLen = 8;
  c.dim = 16;
  c.heads = 2;
  c.ffn = 32;
  c.blocks = 2;
  return c;
}

ref::TransformerConfig pipeTransformer() {
  ref::TransformerConfig c = testTransformer();
  c.blocks = 6;
  return c;
}

ref::Model makePipeModel() { return ref::makeTransformer(pipeTransformer()); }

std::vector<double> pipeLayerCosts() {
  ref::Model m = makePipeModel();
  std::vector<double> costs;
  for (int i = 0; i < m.layerCount(); ++i) costs.push_back(static_cast<double>(m.layer(i).numParams()));
  return costs;
}

ref::Batch stepBatch(int step) { return ref::makeTokenBatch(testTransformer(), kSequences, 100 + static_cast<uint64_t>(step)); }

std::vector<std::vector<float>> referenceTraining(Opt opt, int steps) {
  ref::Model m = ref::makeTransformer(testTransformer());
  m.allocate(kInitSeed);
  auto o = makeOptimizer(opt);
  for (int i = 0; i < m.layerCount(); ++i) o->addGroup(m.params(i), m.grads(i), m.layer(i).numParams());
  for (int s = 0; s < steps; ++s) {
    ref::Batch b = stepBatch(s);
    m.zeroGrad();
    m.forward(b);
    m.backward(b);
    o->step();
  }
  std::vector<std::vector<float>> out;
  for (int i = 0; i < m.layerCount(); ++i) out.emplace_back(m.params(i), m.params(i) + m.layer(i).numParams());
  return out;
}

double maxRelativeDiff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                       double floor) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t l = 0; l < a.size(); ++l) {
    if (a[l].size() != b[l].size()) return INFINITY;
    for (size_t i = 0; i < a[l].size(); ++i) {
      double x = a[l][i], y = b[l][i];
      double scale = std::max({std::fabs(x), std::fabs(y), floor});
      worst = std::max(worst, std::fabs(x - y) / scale);
    }
  }
  return worst;
}

uint64_t hashParams(const std::vector<std::vector<float>>& params) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& l : params) {
    const auto* p = reinterpret_cast<const unsigned char*>(l.data());
    for (size_t i = 0; i < l.size() * sizeof(float); ++i) {
      h ^= p[i];
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

bool sameOnAllRanks(cfxComm_t comm, uint64_t hash) {
  int n = 0;
  cfxCommCount(comm, &n);
  std::vector<uint64_t> all(static_cast<size_t>(n));
  if (cfxAllGather(&hash, all.data(), 1, cfxUint64, comm, nullptr) != cfxSuccess) return false;
  return std::all_of(all.begin(), all.end(), [&](uint64_t x) { return x == all[0]; });
}

}  // namespace cfxtest
