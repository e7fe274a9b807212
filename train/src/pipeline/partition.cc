// Balanced contiguous partitioning (the linear-partition dynamic programme) and the two
// communicators of pipeline x data parallelism.
#include <cmath>
#include <limits>
#include <string>

#include "conflux/train/pipeline/partition.h"

namespace conflux::train::pipeline {

std::vector<int> partition(const std::vector<double>& costs, int parts) {
  const int n = static_cast<int>(costs.size());
  if (parts < 1 || n < parts) {
    throw Error(cfxInvalidArgument, "partition: " + std::to_string(n) + " layers cannot make " + std::to_string(parts) +
                                        " non-empty stages");
  }
  std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
  for (int i = 0; i < n; ++i) {
    const double c = costs[static_cast<size_t>(i)];
    if (!(c >= 0.0) || !std::isfinite(c)) {
      throw Error(cfxInvalidArgument, "partition: layer " + std::to_string(i) + " has cost " + std::to_string(c) +
                                          " (must be finite and >= 0)");
    }
    prefix[static_cast<size_t>(i) + 1] = prefix[static_cast<size_t>(i)] + c;
  }
  auto sum = [&](int a, int b) { return prefix[static_cast<size_t>(b)] - prefix[static_cast<size_t>(a)]; };
  // best[k][i]: the smallest largest-part cost splitting layers [0, i) into k parts; cut[k][i]
  // where the last part starts.
  const double inf = std::numeric_limits<double>::infinity();
  const size_t w = static_cast<size_t>(n) + 1;
  std::vector<double> best(static_cast<size_t>(parts + 1) * w, inf);
  std::vector<int> cut(static_cast<size_t>(parts + 1) * w, 0);
  auto at = [&](int k, int i) { return static_cast<size_t>(k) * w + static_cast<size_t>(i); };
  for (int i = 1; i <= n; ++i) best[at(1, i)] = sum(0, i);
  for (int k = 2; k <= parts; ++k) {
    for (int i = k; i <= n; ++i) {
      for (int j = k - 1; j < i; ++j) {
        const double c = std::max(best[at(k - 1, j)], sum(j, i));
        if (c < best[at(k, i)]) {
          best[at(k, i)] = c;
          cut[at(k, i)] = j;
        }
      }
    }
  }
  std::vector<int> bounds(static_cast<size_t>(parts) + 1, 0);
  bounds[static_cast<size_t>(parts)] = n;
  int i = n;
  for (int k = parts; k >= 2; --k) {
    i = cut[at(k, i)];
    bounds[static_cast<size_t>(k) - 1] = i;
  }
  return bounds;
}

ParallelComms splitPipelineData(cfxComm_t world, int stages) {
  if (world == nullptr) throw Error(cfxInvalidArgument, "splitPipelineData: world is NULL");
  int n = 0, rank = 0;
  check(cfxCommCount(world, &n), "cfxCommCount", world);
  check(cfxCommUserRank(world, &rank), "cfxCommUserRank", world);
  if (stages < 1 || n % stages != 0) {
    throw Error(cfxInvalidArgument, "splitPipelineData: " + std::to_string(n) + " ranks do not divide into pipelines of " +
                                        std::to_string(stages) + " stages");
  }
  ParallelComms out;
  out.stage = rank % stages;
  out.replica = rank / stages;
  check(cfxCommSplit(world, out.replica, out.stage, &out.pipeline, nullptr), "cfxCommSplit (pipeline)", world);
  check(cfxCommSplit(world, out.stage, out.replica, &out.replicas, nullptr), "cfxCommSplit (replicas)", world);
  return out;
}

}  // namespace conflux::train::pipeline
