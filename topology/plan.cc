#include "topology/plan.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <unistd.h>

#include "common/env.h"
#include "common/error.h"
#include "topology/cpus.h"

namespace conflux::topology {

const char* bindName(Bind b) {
  switch (b) {
    case Bind::kNuma: return "numa";
    case Bind::kCore: return "core";
    default: return "none";
  }
}

const char* reductionName(Reduction r) { return r == Reduction::kTwoLevel ? "two-level" : "flat"; }

PlanOptions PlanOptions::fromEnv() {
  PlanOptions o;
  std::string bind = env::getString("CFX_BIND");
  if (bind == "none") {
    o.bind = Bind::kNone;
  } else if (bind == "numa") {
    o.bind = Bind::kNuma;
  } else if (bind == "core") {
    o.bind = Bind::kCore;
  } else if (!bind.empty() && bind != "auto") {
    throw Error(Status::kInvalidArgument, "CFX_BIND='" + bind + "': expected none, numa or core");
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  o.cpusNarrowed = online > 0 && usableCpus().size() < static_cast<size_t>(online);
  o.ibHca = NameFilter::parse(env::getString("CFX_IB_HCA"));
  o.socketIfname = NameFilter::parse(env::getString("CFX_SOCKET_IFNAME"));
  o.rdma = env::getString("CFX_NET") != "tcp";
  return o;
}

namespace {

// Nodes ranks can live on: those with CPUs.
std::vector<int> cpuNodes(const Topology& t) {
  std::vector<int> out;
  for (const auto& n : t.numa) {
    if (!n.cpus.empty()) out.push_back(n.id);
  }
  return out;
}

void assignNuma(const Topology& t, Plan& p) {
  std::vector<int> nodes = cpuNodes(t);
  const int n = p.localRanks;
  for (int i = 0; i < n; ++i) {
    RankPlan& r = p.ranks[i];
    if (i < static_cast<int>(t.gpus.size())) r.gpu = i;
    int gpuNode = r.gpu >= 0 ? t.gpus[r.gpu].numa : -1;
    if (gpuNode >= 0 && std::find(nodes.begin(), nodes.end(), gpuNode) != nodes.end()) {
      r.numa = gpuNode;
    } else {
      r.numa = nodes[static_cast<size_t>(i) * nodes.size() / n];  // contiguous blocks
    }
  }
}

void assignCpus(const Topology& t, Plan& p) {
  if (p.bind == Bind::kNone) return;
  std::map<int, std::vector<int>> onNode;  // node -> its ranks, ascending
  for (const auto& r : p.ranks) onNode[r.numa].push_back(r.localRank);
  for (const auto& [id, ranks] : onNode) {
    const NumaNode& node = *t.node(id);
    const size_t m = ranks.size(), c = node.cores.size();
    for (size_t k = 0; k < m; ++k) {
      RankPlan& r = p.ranks[ranks[k]];
      if (p.bind == Bind::kNuma) {
        r.cpus = node.cpus;
        continue;
      }
      size_t lo = k * c / m, hi = (k + 1) * c / m;
      if (hi == lo) hi = lo + 1;  // more ranks than cores: ranks share
      for (size_t core = lo; core < hi; ++core) {
        const auto& pus = node.cores[core % c];
        r.cpus.insert(r.cpus.end(), pus.begin(), pus.end());
      }
      std::sort(r.cpus.begin(), r.cpus.end());
    }
  }
}

// CFX_BIND=auto on a host with one NUMA node with CPUs: a core (or more) for each rank when there
// are enough and the process's CPUs are the host's, else none.
Bind autoBindOneNode(const Topology& t, int localRanks, const PlanOptions& o) {
  if (o.cpusNarrowed) return Bind::kNone;
  for (const auto& n : t.numa) {
    if (!n.cpus.empty()) return static_cast<int>(n.cores.size()) >= localRanks ? Bind::kCore : Bind::kNone;
  }
  return Bind::kNone;
}

bool defaultIfaceAllowed(const std::string& name) {
  return name.rfind("lo", 0) != 0 && name.rfind("docker", 0) != 0 && name.rfind("veth", 0) != 0;
}

void assignNics(const Topology& t, const PlanOptions& o, Plan& p) {
  std::vector<int> rdma, eth;
  for (int i = 0; i < static_cast<int>(t.nics.size()); ++i) {
    const Nic& nic = t.nics[i];
    if (nic.kind == NicKind::kEth) {
      if (o.socketIfname.empty() ? defaultIfaceAllowed(nic.name) : o.socketIfname.matches(nic.name)) eth.push_back(i);
    } else if (o.ibHca.empty() || o.ibHca.matches(nic.name)) {
      rdma.push_back(i);
    }
  }
  const std::vector<int>& candidates = o.rdma && !rdma.empty() ? rdma : eth;
  if (candidates.empty()) return;
  std::vector<int> load(t.nics.size(), 0);
  for (auto& r : p.ranks) {
    const Gpu* gpu = r.gpu >= 0 ? &t.gpus[r.gpu] : nullptr;
    auto distance = [&](const Nic& nic) {
      if (gpu != nullptr && !gpu->pciRoot.empty() && gpu->pciRoot == nic.pciRoot) return 0;
      return nic.numa == r.numa ? 1 : 2;
    };
    int best = -1;
    std::tuple<int, int, int> bestKey;
    for (int i : candidates) {
      auto key = std::make_tuple(distance(t.nics[i]), load[i], i);
      if (best < 0 || key < bestKey) {
        best = i;
        bestKey = key;
      }
    }
    r.nic = best;
    ++load[best];
  }
}

void planReduction(const Topology& t, Plan& p) {
  std::map<int, std::vector<int>> byNode;
  for (const auto& r : p.ranks) byNode[r.numa].push_back(r.localRank);
  if (p.bind != Bind::kNone && p.localRanks >= 2 && byNode.size() >= 2) {
    p.reduction = Reduction::kTwoLevel;
    for (auto& [id, ranks] : byNode) {
      p.groupNuma.push_back(id);
      p.groups.push_back(ranks);
    }
  }
  // Staging on the NICs' node (the most used one, lowest id on ties), else local rank 0's.
  std::map<int, int> nicNodes;
  for (const auto& r : p.ranks) {
    if (r.nic >= 0 && t.nics[r.nic].numa >= 0) ++nicNodes[t.nics[r.nic].numa];
  }
  p.stagingNuma = p.ranks.empty() ? 0 : p.ranks[0].numa;
  int most = 0;
  for (const auto& [id, count] : nicNodes) {
    if (count > most) {
      most = count;
      p.stagingNuma = id;
    }
  }
}

}  // namespace

Plan makePlan(const Topology& topo, int localRanks, const PlanOptions& opts) {
  if (localRanks < 1) throw Error(Status::kInvalidArgument, "a plan needs at least one local rank");
  Plan p;
  p.localRanks = localRanks;
  const size_t nodes = cpuNodes(topo).size();
  if (nodes == 0) throw Error(Status::kInvalidArgument, "topology " + topo.source + " has no NUMA node with CPUs");
  p.bind = opts.bind.value_or(nodes > 1 ? Bind::kNuma : autoBindOneNode(topo, localRanks, opts));
  p.placeMemory = !topo.flat && topo.numa.size() > 1;
  p.ranks.resize(localRanks);
  for (int i = 0; i < localRanks; ++i) p.ranks[i].localRank = i;
  assignNuma(topo, p);
  assignCpus(topo, p);
  assignNics(topo, opts, p);
  planReduction(topo, p);
  return p;
}

}  // namespace conflux::topology
