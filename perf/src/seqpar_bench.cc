// Sequence-parallel attention benchmark: forward + backward of ring attention with the K/V
// exchange overlapped with the attention on the block in hand, against the same with every
// exchange completed before the attention that follows (serialised), and Ulysses for reference.
//
//   cfxrun -n 4 build/perf/seqpar_bench [--seq 1024] [--heads 4] [--head-dim 32] [--steps 5] [--no-causal]
//
// Each iteration runs every mode once, in turn; the table gives medians over iterations of the
// slowest rank's time (step), and of the largest compute and exposed communication over ranks.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "conflux/train/ref/model.h"
#include "conflux/train/seqpar/attention.h"

namespace sp = conflux::train::seqpar;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double maxOver(cfxComm_t comm, double x) {
  double y = 0;
  if (cfxAllReduce(&x, &y, 1, cfxFloat64, cfxMax, comm, nullptr) != cfxSuccess) throw std::runtime_error(cfxGetLastError(comm));
  return y;
}

struct Row {
  std::string name;
  std::vector<double> step, compute, exposed;
};

}  // namespace

int main(int argc, char** argv) {
  int seq = 1024, heads = 4, headDim = 32, steps = 5;
  bool causal = true;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--no-causal") {
      causal = false;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "seqpar_bench: unknown option or missing value: %s\n", k.c_str());
      return 2;
    }
    int v = std::atoi(argv[++i]);
    if (k == "--seq") seq = v;
    else if (k == "--heads") heads = v;
    else if (k == "--head-dim") headDim = v;
    else if (k == "--steps") steps = v;
    else {
      std::fprintf(stderr, "seqpar_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  cfxComm_t comm = nullptr;
  if (cfxCommInitFromEnv(&comm) != cfxSuccess) {
    std::fprintf(stderr, "seqpar_bench: %s\n", cfxGetLastError(nullptr));
    return 1;
  }
  int n = 0, rank = 0;
  cfxCommCount(comm, &n);
  cfxCommUserRank(comm, &rank);
  try {
    const sp::AttentionShape shape{seq, heads, headDim, causal};
    sp::RingAttention overlapped(comm, shape, sp::RingOptions{sp::Sharding::kZigzag, true});
    sp::RingAttention serial(comm, shape, sp::RingOptions{sp::Sharding::kZigzag, false});
    std::unique_ptr<sp::Ulysses> ulysses;
    if (heads % n == 0) ulysses = std::make_unique<sp::Ulysses>(comm, shape);
    const size_t elems = static_cast<size_t>(overlapped.localTokens() + 1) * heads * headDim;
    conflux::train::ref::Rng rng(static_cast<uint64_t>(rank) + 1);
    std::vector<float> q(elems), k(elems), v(elems), dout(elems), out(elems), dq(elems), dk(elems), dv(elems);
    for (auto* t : {&q, &k, &v, &dout}) {
      for (float& x : *t) x = rng.uniform(1.0f);
    }
    Row rows[3] = {{"ring, overlapped", {}, {}, {}}, {"ring, serialised", {}, {}, {}}, {"Ulysses", {}, {}, {}}};
    for (int it = 0; it <= steps; ++it) {
      for (int mode = 0; mode < 3; ++mode) {
        double step = 0, compute = 0, exposed = 0;
        auto run = [&](auto& att) {
          att.forward(q.data(), k.data(), v.data(), out.data());
          sp::SeqParStats f = att.lastStats();
          att.backward(q.data(), k.data(), v.data(), out.data(), dout.data(), dq.data(), dk.data(), dv.data());
          sp::SeqParStats b = att.lastStats();
          step = f.seconds + b.seconds;
          compute = f.computeSeconds + b.computeSeconds;
          exposed = f.exposedCommSeconds + b.exposedCommSeconds;
        };
        if (mode == 0) run(overlapped);
        if (mode == 1) run(serial);
        if (mode == 2 && ulysses) run(*ulysses);
        if (mode == 2 && !ulysses) continue;
        step = maxOver(comm, step);
        compute = maxOver(comm, compute);
        exposed = maxOver(comm, exposed);
        if (it > 0) {
          rows[mode].step.push_back(step);
          rows[mode].compute.push_back(compute);
          rows[mode].exposed.push_back(exposed);
        }
      }
    }
    if (rank == 0) {
      std::printf("Attention forward + backward: sequence %d (%s), %d heads x %d, %d ranks (zigzag shards for ring); "
                  "median of %d iterations, ms\n\n", seq, causal ? "causal" : "not causal", heads, headDim, n, steps);
      std::printf("| ranks | mode | step | compute | exposed communication | exposed share of step |\n|---|---|---|---|---|---|\n");
      for (const Row& r : rows) {
        if (r.step.empty()) continue;
        const double s = median(r.step) * 1e3, c = median(r.compute) * 1e3, e = median(r.exposed) * 1e3;
        std::printf("| %d | %s | %.2f | %.2f | %.3f | %.1f%% |\n", n, r.name.c_str(), s, c, e, 100.0 * e / s);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seqpar_bench rank %d: %s\n", rank, e.what());
    cfxCommAbort(comm);
    return 1;
  }
  cfxCommDestroy(comm);
  return 0;
}
