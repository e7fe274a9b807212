// Across hosts: AllGatherv and ReduceScatterv with nearly even counts (each within 10% below the
// largest) on the padded hierarchical path (CFX_VCOLL_PADDING=0.25, the default) against rank to
// rank (CFX_VCOLL_PADDING=0), in one job: two communicators split from the job's, one made under
// each setting, timed alternately; medians of 5 rounds of `iters` calls. Plain AllGather and
// ReduceScatter of the largest count for reference.
//
//   tests/netns/hosts.sh --layout 2,2 [--rate 2gbit] -- build/perf/vcoll_padding [iters]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "conflux/conflux.h"

namespace {

void check(cfxResult_t r, const char* what) {
  if (r == cfxSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cfxGetLastError(nullptr));
  std::exit(1);
}

cfxComm_t splitWith(cfxComm_t base, int rank, const char* padding) {
  setenv("CFX_VCOLL_PADDING", padding, 1);
  cfxComm_t c = nullptr;
  check(cfxCommSplit(base, 0, rank, &c, nullptr), "cfxCommSplit");
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  cfxComm_t base = nullptr;
  check(cfxCommInitFromEnv(&base), "cfxCommInitFromEnv");
  int n = 0, me = 0;
  cfxCommCount(base, &n);
  cfxCommUserRank(base, &me);
  cfxComm_t p2p = splitWith(base, me, "0"), pad = splitWith(base, me, "0.25");
  if (me == 0) {
    std::printf("# %d ranks; per-rank largest block; median us of 5 rounds x %d calls\n", n, iters);
    std::printf("%10s %14s %14s %8s %14s %16s %16s %8s %16s\n", "bytes", "AllGatherv p2p", "AllGatherv pad", "ratio",
                "AllGather", "ReduceScatterv p2p", "ReduceScatterv pad", "ratio", "ReduceScatter");
  }
  for (size_t bytes = 64 << 10; bytes <= (size_t{16} << 20); bytes *= 4) {
    const size_t largest = bytes / 4;  // float32 elements
    std::vector<size_t> counts(n), displs(n);
    size_t total = 0;
    for (int r = 0; r < n; ++r) {
      counts[r] = largest - (r * 7919 % (largest / 10));
      displs[r] = total;
      total += counts[r];
    }
    std::vector<float> send(std::max(total, largest * n), 1.0f), recv(std::max(total, largest * n));
    auto time = [&](auto call) {
      call();  // warm-up
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) call();
      return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    };
    std::vector<double> t[6];
    for (int round = 0; round < 5; ++round) {
      for (int k = 0; k < 2; ++k) {
        cfxComm_t c = k == 0 ? p2p : pad;
        t[k].push_back(time([&] {
          check(cfxAllGatherv(send.data(), counts[me], recv.data(), counts.data(), displs.data(), cfxFloat32, c, nullptr),
                "cfxAllGatherv");
        }));
        t[3 + k].push_back(time([&] {
          check(cfxReduceScatterv(send.data(), recv.data(), counts.data(), cfxFloat32, cfxSum, c, nullptr),
                "cfxReduceScatterv");
        }));
      }
      t[2].push_back(time([&] { check(cfxAllGather(send.data(), recv.data(), largest, cfxFloat32, p2p, nullptr), "AllGather"); }));
      t[5].push_back(time([&] {
        check(cfxReduceScatter(send.data(), recv.data(), largest, cfxFloat32, cfxSum, p2p, nullptr), "ReduceScatter");
      }));
    }
    double med[6];
    for (int k = 0; k < 6; ++k) {
      std::sort(t[k].begin(), t[k].end());
      med[k] = t[k][2];
    }
    if (me == 0) {
      std::printf("%10zu %14.1f %14.1f %8.2f %14.1f %16.1f %16.1f %8.2f %16.1f\n", bytes, med[0], med[1], med[0] / med[1],
                  med[2], med[3], med[4], med[3] / med[4], med[5]);
      std::fflush(stdout);
    }
  }
  cfxCommDestroy(p2p);
  cfxCommDestroy(pad);
  cfxCommDestroy(base);
  return 0;
}
