// Many emulated hosts (issue #35, section 3): run by CTest as Scale.tcp.16x4 and Scale.tcp.32x2,
// 64 ranks each, through tests/netns/hosts.sh (one network namespace per host, on this 2-core
// machine). Init, every collective exact at sizes up to 1 MiB per rank, destroy; and a rank killed
// on a middle host, which every survivor must report within CFX_TIMEOUT + 5 s. Rank 0 prints one
// SCALE line per layout: init time, sockets and file descriptors per rank, which
// perf/RESULTS-scale.md collects for 4 to 64 ranks.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "coll_case.h"
#include "harness.h"

namespace cfxtest {
namespace {

using C = CollKind;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Fds {
  int all = 0;
  int sockets = 0;
};

// This process's open file descriptors, and how many of them are sockets.
Fds openFds() {
  Fds f;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return f;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char link[64] = {0};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t len = readlink(path.c_str(), link, sizeof(link) - 1);
    ++f.all;
    if (len > 0 && std::string(link, static_cast<size_t>(len)).rfind("socket:", 0) == 0) ++f.sockets;
  }
  closedir(d);
  return f.all > 0 ? Fds{f.all - 1, f.sockets} : f;  // less the directory's own descriptor
}

int layoutHosts() { return static_cast<int>(testHosts().size()); }

// Up to 1 MiB per rank: the whole buffer for AllReduce, Reduce and Broadcast; for the collectives
// whose buffer holds a block per rank, that buffer.
std::vector<size_t> countsFor(C c, int n) {
  const size_t mib = (size_t{1} << 20) / sizeof(float);
  const bool blocks = c == C::kAllGather || c == C::kReduceScatter || c == C::kAlltoAll;
  return {0, 1, 1001, blocks ? mib / static_cast<size_t>(n) : mib};
}

// Send/Recv around the ring of all ranks, in one group, values checked exactly.
void ringSendRecv(const Rank& rk, size_t count) {
  const int right = (rk.rank + 1) % rk.nranks, left = (rk.rank + rk.nranks - 1) % rk.nranks;
  std::vector<float> out(count), in(count, -1.0f);
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(rk.rank * 1000 + static_cast<int>(i % 997));
  CFX_ASSERT_OK(cfxGroupStart());
  CFX_ASSERT_OK(cfxSend(out.data(), count, cfxFloat32, right, rk.comm, nullptr));
  CFX_ASSERT_OK(cfxRecv(in.data(), count, cfxFloat32, left, rk.comm, nullptr));
  CFX_ASSERT_OK(cfxGroupEnd());
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(in[i], static_cast<float>(left * 1000 + static_cast<int>(i % 997))) << "element " << i << " from rank " << left;
  }
}

#define REQUIRE_LAYOUT(n)                                   \
  const int n = layoutRanks();                              \
  if (n == 0 && !isRankProcess()) GTEST_SKIP() << "no host layout (run through tests/netns/hosts.sh)"

TEST(Scale, InitEveryCollectiveDestroy) {
  REQUIRE_LAYOUT(n);
  RunOptions o;
  o.initComm = false;  // timed here
  o.deadlineSeconds = 600;
  runRanks(n, [](Rank& rk) {
    const Fds before = openFds();
    const auto t0 = Clock::now();
    CFX_ASSERT_OK(cfxCommInitFromEnv(&rk.comm));
    const double initSeconds = since(t0);
    const Fds after = openFds();
    const auto t1 = Clock::now();
    Fds afterHier{};
    for (C c : {C::kAllReduce, C::kReduce, C::kBroadcast, C::kAllGather, C::kReduceScatter, C::kAlltoAll}) {
      if (c == C::kAlltoAll) afterHier = openFds();  // AlltoAll needs every pair
      for (size_t count : countsFor(c, rk.nranks)) {
        ASSERT_EQ(runCase(rk, c, cfxFloat32, cfxSum, count, false), "");
        if (reduces(c)) {
          ASSERT_EQ(runCase(rk, c, cfxInt32, cfxMax, count, true), "");
        }
      }
    }
    ASSERT_NO_FATAL_FAILURE(ringSendRecv(rk, 1001));
    const double collSeconds = since(t1);
    const Fds atEnd = openFds();
    // Sockets this rank opened: after init, after the collectives of the hierarchy (ring, tree,
    // halving-doubling between hosts), after AlltoAll and Send/Recv. Max over ranks, then sums.
    const double opened[3] = {static_cast<double>(after.sockets - before.sockets),
                              static_cast<double>(afterHier.sockets - before.sockets),
                              static_cast<double>(atEnd.sockets - before.sockets)};
    double mx[5] = {initSeconds, opened[0], opened[1], opened[2], static_cast<double>(atEnd.all)};
    double sum[3] = {opened[0], opened[1], opened[2]};
    CFX_ASSERT_OK(cfxAllReduce(mx, mx, 5, cfxFloat64, cfxMax, rk.comm, nullptr));
    CFX_ASSERT_OK(cfxAllReduce(sum, sum, 3, cfxFloat64, cfxSum, rk.comm, nullptr));
    const auto t2 = Clock::now();
    CFX_ASSERT_OK(cfxCommDestroy(rk.comm));
    rk.comm = nullptr;
    if (rk.rank == 0) {
      const double n = rk.nranks;
      std::printf("SCALE ranks %d hosts %d: init %.0f ms (slowest rank), sockets per rank %.0f max %.1f mean, "
                  "after the hierarchical collectives %.0f max %.1f mean, after AlltoAll and Send/Recv %.0f max "
                  "%.1f mean, descriptors per rank %.0f max; collectives %.1f s; destroy %.0f ms (rank 0)\n",
                  rk.nranks, layoutHosts(), mx[0] * 1e3, mx[1], sum[0] / n, mx[2], sum[1] / n, mx[3], sum[2] / n,
                  mx[4], collSeconds, since(t2) * 1e3);
      std::fflush(stdout);
    }
  }, o);
}

// A rank on a middle host is killed between AllReduces: every survivor fails within CFX_TIMEOUT
// + 5 s, whichever host it is on, with a message that names the victim.
TEST(Scale, KilledRankEverySurvivorErrors) {
  REQUIRE_LAYOUT(n);
  const int victim = n / 2 + 1;
  RunOptions o;
  o.expectKilled = {victim};
  o.env = {"CFX_TIMEOUT=10"};
  o.deadlineSeconds = 600;
  runRanks(n, [victim](Rank& rk) {
    const size_t count = 64 << 10;
    std::vector<float> a(count, 1.0f), b(count);
    CFX_ASSERT_OK(cfxAllReduce(a.data(), b.data(), count, cfxFloat32, cfxSum, rk.comm, nullptr));
    if (rk.rank == victim) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      raise(SIGKILL);
    }
    cfxResult_t r = cfxSuccess;
    double secs = 0;
    for (int k = 0; k < 100 && r == cfxSuccess; ++k) {
      const auto t0 = Clock::now();
      r = cfxAllReduce(a.data(), b.data(), count, cfxFloat32, cfxSum, rk.comm, nullptr);
      secs = since(t0);
    }
    EXPECT_NE(r, cfxSuccess);
    EXPECT_LT(secs, 10.0 + 5.0);
    const std::string msg = cfxGetLastError(rk.comm);
    EXPECT_NE(msg.find("rank " + std::to_string(victim)), std::string::npos) << msg;
  }, o);
}

}  // namespace
}  // namespace cfxtest
