// The topology and a plan as people read them (cfx-topo, CFX_DEBUG=INFO) and as JSON
// (cfx-topo --json):
//   {"source", "numa": [{id, package, memory_bytes, cores}], "gpus": [{name, pci, numa}],
//    "nics": [{name, kind: "ib"|"roce"|"eth", pci, numa, gbps or null}],
//    "plan": {local_ranks, bind, reduction: "flat"|"two-level", groups: [{numa, ranks}],
//             staging_numa, place_memory,
//             ranks: [{local_rank, numa, cores, gpu (PCI bus id) or null, nic (name) or null}]}}
// "cores" are logical CPU numbers, as taskset prints them; a rank's are empty when not bound.
#pragma once

#include <string>
#include <vector>

#include "topology/model.h"
#include "topology/plan.h"

namespace conflux::topology {

std::vector<std::string> describeTopology(const Topology& t);
std::vector<std::string> describePlan(const Topology& t, const Plan& p);
std::string describeRank(const Topology& t, const RankPlan& r);
std::string toJson(const Topology& t, const Plan& p);

}  // namespace conflux::topology
