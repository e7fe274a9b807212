// Shared pieces of the training-layer tests: the single-process reference run that distributed
// runs must match, optimizers by name, and parameter comparisons.
#pragma once

#include <conflux/conflux.h>

#include <memory>
#include <string>
#include <vector>

#include "conflux/train/optim.h"
#include "conflux/train/ref/model.h"

namespace cfxtest {

namespace ref = conflux::train::ref;

enum class Opt { kSgd, kAdam };
const char* optName(Opt o);
std::unique_ptr<conflux::train::Optimizer> makeOptimizer(Opt o);

// The transformer the equivalence tests train, and its data: step s uses batch seed 100 + s of
// kSequences sequences (divisible by 1, 2, 3, 4).
constexpr int kSequences = 12;
constexpr uint64_t kInitSeed = 7;
ref::TransformerConfig testTransformer();
ref::Batch stepBatch(int step);

// The pipeline tests' transformer: eight layers (embedding, six blocks, head), so p = 4 with v = 2
// has a layer per virtual stage; each layer's cost for pipeline::partition is its parameters.
ref::TransformerConfig pipeTransformer();
ref::Model makePipeModel();
std::vector<double> pipeLayerCosts();

// One process, whole batch, `steps` steps: the parameters per layer at the end.
std::vector<std::vector<float>> referenceTraining(Opt opt, int steps);

// Largest |a - b| / max(|a|, |b|, floor) over all elements; floor keeps near-zero entries from
// dominating (they are compared absolutely below it).
double maxRelativeDiff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                       double floor = 1e-3);

// FNV-1a of the bytes of every layer's parameters.
uint64_t hashParams(const std::vector<std::vector<float>>& params);
// AllGathers each rank's hash; true when all are equal.
bool sameOnAllRanks(cfxComm_t comm, uint64_t hash);

}  // namespace cfxtest
