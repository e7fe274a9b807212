// Calls right after every rank was idle: each rank sleeps `idle_ms`, then makes `iters` AllGathers
// of `bytes` per rank, timing each. Rank 0 prints the mean by bucket of iters/20 calls, and every
// rank prints the CPU it ran on every 25 calls of the first 1000 (sched_getcpu), so a run shows
// whether ranks that slept came back onto one CPU and for how many calls (perf/RESULTS.md,
// 2026-11-29 (seventh)).
//
//   build/tools/cfxrun -n 2 build/perf/after_idle [bytes] [iters] [idle_ms]
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe_comm.h"

using cfxprobe::check;

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  const int iters = std::max(20, argc > 2 ? std::atoi(argv[2]) : 40000);
  const int idleMs = argc > 3 ? std::atoi(argv[3]) : 200;
  const auto [comm, rank, n] = cfxprobe::initFromEnv();
  const size_t count = std::max<size_t>(1, bytes / sizeof(float));
  std::vector<float> in(count, 1.0f), out(count * n);
  // One call to be sure every rank is up, then the idle time on every rank.
  check(cfxAllGather(in.data(), out.data(), count, cfxFloat32, comm, nullptr), "cfxAllGather", comm);
  if (idleMs > 0) usleep(static_cast<useconds_t>(idleMs) * 1000);
  std::vector<double> us(iters);
  std::vector<int> cpu(iters);
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    check(cfxAllGather(in.data(), out.data(), count, cfxFloat32, comm, nullptr), "cfxAllGather", comm);
    us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    cpu[i] = sched_getcpu();
  }
  std::string cpus = "rank ";  // appended piece by piece: GCC 12 warns wrongly on "..." + string
  cpus += std::to_string(rank);
  cpus += " CPU every 25 calls:";
  for (int i = 0; i < std::min(iters, 1000); i += 25) {
    cpus += ' ';
    cpus += std::to_string(cpu[i]);
  }
  std::printf("%s\n", cpus.c_str());
  std::fflush(stdout);
  if (rank == 0) {
    const int bucket = iters / 20;
    for (int b = 0; b + bucket <= iters; b += bucket) {
      double sum = 0;
      for (int i = b; i < b + bucket; ++i) sum += us[i];
      std::printf("calls %6d-%6d: mean %.2f us\n", b, b + bucket - 1, sum / bucket);
    }
  }
  check(cfxCommDestroy(comm), "cfxCommDestroy", nullptr);
  return 0;
}
