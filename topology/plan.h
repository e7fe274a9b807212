// The plan: what the topology means for the local ranks of one communicator on one host.
//
//  - Binding (CFX_BIND=none|numa|core; auto: numa when the host has more than one NUMA node
//    with CPUs; on one node, core when every local rank can have a core of its own and nobody
//    narrowed the process's CPUs (a launcher's binding is kept), else none). A rank with a GPU
//    (local rank i takes the i-th GPU by PCI bus id) lives on its GPU's node; the other ranks are
//    spread over the nodes in contiguous blocks. numa: all the node's CPUs; core: the node's
//    physical cores split evenly between its ranks. Unbound ranks that all slept (the
//    application's pause) can come back onto one CPU and stay there until the kernel moves one:
//    2-rank AllGathers of 64 B after a 200 ms pause averaged 14-23 us over their first 2,000
//    calls, 0.7 bound (perf/probes/after_idle.cc; perf/RESULTS.md, 2026-11-29 (seventh)).
//  - Memory: each rank's staging slot on its own node; with a two-level reduction, each domain's
//    partial sums on that domain's node and the cross-domain staging buffer on the node of the
//    NICs the ranks use (hfreduce's placement), or of local rank 0 without NICs.
//  - NIC per rank: InfiniBand/RoCE devices that CFX_IB_HCA allows (unless CFX_NET=tcp), else
//    Ethernet devices that CFX_SOCKET_IFNAME allows; the nearest one (same PCIe root as the rank's
//    GPU, then same NUMA node, then any), spread evenly between equally near ranks.
//  - Reduction: two-level (inside each NUMA domain, then across, in domain order) when the bound
//    local ranks span two or more NUMA nodes; flat otherwise.
// Pure: the same topology, rank count and options give the same plan on every rank.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/name_filter.h"
#include "topology/model.h"

namespace conflux::topology {

enum class Bind { kNone, kNuma, kCore };
const char* bindName(Bind b);

enum class Reduction { kFlat, kTwoLevel };
const char* reductionName(Reduction r);  // "flat", "two-level"

struct PlanOptions {
  std::optional<Bind> bind;  // unset: auto (above)
  // The process may use fewer CPUs than the host has online (a launcher, taskset or a cpuset bound
  // it): auto then binds no one on a one-node host.
  bool cpusNarrowed = false;
  NameFilter ibHca;          // CFX_IB_HCA
  NameFilter socketIfname;   // CFX_SOCKET_IFNAME
  bool rdma = true;          // false with CFX_NET=tcp

  // Throws Error(kInvalidArgument) for a bad CFX_BIND.
  static PlanOptions fromEnv();
};

struct RankPlan {
  int localRank = 0;
  int numa = 0;           // node id
  std::vector<int> cpus;  // to bind to; empty: not bound
  int gpu = -1;           // index into Topology::gpus
  int nic = -1;           // index into Topology::nics
};

struct Plan {
  int localRanks = 0;
  Bind bind = Bind::kNone;
  Reduction reduction = Reduction::kFlat;
  std::vector<RankPlan> ranks;
  // Two-level: the NUMA domains (ascending node id) and their local ranks (ascending).
  std::vector<int> groupNuma;
  std::vector<std::vector<int>> groups;
  int stagingNuma = 0;    // node of the cross-domain staging (scratch) buffer
  bool placeMemory = false;  // multi-node host: segments are placed as above
};

Plan makePlan(const Topology& topo, int localRanks, const PlanOptions& opts);

}  // namespace conflux::topology
