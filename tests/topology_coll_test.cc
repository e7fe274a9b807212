// Collectives with each machine shape of tests/topo/ loaded (CFX_TOPO_FILE), on 1 to 8 local
// ranks: where the plan makes the reduction two-level (two or more NUMA domains), AllReduce and
// Reduce take the two-level path, and every collective still gives exact results, also on a
// communicator split from it. And binding on this machine (CFX_BIND=core): each rank ends up on
// the CPUs of its plan.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>

#include "coll_case.h"
#include "harness.h"
#include "topology/cpus.h"
#include "topology/discover.h"
#include "topology/plan.h"

namespace cfxtest {
namespace {

using conflux::topology::Plan;
using conflux::topology::PlanOptions;
using conflux::topology::Reduction;

constexpr size_t kMultiChunk = 300001;  // > 2 staging halves of fp32: several chunks

std::string topoFile(const char* name) { return std::string(CFX_TOPO_DIR) + "/" + name; }

std::string readLog() {
  std::string path = "/tmp/cfx-topo-coll-" + std::to_string(getpid()) + ".log";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path.c_str());
  return ss.str();
}

class TopologyCollTest : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(TopologyCollTest, ExactResults) {
  auto [name, n] = GetParam();
  if (!conflux::topology::haveHwloc()) GTEST_SKIP() << "built without hwloc";
  Plan plan = conflux::topology::makePlan(conflux::topology::loadHwloc(topoFile(name), ""), n, PlanOptions{});
  const int domains = plan.reduction == Reduction::kTwoLevel ? static_cast<int>(plan.groups.size()) : 0;
  RunOptions o;
  o.env = {"CFX_TOPO_FILE=" + topoFile(name), "CFX_DEBUG=INFO", "CFX_DEBUG_FILE=/tmp/cfx-topo-coll-%p.log"};
  runRanks(n, [domains](Rank& rk) {
    std::string log = readLog();
    std::string want = domains >= 2 ? "two-level reduction over " + std::to_string(domains) + " NUMA domains"
                                    : std::string("; flat reduction");
    ASSERT_NE(log.find(want), std::string::npos) << "rank " << rk.rank << " log lacks '" << want << "':\n" << log;
    // Every datatype and op where the reduction is two-level; a flat plan is the path
    // CollectiveTest's matrix covers at every rank count, so only the cases below run there.
    if (domains >= 2) {
      runMatrix(rk, CollKind::kAllReduce);
      runMatrix(rk, CollKind::kReduce);
    }
    for (bool inPlace : {false, true}) {
      ASSERT_EQ(runCase(rk, CollKind::kAllReduce, cfxFloat32, cfxSum, kMultiChunk, inPlace), "");
      ASSERT_EQ(runCase(rk, CollKind::kAllReduce, cfxBfloat16, cfxAvg, kMultiChunk, inPlace), "");
      ASSERT_EQ(runCase(rk, CollKind::kReduce, cfxInt32, cfxMax, kMultiChunk, inPlace), "");
    }
    for (CollKind c : {CollKind::kReduceScatter, CollKind::kAllGather, CollKind::kBroadcast, CollKind::kAlltoAll}) {
      ASSERT_EQ(runCase(rk, c, cfxFloat32, cfxSum, 100003, false), "") << collName(c);
    }
    if (rk.nranks < 3) return;
    // A split keeps each rank's node: the halves reduce over their own domains.
    cfxComm_t half = nullptr;
    CFX_ASSERT_OK(cfxCommSplit(rk.comm, rk.rank % 2, rk.rank, &half, nullptr));
    Rank sub{0, 0, half};
    CFX_ASSERT_OK(cfxCommUserRank(half, &sub.rank));
    CFX_ASSERT_OK(cfxCommCount(half, &sub.nranks));
    ASSERT_EQ(runCase(sub, CollKind::kAllReduce, cfxFloat32, cfxSum, kMultiChunk, false), "");
    ASSERT_EQ(runCase(sub, CollKind::kReduce, cfxInt8, cfxMin, 100003, true), "");
    CFX_ASSERT_OK(cfxCommDestroy(half));
  }, o);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TopologyCollTest,
                         ::testing::Combine(::testing::Values("fireflyer.xml", "dgx.xml", "single.xml", "numa4.xml"),
                                            ::testing::Range(1, 9)),
                         [](const auto& info) {
                           std::string f = std::get<0>(info.param);
                           return f.substr(0, f.find('.')) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
                         });

// The two-level path's hand-offs (slot halves, domain partials, scratch slices) with each kind of
// store forced, on calls large enough to take the hand-off's choice (ops/handoff_stores.h: from 16
// MiB per rank; by default each rank times both kinds on its first calls of a size class). On
// numa4.xml, 3 ranks make three domains of one rank, 5 ranks one domain of two and three of one.
class TwoLevelStoresTest : public ::testing::TestWithParam<std::tuple<int, const char*>> {};

TEST_P(TwoLevelStoresTest, ExactResults) {
  auto [n, streaming] = GetParam();
  if (!conflux::topology::haveHwloc()) GTEST_SKIP() << "built without hwloc";
  RunOptions o;
  o.env = {"CFX_TOPO_FILE=" + topoFile("numa4.xml"), std::string("CFX_STREAMING_STORES=") + streaming,
           "CFX_DEBUG=INFO", "CFX_DEBUG_FILE=/tmp/cfx-topo-coll-%p.log"};
  runRanks(n, [](Rank& rk) {
    const std::string log = readLog();
    ASSERT_NE(log.find("two-level reduction over"), std::string::npos) << "rank " << rk.rank << ":\n" << log;
    constexpr size_t kHandedOff = (size_t{16} << 20) + 4;  // bytes per rank: the hand-offs' choice applies
    for (bool inPlace : {false, true}) {
      ASSERT_EQ(runCase(rk, CollKind::kAllReduce, cfxFloat32, cfxSum, kHandedOff / 4, inPlace), "");
    }
    ASSERT_EQ(runCase(rk, CollKind::kAllReduce, cfxBfloat16, cfxAvg, kHandedOff / 2, false), "");
    ASSERT_EQ(runCase(rk, CollKind::kReduce, cfxInt32, cfxMax, kHandedOff / 4, false), "");
  }, o);
}

INSTANTIATE_TEST_SUITE_P(ForcedStores, TwoLevelStoresTest,
                         ::testing::Combine(::testing::Values(3, 5), ::testing::Values("0", "1")),
                         [](const auto& info) {
                           return "numa4_" + std::to_string(std::get<0>(info.param)) + "ranks_streaming" +
                                  std::get<1>(info.param);
                         });

// This machine with CFX_BIND=core: each rank's thread is bound to its share of the cores, as the
// plan says (the plan is computed here, before the ranks start, from the same live topology).
TEST(TopologyBinding, CoreBindingOnThisMachine) {
  const int n = 2;
  PlanOptions opts;
  opts.bind = conflux::topology::Bind::kCore;
  Plan plan = conflux::topology::makePlan(conflux::topology::discover(false), n, opts);
  std::vector<int> allowed = conflux::topology::usableCpus();
  std::vector<std::vector<int>> expected(n);
  for (int r = 0; r < n; ++r) {
    for (int c : plan.ranks[r].cpus) {
      if (std::binary_search(allowed.begin(), allowed.end(), c)) expected[r].push_back(c);
    }
    if (expected[r].empty()) expected[r] = allowed;  // nothing of the plan available: not bound
  }
  RunOptions o;
  o.env = {"CFX_BIND=core"};
  runRanks(n, [expected](Rank& rk) {
    EXPECT_EQ(conflux::topology::usableCpus(), expected[rk.rank]) << "rank " << rk.rank;
    ASSERT_EQ(runCase(rk, CollKind::kAllReduce, cfxFloat32, cfxSum, 100003, false), "");
  }, o);
}

// Ranks their launcher pinned one to a CPU (mpirun's --bind-to core, taskset) spin in their waits
// like unbound ones: what decides is whether each rank can have a CPU of its own, not how many CPUs
// one process may use. Two ranks pinned to one CPU share it, and their waits yield at once.
void pinnedRanks(bool shareOneCpu) {
  const std::vector<int> allowed = conflux::topology::usableCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  RunOptions o;
  o.initComm = false;
  o.env = {"CFX_DEBUG=INFO", "CFX_DEBUG_FILE=/tmp/cfx-topo-coll-%p.log"};
  runRanks(2, [&](Rank& rk) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(allowed[shareOneCpu ? 0 : static_cast<size_t>(rk.rank)], &set);
    ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
    CFX_ASSERT_OK(cfxCommInitFromEnv(&rk.comm));
    const std::string log = readLog();
    const std::string want = shareOneCpu ? "waits: spin 0 polls, then 1000 yields" : "waits: spin 2000 polls, then 8 yields";
    EXPECT_NE(log.find(want), std::string::npos) << "rank " << rk.rank << ": log lacks '" << want << "':\n" << log;
    int spinPolls = -1;
    CFX_ASSERT_OK(cfxCommGetSpin(rk.comm, &spinPolls));
    EXPECT_EQ(spinPolls, shareOneCpu ? 0 : 2000) << "what layered libraries (the PyTorch backend) are told";
    EXPECT_EQ(runCase(rk, CollKind::kAllReduce, cfxFloat32, cfxSum, 100003, false), "");
  }, o);
}

TEST(TopologyBinding, RanksPinnedToCpusOfTheirOwnSpin) { pinnedRanks(false); }
TEST(TopologyBinding, RanksPinnedToOneCpuYield) { pinnedRanks(true); }

}  // namespace
}  // namespace cfxtest
