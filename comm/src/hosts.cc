#include "hosts.h"

#include <map>

namespace conflux {

HostMap HostMap::build(const std::vector<std::string>& hostIds) {
  HostMap m;
  std::map<std::string, int> index;
  for (size_t r = 0; r < hostIds.size(); ++r) {
    auto [it, fresh] = index.emplace(hostIds[r], static_cast<int>(m.ranksOn.size()));
    if (fresh) {
      m.ranksOn.emplace_back();
      m.names.push_back(hostIds[r]);
    }
    int h = it->second;
    m.hostOf.push_back(h);
    m.localRankOf.push_back(static_cast<int>(m.ranksOn[h].size()));
    m.ranksOn[h].push_back(static_cast<int>(r));
  }
  return m;
}

bool HostMap::uniform() const {
  for (const auto& r : ranksOn) {
    if (r.size() != ranksOn[0].size()) return false;
  }
  return true;
}

std::string HostMap::describe(int rank) const {
  if (rank < 0 || rank >= nranks()) return "rank " + std::to_string(rank);
  // A host's identity is hostname/boot id/network namespace; the host number already tells
  // apart hosts that share a hostname, so messages show only the hostname.
  std::string name = names[hostOf[rank]].substr(0, names[hostOf[rank]].find('/'));
  if (name.size() > 32) name = name.substr(0, 32) + "...";
  return "rank " + std::to_string(rank) + " (host " + std::to_string(hostOf[rank]) + " '" + name + "')";
}

}  // namespace conflux
