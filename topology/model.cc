#include "topology/model.h"

#include <set>

namespace conflux::topology {

const char* nicKindName(NicKind k) {
  switch (k) {
    case NicKind::kIb: return "ib";
    case NicKind::kRoce: return "roce";
    default: return "eth";
  }
}

int Topology::numaIndex(int id) const {
  for (size_t i = 0; i < numa.size(); ++i) {
    if (numa[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

const NumaNode* Topology::node(int id) const {
  int i = numaIndex(id);
  return i < 0 ? nullptr : &numa[i];
}

int Topology::packageCount() const {
  std::set<int> p;
  for (const auto& n : numa) p.insert(n.package);
  return static_cast<int>(p.size());
}

Topology flatTopology(const std::vector<int>& cpus, const std::string& why) {
  Topology t;
  t.flat = true;
  t.source = "flat (" + why + ")";
  NumaNode n;
  n.cpus = cpus;
  for (int c : cpus) n.cores.push_back({c});
  t.numa.push_back(n);
  return t;
}

std::string cpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace conflux::topology
