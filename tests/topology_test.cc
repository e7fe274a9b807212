// The topology layer on the machine shapes of tests/topo/ (hwloc XML files), on this machine, and
// on the flat model: what is found, the plan made for 1 to 8 local ranks (bindings, NUMA nodes,
// GPUs, NICs, the reduction hierarchy and the staging node), the JSON report, and the pieces that
// act on the live machine (binding a thread, placing shared memory, dumping and reloading).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/name_filter.h"
#include "topology/cpus.h"
#include "topology/discover.h"
#include "topology/nic_probe.h"
#include "topology/placement.h"
#include "topology/plan.h"
#include "topology/report.h"
#include "transport/shm/segment.h"

namespace conflux::topology {
namespace {

std::string file(const char* name) { return std::string(CFX_TOPO_DIR) + "/" + name; }

Topology load(const char* name) { return loadHwloc(file(name), ""); }

// Suites that read the XML files need hwloc.
class WithHwloc : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!haveHwloc()) GTEST_SKIP() << "built without hwloc";
  }
};
using TopologyFile = WithHwloc;
using TopologyPlan = WithHwloc;
using TopologyReport = WithHwloc;

std::vector<int> range(int lo, int hi) {  // [lo, hi]
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

PlanOptions defaults() { return PlanOptions{}; }

std::vector<int> rankNuma(const Plan& p) {
  std::vector<int> v;
  for (const auto& r : p.ranks) v.push_back(r.numa);
  return v;
}

std::vector<std::string> rankNics(const Topology& t, const Plan& p) {
  std::vector<std::string> v;
  for (const auto& r : p.ranks) v.push_back(r.nic >= 0 ? t.nics[r.nic].name : "-");
  return v;
}

// (a) Fire-Flyer node: 2 sockets, 8 GPUs, one 200 Gbit/s InfiniBand NIC on socket 0.
TEST_F(TopologyFile, FireFlyerModel) {
  Topology t = load("fireflyer.xml");
  ASSERT_EQ(t.numa.size(), 2u);
  EXPECT_EQ(t.packageCount(), 2);
  EXPECT_EQ(t.numa[0].cpus, range(0, 63));
  EXPECT_EQ(t.numa[1].cpus, range(64, 127));
  EXPECT_EQ(t.numa[0].cores.size(), 32u);
  EXPECT_EQ(t.numa[0].cores[1], (std::vector<int>{2, 3}));
  EXPECT_EQ(t.numa[1].memoryBytes, uint64_t{256} << 30);
  ASSERT_EQ(t.gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(t.gpus[i].numa, i < 4 ? 0 : 1) << i;
  EXPECT_EQ(t.gpus[0].pci, "0000:11:00.0");
  EXPECT_EQ(t.gpus[0].name, "GA100 [A100 PCIe 40GB]");
  EXPECT_EQ(t.gpus[0].pciRoot, t.gpus[1].pciRoot);  // a pair per PCIe switch
  EXPECT_NE(t.gpus[1].pciRoot, t.gpus[2].pciRoot);
  ASSERT_EQ(t.nics.size(), 2u);  // the IPoIB interface is not counted twice
  EXPECT_EQ(t.nics[0].name, "mlx5_0");
  EXPECT_EQ(t.nics[0].kind, NicKind::kIb);
  EXPECT_EQ(t.nics[0].numa, 0);
  EXPECT_EQ(t.nics[0].gbps, 200.0);
  EXPECT_EQ(t.nics[1].name, "eno1");
  EXPECT_EQ(t.nics[1].kind, NicKind::kEth);
  EXPECT_EQ(t.nics[1].gbps, 1.0);
}

TEST_F(TopologyPlan, FireFlyerEightRanks) {
  Topology t = load("fireflyer.xml");
  Plan p = makePlan(t, 8, defaults());
  EXPECT_EQ(p.bind, Bind::kNuma);
  EXPECT_EQ(rankNuma(p), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(p.ranks[i].gpu, i);
    EXPECT_EQ(p.ranks[i].cpus, i < 4 ? range(0, 63) : range(64, 127)) << i;
  }
  // One InfiniBand NIC: every rank uses it, and the staging buffers sit on its node.
  EXPECT_EQ(rankNics(t, p), std::vector<std::string>(8, "mlx5_0"));
  EXPECT_EQ(p.reduction, Reduction::kTwoLevel);
  EXPECT_EQ(p.groupNuma, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.groups, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(p.stagingNuma, 0);
  EXPECT_TRUE(p.placeMemory);
}

TEST_F(TopologyPlan, FireFlyerNicChoiceFollowsNetAndFilters) {
  Topology t = load("fireflyer.xml");
  PlanOptions tcp;
  tcp.rdma = false;  // CFX_NET=tcp: Ethernet devices only
  EXPECT_EQ(rankNics(t, makePlan(t, 2, tcp)), (std::vector<std::string>{"eno1", "eno1"}));
  PlanOptions noIb;
  noIb.ibHca = NameFilter::parse("^mlx5");  // no RDMA device left: falls back to Ethernet
  EXPECT_EQ(rankNics(t, makePlan(t, 2, noIb)), (std::vector<std::string>{"eno1", "eno1"}));
  PlanOptions noEth = noIb;
  noEth.socketIfname = NameFilter::parse("=eth0");  // nothing matches: no NIC
  EXPECT_EQ(rankNics(t, makePlan(t, 2, noEth)), (std::vector<std::string>{"-", "-"}));
}

TEST_F(TopologyPlan, FireFlyerCoreBinding) {
  Topology t = load("fireflyer.xml");
  PlanOptions o;
  o.bind = Bind::kCore;
  Plan p = makePlan(t, 8, o);  // 32 cores per node, 4 ranks per node: 8 cores (16 CPUs) each
  EXPECT_EQ(p.ranks[0].cpus, range(0, 15));
  EXPECT_EQ(p.ranks[3].cpus, range(48, 63));
  EXPECT_EQ(p.ranks[4].cpus, range(64, 79));
  EXPECT_EQ(p.reduction, Reduction::kTwoLevel);
  o.bind = Bind::kNone;  // unbound ranks: no NUMA domains to reduce in
  p = makePlan(t, 8, o);
  EXPECT_TRUE(p.ranks[0].cpus.empty());
  EXPECT_EQ(p.reduction, Reduction::kFlat);
  EXPECT_TRUE(p.groups.empty());
}

// (b) DGX-like: 8 GPUs and 8 InfiniBand NICs, a GPU pair and a NIC pair per PCIe switch.
TEST_F(TopologyPlan, DgxOneNicPerGpu) {
  Topology t = load("dgx.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 9u);  // 8 InfiniBand + 1 Ethernet
  Plan p = makePlan(t, 8, defaults());
  EXPECT_EQ(rankNics(t, p), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5",
                                                      "mlx5_6", "mlx5_7"}));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(t.gpus[p.ranks[i].gpu].pciRoot, t.nics[p.ranks[i].nic].pciRoot) << i;
  EXPECT_EQ(p.reduction, Reduction::kTwoLevel);
  EXPECT_EQ(p.groups, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(p.stagingNuma, 0);  // NICs split 4/4: the lower node
  EXPECT_EQ(p.ranks[5].cpus, range(128, 255));
}

TEST_F(TopologyPlan, DgxFourRanksStayOnOneSocket) {
  Topology t = load("dgx.xml");
  Plan p = makePlan(t, 4, defaults());  // GPUs 0-3 all hang off socket 0
  EXPECT_EQ(rankNuma(p), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(p.reduction, Reduction::kFlat);
  EXPECT_EQ(rankNics(t, p), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
  Plan five = makePlan(t, 5, defaults());
  EXPECT_EQ(five.reduction, Reduction::kTwoLevel);
  EXPECT_EQ(five.groups, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4}}));
  EXPECT_EQ(five.stagingNuma, 0);  // four NICs on node 0, one on node 1
}

TEST_F(TopologyPlan, DgxIbHcaSyntax) {
  Topology t = load("dgx.xml");
  PlanOptions o;
  o.ibHca = NameFilter::parse("mlx5_0:1,mlx5_4:1");  // NCCL_IB_HCA style, ports ignored
  EXPECT_EQ(rankNics(t, makePlan(t, 8, o)),
            (std::vector<std::string>{"mlx5_0", "mlx5_0", "mlx5_0", "mlx5_0", "mlx5_4", "mlx5_4", "mlx5_4", "mlx5_4"}));
  o.ibHca = NameFilter::parse("^mlx5_0");  // rank 0 takes its switch's other NIC
  EXPECT_EQ(rankNics(t, makePlan(t, 2, o)), (std::vector<std::string>{"mlx5_1", "mlx5_1"}));
  o.ibHca = NameFilter::parse("=mlx5_7");
  EXPECT_EQ(rankNics(t, makePlan(t, 3, o)), (std::vector<std::string>{"mlx5_7", "mlx5_7", "mlx5_7"}));
  o.ibHca = NameFilter::parse("=mlx5");  // exact: matches nothing, so Ethernet
  EXPECT_EQ(rankNics(t, makePlan(t, 1, o)), (std::vector<std::string>{"enp112s0"}));
}

// (c) One socket, no GPU, no RDMA device: the development VM's own hwloc XML.
TEST_F(TopologyPlan, SingleSocketIsFlat) {
  Topology t = load("single.xml");
  ASSERT_EQ(t.numa.size(), 1u);
  EXPECT_TRUE(t.gpus.empty());
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].kind, NicKind::kEth);
  EXPECT_FALSE(t.nics[0].gbps.has_value());
  ASSERT_EQ(t.numa[0].cores.size(), 2u);
  PlanOptions narrowed = defaults();
  narrowed.cpusNarrowed = true;  // a launcher or taskset bound the process
  for (int n = 1; n <= 8; ++n) {
    for (const PlanOptions& o : {defaults(), narrowed}) {
      Plan p = makePlan(t, n, o);
      // auto: a core of its own for each rank while there are enough, unless the process's CPUs
      // were narrowed; more ranks than cores share them unbound.
      const bool core = n <= 2 && !o.cpusNarrowed;
      EXPECT_EQ(p.bind, core ? Bind::kCore : Bind::kNone) << n << " ranks";
      EXPECT_EQ(p.reduction, Reduction::kFlat);
      EXPECT_FALSE(p.placeMemory);
      for (const auto& r : p.ranks) {
        const std::vector<int> want = !core ? std::vector<int>{} : n == 1 ? t.numa[0].cpus : t.numa[0].cores[r.localRank];
        EXPECT_EQ(r.cpus, want) << n << " ranks, local rank " << r.localRank;
        EXPECT_EQ(r.numa, 0);
        EXPECT_EQ(r.gpu, -1);
        EXPECT_EQ(t.nics[r.nic].name, "eth0");
      }
    }
  }
}

// (d) Four NUMA nodes, no devices: ranks in contiguous blocks, staging with local rank 0.
TEST_F(TopologyPlan, FourNumaNodes) {
  Topology t = load("numa4.xml");
  ASSERT_EQ(t.numa.size(), 4u);
  EXPECT_EQ(t.packageCount(), 2);
  EXPECT_EQ(t.numa[3].cpus, range(48, 63));
  EXPECT_EQ(rankNuma(makePlan(t, 8, defaults())), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(rankNuma(makePlan(t, 6, defaults())), (std::vector<int>{0, 0, 1, 2, 2, 3}));
  EXPECT_EQ(rankNuma(makePlan(t, 3, defaults())), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(rankNuma(makePlan(t, 2, defaults())), (std::vector<int>{0, 2}));
  Plan p = makePlan(t, 5, defaults());
  EXPECT_EQ(p.groups, (std::vector<std::vector<int>>{{0, 1}, {2}, {3}, {4}}));
  EXPECT_EQ(p.groupNuma, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(p.stagingNuma, 0);
  EXPECT_EQ(p.ranks[2].nic, -1);
  EXPECT_EQ(makePlan(t, 1, defaults()).reduction, Reduction::kFlat);
  PlanOptions core;
  core.bind = Bind::kCore;
  Plan c = makePlan(t, 8, core);  // 8 cores per node, 2 ranks per node
  EXPECT_EQ(c.ranks[0].cpus, range(0, 7));
  EXPECT_EQ(c.ranks[1].cpus, range(8, 15));
  EXPECT_EQ(c.ranks[7].cpus, range(56, 63));
}

TEST_F(TopologyPlan, MoreRanksThanCoresShare) {
  Topology t = flatTopology({0, 1}, "test");
  PlanOptions core;
  core.bind = Bind::kCore;
  Plan p = makePlan(t, 5, core);
  EXPECT_EQ(p.ranks[0].cpus, (std::vector<int>{0}));
  EXPECT_EQ(p.ranks[2].cpus, (std::vector<int>{0}));  // floor(2*2/5) = 0
  EXPECT_EQ(p.ranks[4].cpus, (std::vector<int>{1}));
  EXPECT_EQ(p.reduction, Reduction::kFlat);
  EXPECT_FALSE(p.placeMemory);
  EXPECT_THROW(makePlan(t, 0, core), Error);
}

TEST_F(TopologyReport, Json) {
  Topology t = load("fireflyer.xml");
  std::string j = toJson(t, makePlan(t, 8, defaults()));
  for (const char* want : {"\"numa\":[{\"id\":0,\"package\":0,", "\"gpus\":[{\"name\":\"GA100 [A100 PCIe 40GB]\",\"pci\":\"0000:11:00.0\",\"numa\":0}",
                           "{\"name\":\"mlx5_0\",\"kind\":\"ib\",\"pci\":\"0000:50:00.0\",\"numa\":0,\"gbps\":200}",
                           "\"plan\":{\"local_ranks\":8,\"bind\":\"numa\",\"reduction\":\"two-level\"",
                           "{\"local_rank\":7,\"numa\":1,\"cores\":[64,65,", "\"gpu\":\"0000:a2:00.0\",\"nic\":\"mlx5_0\"}"}) {
    EXPECT_NE(j.find(want), std::string::npos) << want << "\n" << j;
  }
  Topology d = load("numa4.xml");
  std::string k = toJson(d, makePlan(d, 2, defaults()));
  EXPECT_NE(k.find("\"gpus\":[],\"nics\":[]"), std::string::npos) << k;
  EXPECT_NE(k.find("\"gpu\":null,\"nic\":null"), std::string::npos) << k;
  auto lines = describePlan(t, makePlan(t, 8, defaults()));
  EXPECT_NE(lines[0].find("two-level (NUMA 0: ranks 0,1,2,3; NUMA 1: ranks 4,5,6,7)"), std::string::npos) << lines[0];
}

TEST(TopologyDiscover, BadFileIsAClearError) {
  if (!haveHwloc()) GTEST_SKIP() << "built without hwloc";
  setenv("CFX_TOPO_FILE", "/nonexistent/topo.xml", 1);
  try {
    discover();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("CFX_TOPO_FILE=/nonexistent/topo.xml"), std::string::npos) << e.what();
  }
  unsetenv("CFX_TOPO_FILE");
  setenv("CFX_BIND", "socket", 1);
  EXPECT_THROW(PlanOptions::fromEnv(), Error);
  unsetenv("CFX_BIND");
}

// The live machine, dumped and loaded back: the same model (CPUs, nodes, NICs and their speeds).
TEST(TopologyDiscover, DumpLoadsBack) {
  if (!haveHwloc()) GTEST_SKIP() << "built without hwloc";
  std::string path = "/tmp/cfx-topo-dump-" + std::to_string(getpid()) + ".xml";
  Topology live = loadHwloc("", path);
  Topology back = loadHwloc(path, "");
  std::remove(path.c_str());
  ASSERT_EQ(live.numa.size(), back.numa.size());
  for (size_t i = 0; i < live.numa.size(); ++i) EXPECT_EQ(live.numa[i].cpus, back.numa[i].cpus);
  ASSERT_EQ(live.nics.size(), back.nics.size());
  for (size_t i = 0; i < live.nics.size(); ++i) {
    EXPECT_EQ(live.nics[i].name, back.nics[i].name);
    EXPECT_EQ(live.nics[i].kind, back.nics[i].kind);
    EXPECT_EQ(live.nics[i].gbps, back.nics[i].gbps);
  }
  EXPECT_EQ(live.gpus.size(), back.gpus.size());
  // The live model's CPUs are the machine's (this process may use a subset of them).
  size_t cpus = 0;
  for (const auto& n : live.numa) cpus += n.cpus.size();
  EXPECT_GE(cpus, usableCpus().size());
}

TEST(TopologyNames, NcclSyntaxWithPorts) {
  NameFilter f = NameFilter::parse("mlx5_0:1,mlx5_2");
  EXPECT_TRUE(f.matches("mlx5_0"));
  EXPECT_TRUE(f.matches("mlx5_2"));
  EXPECT_TRUE(f.matches("mlx5_21"));  // prefix
  EXPECT_FALSE(f.matches("mlx5_1"));
  NameFilter e = NameFilter::parse("^=mlx5_0:1");
  EXPECT_FALSE(e.matches("mlx5_0"));
  EXPECT_TRUE(e.matches("mlx5_01"));
}

TEST(TopologyNames, InfiniBandRates) {
  EXPECT_EQ(ibRateGbps(64, 2), 200.0);   // HDR 4x
  EXPECT_EQ(ibRateGbps(32, 2), 100.0);   // EDR 4x
  EXPECT_EQ(ibRateGbps(128, 2), 400.0);  // NDR 4x
  EXPECT_EQ(ibRateGbps(64, 16), 100.0);  // HDR 2x
  EXPECT_FALSE(ibRateGbps(3, 2).has_value());
}

// Binding acts on the calling thread only, and only on CPUs this process may use.
TEST(TopologyPlacement, BindsTheCallingThread) {
  std::vector<int> before = usableCpus();
  std::vector<int> inside;
  BindResult r, none;
  std::thread([&] {
    r = bindCallingThread({before.front(), 100000});
    inside = usableCpus();
    none = bindCallingThread({100000});
  }).join();
  EXPECT_EQ(r.cpus, std::vector<int>{before.front()});
  EXPECT_NE(r.note.find("only"), std::string::npos) << r.note;
  EXPECT_EQ(inside, std::vector<int>{before.front()});
  EXPECT_TRUE(none.cpus.empty());
  EXPECT_NE(none.note.find("not bound"), std::string::npos) << none.note;
  EXPECT_EQ(usableCpus(), before);  // this thread is untouched
}

// Whether local ranks can each have a CPU, from the CPUs each may run on: a matching, so ranks
// pinned one per core qualify (mpirun's --bind-to core), while ranks sharing one core do not,
// however many CPUs the others leave free.
TEST(TopologyCpus, EachRankHasItsOwnCpuOnlyWhenAMatchingExists) {
  using V = std::vector<std::vector<int>>;
  EXPECT_TRUE(eachHasOwnCpu(V{}));
  EXPECT_TRUE(eachHasOwnCpu(V{{0, 1}, {0, 1}}));        // unbound, 2 ranks on 2 CPUs
  EXPECT_FALSE(eachHasOwnCpu(V{{0, 1}, {0, 1}, {0, 1}}));  // 3 on 2
  EXPECT_TRUE(eachHasOwnCpu(V{{0}, {1}}));              // pinned one per core
  EXPECT_FALSE(eachHasOwnCpu(V{{1}, {1}}));             // both on one core
  EXPECT_FALSE(eachHasOwnCpu(V{{0}, {0}, {1, 2, 3}}));  // enough CPUs, but two ranks share one
  EXPECT_TRUE(eachHasOwnCpu(V{{0, 1}, {0}}));           // needs the first to move over
  EXPECT_TRUE(eachHasOwnCpu(V{{0, 1, 2}, {1, 2}, {2}, {3, 7}}));
  EXPECT_FALSE(eachHasOwnCpu(V{{0}, {}}));              // a rank with no CPU
  // Another process's CPUs read the same as this one's own.
  EXPECT_EQ(cpusOf(getpid()), usableCpus());
}

// Shared memory placed before its pages exist lands on the node asked for.
TEST(TopologyPlacement, SegmentPagesOnTheNode) {
  if (!haveLibnuma()) GTEST_SKIP() << "built without libnuma";
  std::string why7;
  std::string why0 = "not called";
  auto seg = shm::Segment::create("cfx-topo-test-" + std::to_string(getpid()), 1 << 20, [&](std::byte* base) {
    why0 = preferNode(base, 1 << 20, 0);
    why7 = preferNode(base, 1 << 20, 4095);
  });
  seg.unlink();
  EXPECT_EQ(why0, "");
  EXPECT_NE(why7.find("not on this machine"), std::string::npos) << why7;
  seg.data()[4096] = std::byte{1};
  EXPECT_EQ(nodeOfPage(seg.data() + 4096), 0);
}

// Rss (bytes) of this process's mapping that starts at `base`, from /proc/self/smaps; -1 if absent.
long mappedBytes(const void* base) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  while (std::getline(smaps, line)) {
    const std::string first = line.substr(0, line.find(' '));
    if (!first.empty() && first.back() != ':') {  // a mapping's header: "start-end perms ..."
      in = std::strtoull(first.c_str(), nullptr, 16) == reinterpret_cast<uintptr_t>(base);
    } else if (in && first == "Rss:") {
      return std::atol(line.c_str() + 4) * 1024;
    }
  }
  return -1;
}

// A segment's pages map into a process at once when asked (the communicator's control blocks, so
// its first calls take no page faults), and keep what another process wrote into them.
TEST(SharedSegment, PrefaultMapsThePagesAndKeepsTheirContents) {
  const std::string name = "cfx-prefault-test-" + std::to_string(getpid());
  auto writer = shm::Segment::create(name, 1 << 20);
  auto reader = shm::Segment::open(name);  // a second mapping: none of its pages mapped yet
  writer.unlink();
  writer.data()[5 * 4096 + 7] = std::byte{42};
  const long before = mappedBytes(reader.data());
  ASSERT_GE(before, 0) << "no mapping at the reader's address in /proc/self/smaps";
  ASSERT_LT(before, 64 << 10);
  if (!reader.prefault(4096, (1 << 20) - 4096)) GTEST_SKIP() << "MADV_POPULATE_WRITE unsupported (Linux < 5.14)";
  EXPECT_GE(mappedBytes(reader.data()), (1 << 20) - 4096);
  EXPECT_EQ(reader.data()[5 * 4096 + 7], std::byte{42});
  EXPECT_EQ(reader.data()[5 * 4096 + 8], std::byte{0});
  EXPECT_TRUE(reader.prefault(0, 0));            // nothing to do
  EXPECT_TRUE(reader.prefault(1 << 19, 1 << 30));  // clipped to the segment
}

}  // namespace
}  // namespace conflux::topology
