// Nanoseconds per small call (two floats), finer than the *_perf binaries' two decimals in us:
// `rounds` rounds of `iters` blocking calls, each round's time the slowest rank's (an AllReduce of
// the times after the round), median and minimum over the rounds. For A/B comparisons of the
// latency path by library path (LD_LIBRARY_PATH), rounds interleaved by the caller.
//
//   build/tools/cfxrun -n 2 build/perf/small_call_latency broadcast|reduce|allreduce|sendrecv [iters] [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "probe_comm.h"

using cfxprobe::check;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s broadcast|reduce|allreduce|sendrecv [iters] [rounds]\n", argv[0]);
    return 2;
  }
  const char* coll = argv[1];
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 15;
  const auto [comm, rank, n] = cfxprobe::initFromEnv();
  float in[2] = {1, 2}, out[2];
  auto once = [&] {
    if (!std::strcmp(coll, "sendrecv")) {
      check(cfxGroupStart(), "cfxGroupStart", comm);
      check(cfxSend(in, 2, cfxFloat32, (rank + 1) % n, comm, nullptr), "cfxSend", comm);
      check(cfxRecv(out, 2, cfxFloat32, (rank + n - 1) % n, comm, nullptr), "cfxRecv", comm);
      check(cfxGroupEnd(), "cfxGroupEnd", comm);
    } else if (!std::strcmp(coll, "broadcast")) {
      check(cfxBroadcast(in, out, 2, cfxFloat32, 0, comm, nullptr), "cfxBroadcast", comm);
    } else if (!std::strcmp(coll, "reduce")) {
      check(cfxReduce(in, out, 2, cfxFloat32, cfxSum, 0, comm, nullptr), "cfxReduce", comm);
    } else {
      check(cfxAllReduce(in, out, 2, cfxFloat32, cfxSum, comm, nullptr), "cfxAllReduce", comm);
    }
  };
  for (int i = 0; i < 2000; ++i) once();
  std::vector<double> times;
  for (int k = 0; k < rounds; ++k) {
    check(cfxAllReduce(in, out, 2, cfxFloat32, cfxSum, comm, nullptr), "cfxAllReduce", comm);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) once();
    double mine = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iters;
    double slowest = 0;
    check(cfxAllReduce(&mine, &slowest, 1, cfxFloat64, cfxMax, comm, nullptr), "cfxAllReduce", comm);
    times.push_back(slowest);
  }
  std::sort(times.begin(), times.end());
  if (rank == 0) std::printf("%s %d ranks: median %.1f ns (min %.1f)\n", coll, n, times[times.size() / 2], times[0]);
  check(cfxCommDestroy(comm), "cfxCommDestroy", comm);
  return 0;
}
