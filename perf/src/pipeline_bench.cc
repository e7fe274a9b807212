// Pipeline benchmark: measured step time of GPipe, 1F1B, interleaved 1F1B, ZB-H1, PipeDream,
// PipeDream-2BW and 1F1B-RR against the time the schedule predicts (the validator's makespan: each
// forward one unit, each backward two, or one per half when split; updates and transfers free),
// and the bubble each leaves.
//
//   cfxrun -n 4 build/perf/pipeline_bench [--microbatches 8] [--forward-ms 4] [--act-kib 256]
//                                         [--chunks 2] [--steps 7] [--busy] [--param-kib 1024]
//
// The asynchronous schedules run each step as one stream of m micro-batches with their updates
// inside (a no-op optimizer here; weight stashing copies and swaps --param-kib of parameters).
// 1F1B-RR uses the same ranks as p - 1 stages with stage 0 replicated twice, every worker's
// forward one unit: its step is the slowest worker's.
//
// A stage's forward of a whole model slice takes --forward-ms (a chunk of the interleaved schedule
// takes forward-ms / chunks), backward twice that. By default compute is a sleep, standing in for
// an accelerator so the stages do not fight over this machine's two cores; --busy spins instead.
// Activations of --act-kib move between stages with cfxSend/cfxRecv. The step time is the slowest
// stage's, median over --steps after one warm-up step; bubble = step - the stage's own compute.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conflux/train/pipeline/executor.h"

namespace pp = conflux::train::pipeline;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Options {
  int microbatches = 8, chunks = 2, steps = 7;
  double forwardMs = 4;
  size_t actKib = 256, paramKib = 1024;
  bool busy = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "pipeline_bench: %s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--microbatches") o.microbatches = std::atoi(val());
    else if (k == "--chunks") o.chunks = std::atoi(val());
    else if (k == "--steps") o.steps = std::atoi(val());
    else if (k == "--forward-ms") o.forwardMs = std::atof(val());
    else if (k == "--act-kib") o.actKib = static_cast<size_t>(std::atol(val()));
    else if (k == "--param-kib") o.paramKib = static_cast<size_t>(std::atol(val()));
    else if (k == "--busy") o.busy = true;
    else {
      std::fprintf(stderr, "pipeline_bench: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

void work(double seconds, bool busy) {
  if (!busy) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return;
  }
  const double end = now() + seconds;
  while (now() < end) {
  }
}

// Compute units of the busiest worker (forward 1, backward 2, halves 1 each).
long computeUnits(const pp::Schedule& s) {
  long most = 0;
  for (const auto& list : s.actions) {
    long units = 0;
    for (const pp::Action& a : list) {
      if (a.op == pp::Op::kForward || a.op == pp::Op::kBackwardInput || a.op == pp::Op::kBackwardWeight) units += 1;
      if (a.op == pp::Op::kBackward) units += 2;
    }
    most = std::max(most, units);
  }
  return most;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  cfxComm_t comm = nullptr;
  if (cfxCommInitFromEnv(&comm) != cfxSuccess) {
    std::fprintf(stderr, "pipeline_bench: %s\n", cfxGetLastError(nullptr));
    return 1;
  }
  int p = 0, rank = 0;
  cfxCommCount(comm, &p);
  cfxCommUserRank(comm, &rank);
  try {
    const int m = o.microbatches;
    std::vector<pp::Schedule> schedules = {pp::gpipe(p, m), pp::oneFOneB(p, m)};
    if (m % p == 0) schedules.push_back(pp::interleaved1F1B(p, m, o.chunks));
    schedules.push_back(pp::zeroBubbleH1(p, m));
    schedules.push_back(pp::pipeDream(p, m));
    if (m >= p) schedules.push_back(pp::pipeDream2BW(p, m, p));
    if (p >= 3 && m % 2 == 0 && m >= p - 1) {
      std::vector<int> shape(static_cast<size_t>(p - 1), 1);
      shape[0] = 2;
      schedules.push_back(pp::oneFOneBRR(shape, m, std::max(p - 1, 2) + (std::max(p - 1, 2) % 2)));
    }
    std::vector<float> params(o.paramKib * 1024 / sizeof(float), 1.0f);
    if (rank == 0) {
      std::printf("Pipeline: %d stages, %d micro-batches, forward %.1f ms per stage (backward 2x), activations %zu KiB, "
                  "compute by %s; median of %d steps, ms\n\n", p, m, o.forwardMs, o.actKib, o.busy ? "spinning" : "sleeping",
                  o.steps);
      std::printf("| schedule | predicted step | measured step | measured / predicted | compute per worker | "
                  "predicted bubble | measured bubble | bubble fraction (validator) |\n");
      std::printf("|---|---|---|---|---|---|---|---|\n");
    }
    for (const pp::Schedule& s : schedules) {
      const double unit = o.forwardMs / 1e3 / static_cast<double>(s.chunks);
      pp::StageFunctions f;
      f.activationSize = [&](int) { return o.actKib * 1024 / sizeof(float); };
      f.forward = [&](int, int, const float*, float* out, bool) {
        work(unit, o.busy);
        if (out != nullptr) out[0] = 1.0f;
        return 0.0f;
      };
      f.backward = [&](int, int, const float*, float*) { work(2 * unit, o.busy); };
      f.backwardInput = [&](int, int, const float*, float*) { work(unit, o.busy); };
      f.backwardWeight = [&](int, int) { work(unit, o.busy); };
      f.update = [&](int) { params[0] += 1.0f; };
      f.parameters = {{params.data(), params.size()}};
      pp::Executor exec(comm, s, f);
      std::vector<double> steps;
      for (int it = 0; it <= o.steps; ++it) {
        double zero = 0, fence = 0;  // start every step together
        if (cfxAllReduce(&zero, &fence, 1, cfxFloat64, cfxSum, comm, nullptr) != cfxSuccess) throw std::runtime_error(cfxGetLastError(comm));
        double t = exec.run().seconds, slowest = 0;
        if (cfxAllReduce(&t, &slowest, 1, cfxFloat64, cfxMax, comm, nullptr) != cfxSuccess) throw std::runtime_error(cfxGetLastError(comm));
        if (it > 0) steps.push_back(slowest);
      }
      if (rank == 0) {
        const pp::ScheduleReport& r = exec.report();
        const double ms = 1e3, predicted = static_cast<double>(r.makespan) * unit * ms;
        const double compute = static_cast<double>(computeUnits(s)) * unit * ms, measured = median(steps) * ms;
        std::printf("| %s | %.1f | %.1f | %.3f | %.1f | %.1f | %.1f | %.3f |\n", s.name.c_str(), predicted,
                    measured, measured / predicted, compute, predicted - compute, measured - compute, r.bubbleFraction);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeline_bench rank %d: %s\n", rank, e.what());
    cfxCommAbort(comm);
    return 1;
  }
  cfxCommDestroy(comm);
  return 0;
}
